import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { decodeImage, rawToRgb } from '../src/index.js';
import { hugeHeaderPng } from './png.js';

const dir = mkdtempSync(join(tmpdir(), 'mlxcel-img-'));

/** A w × h RGB gradient: pixel (x, y) = (x, y, x ^ y) mod 256. */
function gradient(w: number, h: number): Buffer {
  const b = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) b.set([x & 255, y & 255, (x ^ y) & 255], (y * w + x) * 3);
  return b;
}

describe('decodeImage', () => {
  it('decodes PNG, JPEG and WebP to RGB', async () => {
    const raw = gradient(40, 30);
    const input = { raw: { width: 40, height: 30, channels: 3 as const } };
    const png = await sharp(raw, input).png().toBuffer();
    const img = await decodeImage(png);
    expect([img.width, img.height]).toEqual([40, 30]);
    expect(Buffer.from(img.data).equals(raw)).toBe(true); // lossless
    for (const enc of [sharp(raw, input).jpeg({ quality: 95 }), sharp(raw, input).webp({ quality: 95 })]) {
      const d = await decodeImage(await enc.toBuffer());
      expect([d.width, d.height]).toEqual([40, 30]);
      let md = 0;
      for (let i = 0; i < raw.length; i++) md = Math.max(md, Math.abs(d.data[i]! - raw[i]!));
      expect(md).toBeLessThan(40); // lossy codecs, same picture
    }
  });

  it('applies the EXIF orientation', async () => {
    const raw = gradient(40, 30);
    // Orientation 6 = the stored image must be rotated 90° clockwise for display.
    const jpg = await sharp(raw, { raw: { width: 40, height: 30, channels: 3 } }).jpeg({ quality: 100 }).withMetadata({ orientation: 6 }).toBuffer();
    const img = await decodeImage(jpg);
    expect([img.width, img.height]).toEqual([30, 40]);
    // After a clockwise turn, the displayed top-left pixel is the stored bottom-left (x = 0, y = 29).
    expect(Math.abs(img.data[0]! - 0)).toBeLessThan(8);
    expect(Math.abs(img.data[1]! - 29)).toBeLessThan(8);
  });

  it('composites alpha on white', async () => {
    const rgba = Buffer.from([255, 0, 0, 0, 0, 0, 255, 255, 0, 0, 0, 128, 10, 20, 30, 255]);
    const png = await sharp(rgba, { raw: { width: 2, height: 2, channels: 4 } }).png().toBuffer();
    const img = await decodeImage(png);
    expect(Array.from(img.data.subarray(0, 3))).toEqual([255, 255, 255]); // fully transparent -> white
    expect(Array.from(img.data.subarray(3, 6))).toEqual([0, 0, 255]);
    for (const v of img.data.subarray(6, 9)) expect(Math.abs(v - 127)).toBeLessThanOrEqual(1); // half black over white
    expect(Array.from(rawToRgb({ data: new Uint8Array(rgba), width: 2, height: 2, channels: 4 }).data)).toEqual(Array.from(img.data).map((v, i) => (i >= 6 && i < 9 ? 127 : v)));
  });

  it('accepts raw pixels (grey, RGB, RGBA) and checks their size', async () => {
    const g = await decodeImage({ data: new Uint8Array([7, 9]), width: 2, height: 1, channels: 1 });
    expect(Array.from(g.data)).toEqual([7, 7, 7, 9, 9, 9]);
    await expect(decodeImage({ data: new Uint8Array(5), width: 2, height: 1, channels: 3 })).rejects.toThrow(/5 bytes, 1 x 2 x 3 needs 6/);
  });

  it('unreadable, zero-size, truncated and huge-header images fail clearly', async () => {
    await expect(decodeImage(join(dir, 'missing.png'))).rejects.toThrow(/missing\.png: cannot read image file \(ENOENT\)/);
    writeFileSync(join(dir, 'empty.png'), '');
    await expect(decodeImage(join(dir, 'empty.png'))).rejects.toThrow(/empty\.png: the image file is empty/);
    writeFileSync(join(dir, 'text.png'), 'this is not an image');
    await expect(decodeImage(join(dir, 'text.png'))).rejects.toThrow(/text\.png: not a readable image/);
    const png = await sharp(gradient(64, 64), { raw: { width: 64, height: 64, channels: 3 } }).png().toBuffer();
    writeFileSync(join(dir, 'cut.png'), png.subarray(0, Math.floor(png.length / 2)));
    await expect(decodeImage(join(dir, 'cut.png'))).rejects.toThrow(/cut\.png: .*(truncated|corrupt|readable)/);
    const jpg = await sharp(gradient(64, 64), { raw: { width: 64, height: 64, channels: 3 } }).jpeg().toBuffer();
    await expect(decodeImage(jpg.subarray(0, Math.floor(jpg.length / 2)))).rejects.toThrow(/<image bytes>: (not a readable image|cannot decode the image).*/);
    writeFileSync(join(dir, 'huge.png'), hugeHeaderPng(30000, 30000));
    await expect(decodeImage(join(dir, 'huge.png'))).rejects.toThrow(/huge\.png: the image is 30000 x 30000 = 900000000 pixels, more than the 268435456-pixel limit/);
    // Refused from the header: the file's IDAT holds 10 bytes, so a decode could not even have started.
  });
});
