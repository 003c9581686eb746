/**
 * The built-in web UI, when this build has one: `webui.ts` (a separate module) exports
 * `webuiResponse(pathname)`. The import is by a computed specifier so that a build without the module
 * still bundles and runs; it then serves no page (GET / is a 404).
 */
export interface WebuiPage {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}
export type WebuiHandler = (pathname: string) => WebuiPage | null;

export async function loadWebui(): Promise<WebuiHandler | null> {
  const specifier = './webui.js';
  try {
    const mod = (await import(/* @vite-ignore */ specifier)) as { webuiResponse?: WebuiHandler };
    return typeof mod.webuiResponse === 'function' ? mod.webuiResponse : null;
  } catch (e) {
    const err = e as { code?: string; message?: string };
    if (err.code === 'ERR_MODULE_NOT_FOUND' && err.message?.includes('webui')) return null;
    throw e;
  }
}
