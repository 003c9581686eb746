// Builds the chat page (webui/src) into static files in dist/webui/: index.html plus content-hashed
// assets (app-<hash>.js, app-<hash>.css, favicon.svg). Hashed names let the server cache assets forever while
// index.html is revalidated on every load. Runs after tsup (which empties dist/).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'webui');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'src', 'main.ts'), style: join(here, 'src', 'styles.css') },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  outdir: out,
  entryNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'eof',
  logLevel: 'warning',
});

// Map each entry to its hashed output name, then substitute them into the HTML template.
const names = {};
for (const [file, meta] of Object.entries(result.metafile.outputs)) {
  if (meta.entryPoint) names[basename(meta.entryPoint)] = basename(file);
}
let html = readFileSync(join(here, 'index.html'), 'utf8');
html = html.replace('%APP_JS%', names['main.ts']).replace('%APP_CSS%', names['styles.css']);
if (html.includes('%')) throw new Error('webui/index.html: unreplaced %PLACEHOLDER% after build');
writeFileSync(join(out, 'index.html'), html);
copyFileSync(join(here, 'favicon.svg'), join(out, 'favicon.svg'));

const sizes = Object.entries(result.metafile.outputs).map(([f, m]) => `${basename(f)} ${(m.bytes / 1024).toFixed(1)} KiB`);
console.log(`[webui] ${sizes.join(', ')}`);
