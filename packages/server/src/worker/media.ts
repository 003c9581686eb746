/**
 * Media prompts, on the engine thread: `image_url` and `input_audio` parts -> bytes (`data:` URLs,
 * base64 audio, or files inside the `--allow-local-files` folder), decoded (sharp for images, the
 * WAV reader for audio) and run through the model's vision / audio tower; the conversation is
 * rendered with one placeholder per part and the soft tokens replace those rows. Every failure is an
 * MlxcelError whose `param` names the content part (`messages[1].content[0]`), answered with a 400.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  MlxcelError, audioChatPrompt, audioClip, decodeImage, imagePrompt,
  type ChatMessage, type GenerateOptions, type LoadedModel,
} from '@mlxcel/engine';
import type { MediaMessage, MediaPart } from './protocol.js';

/** Largest image accepted (width × height, read from the header before any pixel is decoded). */
export const MAX_IMAGE_PIXELS = 4096 * 4096;
/** Largest local file read for an image_url path. */
export const MAX_LOCAL_FILE_BYTES = 64 * 1024 * 1024;

export interface MediaPrompt {
  ids: Int32Array;
  overrides: NonNullable<GenerateOptions['embeddingOverrides']>;
  /** Image placeholder runs a prefill chunk must not split. */
  spans: GenerateOptions['atomicSpans'];
  /** Gemma 3n: generated ids in the vision vocabulary take the embedder's hard path. */
  decodeEmbedding?: GenerateOptions['decodeEmbedding'];
}

const fieldError = (code: string, param: string, message: string) => Object.assign(new MlxcelError(code, message), { param });

/** Runs `f`, naming `param` on any error it throws (unless it names one already). */
async function at<T>(param: string, f: () => T | Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof Error && (e as { param?: unknown }).param === undefined) Object.assign(e, { param });
    throw e;
  }
}

/** Strict base64 (standard or URL-safe alphabet, whitespace ignored): Buffer.from would skip bad characters silently. */
function base64Bytes(data: string, where: string, what: string): Uint8Array {
  const clean = data.replace(/\s+/g, '');
  if (clean.length === 0) throw fieldError('BAD_BASE64', where, `${where}: the ${what} is empty`);
  if (clean.length % 4 === 1 || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean))
    throw fieldError('BAD_BASE64', where, `${where}: the ${what} is not valid base64`);
  const b = Buffer.from(clean, 'base64');
  return new Uint8Array(b.buffer, b.byteOffset, b.length);
}

/**
 * A path or file: URL inside `root` (resolved; symlinks followed and checked again), a regular file,
 * at most MAX_LOCAL_FILE_BYTES. Relative paths are taken from `root`.
 */
function localFile(url: string, where: string, root: string | undefined): Uint8Array {
  if (!root)
    throw fieldError('LOCAL_FILE_REFUSED', where, `${where}: local image files are refused; send the image as a data: URL (a server started with --allow-local-files DIR reads files inside DIR)`);
  let path: string;
  try {
    path = url.startsWith('file:') ? fileURLToPath(url) : url;
  } catch {
    throw fieldError('BAD_IMAGE_URL', where, `${where}: ${JSON.stringify(url.slice(0, 80))} is not a valid file: URL`);
  }
  const inside = (p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
  const full = resolve(root, isAbsolute(path) ? path : `./${path}`);
  // The lexical check first, so nothing outside the folder is even looked at.
  if (!inside(full)) throw fieldError('LOCAL_FILE_REFUSED', where, `${where}: ${path} is outside the folder local files may come from (--allow-local-files)`);
  let real: string;
  try {
    real = realpathSync(full);
  } catch {
    throw fieldError('FILE_MISSING', where, `${where}: ${path}: no such file in the local files folder`);
  }
  if (!inside(real)) throw fieldError('LOCAL_FILE_REFUSED', where, `${where}: ${path} links outside the folder local files may come from (--allow-local-files)`);
  const st = statSync(real);
  if (!st.isFile()) throw fieldError('LOCAL_FILE_REFUSED', where, `${where}: ${path} is not a regular file`);
  if (st.size > MAX_LOCAL_FILE_BYTES) throw fieldError('IMAGE_TOO_LARGE', where, `${where}: ${path} is ${st.size} bytes, more than the ${MAX_LOCAL_FILE_BYTES} allowed`);
  return readFileSync(real);
}

/** The bytes an image_url names: a base64 data: URL, or a local file where allowed; remote URLs never. */
function imageBytes(url: string, where: string, allowLocalFiles: string | undefined): Uint8Array {
  if (/^https?:/i.test(url)) throw fieldError('REMOTE_URL_REFUSED', where, `${where}: remote image URLs are not fetched by this server; send the image as a data: URL`);
  if (url.startsWith('data:')) {
    const comma = url.indexOf(',');
    if (comma < 0 || !/;base64$/i.test(url.slice(5, comma)))
      throw fieldError('BAD_IMAGE_URL', where, `${where}: only base64 data: URLs are accepted (data:image/png;base64,...)`);
    return base64Bytes(url.slice(comma + 1), where, 'data: URL');
  }
  return localFile(url, where, allowLocalFiles);
}

export async function prepareMediaPrompt(loaded: LoadedModel, messages: readonly MediaMessage[], opts: { allowLocalFiles?: string }): Promise<MediaPrompt> {
  const clips: ReturnType<typeof audioClip>[] = [];
  const where: string[] = [];
  let images = 0;
  const out: ChatMessage[] = [];
  for (const m of messages) {
    if (typeof m.content === 'string') {
      out.push(m as ChatMessage);
      continue;
    }
    const content: ChatMessage['content'] = [];
    for (const p of m.content as MediaPart[]) {
      if (p.type === 'text') content.push({ type: 'text', text: p.text });
      else if (p.type === 'image') {
        // Decoded part by part so that a bad image is named; the processor then takes the pixels.
        const bytes = await at(p.where, () => imageBytes(p.url, p.where, opts.allowLocalFiles));
        const rgb = await at(p.where, () => decodeImage(bytes, { maxPixels: MAX_IMAGE_PIXELS }));
        content.push({ type: 'image', image: { data: rgb.data, width: rgb.width, height: rgb.height, channels: 3 } } as never);
        where.push(p.where);
        images++;
      } else {
        const bytes = base64Bytes(p.data, p.where, 'audio data');
        clips.push(await at(p.where, () => audioClip(loaded, bytes)));
        content.push({ type: 'audio' } as never);
        where.push(p.where);
      }
    }
    out.push({ ...(m as Omit<MediaMessage, 'content'>), content } as ChatMessage);
  }
  // Errors of the prompt as a whole (placeholders, processor limits) name the part when there is one.
  const param = where.length === 1 ? where[0]! : 'messages';
  if (images) {
    const ip = await at(param, () => imagePrompt(loaded, out, { allowLocalFiles: false }));
    return { ids: ip.ids, overrides: ip.overrides, spans: ip.spans, decodeEmbedding: ip.decodeEmbedding };
  }
  const ap = await at(param, () => audioChatPrompt(loaded, out, clips));
  return { ids: ap.ids, overrides: ap.overrides, spans: undefined };
}
