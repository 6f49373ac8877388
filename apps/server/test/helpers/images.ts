// Images for avatar and custom emoji tests: real ones made with sharp, and hand-made files that only
// look like images (a PNG header announcing more pixels than the server decodes).
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';

/** A PNG of `width`×`height` in one colour. */
export const pngImage = (width: number, height: number, colour = '#3366cc') =>
  sharp({ create: { width, height, channels: 3, background: colour } }).png().toBuffer();

/** An animated GIF of `frames` frames of `size`×`size`, each a different colour. */
export async function animatedGif(size: number, frames: number): Promise<Buffer> {
  const colours = ['#ff0000', '#00ff00', '#0000ff', '#ffff00'];
  const raw = Buffer.concat(
    await Promise.all(Array.from({ length: frames }, (_, i) => sharp({ create: { width: size, height: size, channels: 4, background: colours[i % colours.length]! } }).raw().toBuffer())),
  );
  return sharp(raw, { raw: { width: size, height: size * frames, channels: 4, pageHeight: size } }).gif({ loop: 0, delay: Array(frames).fill(100) }).toBuffer();
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A small, valid-looking PNG whose header says `width`×`height` (a decompression bomb's shape). */
export function pngBomb(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.writeUInt8(8, 8); // bit depth
  header.writeUInt8(0, 9); // greyscale
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.alloc(1024))), chunk('IEND', Buffer.alloc(0))]);
}

/** Width, height, format and frame count of an image. */
export async function imageInfo(bytes: Buffer): Promise<{ width: number; height: number; format: string; pages: number }> {
  const meta = await sharp(bytes).metadata();
  return { width: meta.width ?? 0, height: meta.pageHeight ?? meta.height ?? 0, format: meta.format ?? '', pages: meta.pages ?? 1 };
}
