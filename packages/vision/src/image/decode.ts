/**
 * Image bytes -> 8-bit RGB pixels, through sharp (libvips): PNG, JPEG, WebP (and whatever else the
 * bundled libvips reads), EXIF orientation applied, alpha composited on white (what transformers'
 * `convert_to_rgb` does before every processor: paste the RGBA image onto a white canvas), palette and
 * grey images expanded to RGB. The header is read first, so a bad or huge file fails before any pixel
 * is decoded.
 */
import { readFileSync, statSync } from 'node:fs';
import { MlxcelError } from '@mlxcel/tensor';
import sharp, { type Metadata } from 'sharp';

/** Decoded pixels, row-major [height, width, 3], R G B. */
export interface RgbImage {
  data: Uint8Array;
  width: number;
  height: number;
}

/** Raw pixels from the caller: [height, width, channels] bytes, channels 1 (grey), 3 (RGB) or 4 (RGBA). */
export interface RawPixels {
  data: Uint8Array;
  width: number;
  height: number;
  channels: 1 | 3 | 4;
}

/** Anything the processors accept: a file path, encoded bytes, or raw pixels. */
export type ImageSource = string | Uint8Array | RawPixels;

export interface DecodeOptions {
  /** Largest width × height accepted (checked on the header before decoding). Default 2^28 (16384²). */
  maxPixels?: number;
}

export const DEFAULT_MAX_PIXELS = 2 ** 28;

function fail(where: string, what: string): never {
  throw new MlxcelError('E_IMAGE', `${where}: ${what}`);
}

function isRaw(src: ImageSource): src is RawPixels {
  return typeof src === 'object' && !(src instanceof Uint8Array) && 'data' in src;
}

/** Raw pixels as RGB (grey replicated, alpha composited on white with rounding, as Pillow's paste does). */
export function rawToRgb(src: RawPixels, where = 'raw pixels'): RgbImage {
  const { width: w, height: h, channels: c, data } = src;
  if (!Number.isInteger(w) || !Number.isInteger(h) || w <= 0 || h <= 0) fail(where, `width and height must be positive integers, got ${w} x ${h}`);
  if (c !== 1 && c !== 3 && c !== 4) fail(where, `channels must be 1, 3 or 4, got ${String(c)}`);
  if (!(data instanceof Uint8Array)) fail(where, 'data must be a Uint8Array');
  if (data.length !== w * h * c) fail(where, `data has ${data.length} bytes, ${h} x ${w} x ${c} needs ${w * h * c}`);
  if (c === 3) return { data, width: w, height: h };
  const out = new Uint8Array(w * h * 3);
  for (let i = 0; i < w * h; i++) {
    if (c === 1) {
      out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = data[i]!;
      continue;
    }
    const a = data[4 * i + 3]!;
    for (let k = 0; k < 3; k++) out[3 * i + k] = Math.floor((data[4 * i + k]! * a + 255 * (255 - a) + 127) / 255);
  }
  return { data: out, width: w, height: h };
}

/** Decodes an image file, encoded bytes, or raw pixels to RGB. */
export async function decodeImage(src: ImageSource, opts: DecodeOptions = {}): Promise<RgbImage> {
  if (isRaw(src)) return rawToRgb(src);
  const maxPixels = opts.maxPixels ?? DEFAULT_MAX_PIXELS;
  let bytes: Uint8Array;
  let where: string;
  if (typeof src === 'string') {
    where = src;
    let size: number;
    try {
      size = statSync(src).size;
    } catch (e) {
      fail(where, `cannot read image file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    if (size === 0) fail(where, 'the image file is empty (0 bytes)');
    try {
      bytes = readFileSync(src);
    } catch (e) {
      fail(where, `cannot read image file (${(e as Error).message})`);
    }
  } else if (src instanceof Uint8Array) {
    where = '<image bytes>';
    bytes = src;
    if (bytes.length === 0) fail(where, 'no image data (0 bytes)');
  } else {
    fail('image', 'expected a file path, a Uint8Array/Buffer of encoded bytes, or { data, width, height, channels }');
  }
  // Header only: format and size, without decoding pixels.
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (e) {
    fail(where, `not a readable image (${(e as Error).message}); supported: PNG, JPEG, WebP, GIF, TIFF, AVIF`);
  }
  const w = meta.width ?? 0, h = meta.height ?? 0;
  if (!(w > 0 && h > 0)) fail(where, `the image header gives no size (${w} x ${h})`);
  if (w * h > maxPixels)
    fail(where, `the image is ${w} x ${h} = ${w * h} pixels, more than the ${maxPixels}-pixel limit (set maxPixels to accept it)`);
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error' })
      .rotate() // EXIF orientation
      .flatten({ background: { r: 255, g: 255, b: 255 } })
      .toColourspace('srgb')
      .removeAlpha()
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) fail(where, `decoded to ${info.channels} channels, expected 3`);
    return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
  } catch (e) {
    if (e instanceof MlxcelError) throw e;
    fail(where, `cannot decode the image (${(e as Error).message}); the file may be truncated or corrupt`);
  }
}
