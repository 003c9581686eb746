/**
 * The chat page's static files (built from webui/ into dist/webui/ by webui/build.mjs) and the HTTP
 * headers they are served with. The page talks to the server only through the public API, so serving it
 * is just answering GET / and its assets; every other path returns null for the caller's own routing.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface WebuiResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Everything the page may load comes from this origin; no inline scripts or styles, no plugins, no
 * framing. connect-src 'self' is what the page's fetch() calls to /v1 and /health need; img-src allows
 * the favicon and data: URLs, for the thumbnails of images the user attached (model output never
 * becomes an <img>: the Markdown renderer writes images as text).
 */
export const WEBUI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': WEBUI_CSP,
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** Built output next to the bundled dist/index.js; from src/ (tests running the source) it is ../dist/webui. */
function webuiDir(): string | null {
  for (const rel of ['./webui/', '../dist/webui/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(dir, 'index.html'))) return dir;
  }
  return null;
}

interface Asset {
  body: Buffer;
  contentType: string;
  cacheControl: string;
}

let assets: Map<string, Asset> | null = null;

/** Reads the built files once. Only names listed in the build folder are ever served (no path joins on request input). */
function loadAssets(): Map<string, Asset> {
  if (assets) return assets;
  const found = new Map<string, Asset>();
  const dir = webuiDir();
  if (dir) {
    for (const name of readdirSync(dir)) {
      const contentType = CONTENT_TYPES[extname(name)];
      if (!contentType) continue;
      // index.html names the current hashed assets, so it must be revalidated; hashed files never change.
      const hashed = /-[A-Z0-9]{8,}\.(js|css)$/i.test(name);
      const cacheControl = name === 'index.html' ? 'no-cache' : hashed ? 'public, max-age=31536000, immutable' : 'public, max-age=3600';
      found.set(`/${name}`, { body: readFileSync(join(dir, name)), contentType, cacheControl });
    }
  }
  assets = found;
  return found;
}

/**
 * The response for a chat-page path: `/` (and `/index.html`) is the page, `/<asset>` its built files;
 * null for any other path (and for every path when the page was not built). Method handling (GET/HEAD)
 * is the caller's.
 */
export function webuiResponse(pathname: string): WebuiResponse | null {
  const files = loadAssets();
  const asset = files.get(pathname === '/' ? '/index.html' : pathname);
  if (!asset) return null;
  return {
    status: 200,
    headers: {
      ...SECURITY_HEADERS,
      'content-type': asset.contentType,
      'content-length': String(asset.body.length),
      'cache-control': asset.cacheControl,
    },
    body: asset.body,
  };
}
