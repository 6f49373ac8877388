// Re-encoding uploaded images (avatars; Zulip's zerver/lib/upload resize_avatar) with sharp (libvips).
// Decoding is bounded: an image of more than Zulip's IMAGE_BOMB_TOTAL_PIXELS pixels is refused from its
// header before any pixel is decoded (sharp's limitInputPixels), and sharp runs the work on libuv's
// thread pool, so the event loop only waits for the result. What comes out is always a fresh PNG,
// whatever went in: nothing of the uploaded bytes (metadata, trailing data, a polyglot) is served.
import sharp, { type Sharp } from 'sharp';
import { JsonableError } from '../errors.ts';

/** Zulip's IMAGE_BOMB_TOTAL_PIXELS: images with more pixels are refused without decoding them. */
export const IMAGE_BOMB_TOTAL_PIXELS = 90_000_000;

/** Zulip's THUMBNAIL_ACCEPT_IMAGE_TYPES: the image types it decodes. */
export const ACCEPTED_IMAGE_TYPES: ReadonlySet<string> = new Set(['image/avif', 'image/gif', 'image/heic', 'image/jpeg', 'image/png', 'image/tiff', 'image/webp']);

export const invalidImageFormat = () => new JsonableError('Invalid image format');
const undecodable = () => new JsonableError('Could not decode image; did you upload an image file?');
const tooManyPixels = () => new JsonableError('Image size exceeds limit.');

/** Runs `work` on the still image, once its header is known to be within the pixel limit; Zulip's errors otherwise. */
async function withStillImage<T>(input: Buffer, work: (image: Sharp) => Promise<T>): Promise<T> {
  const image = sharp(input, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, failOn: 'error', sequentialRead: true });
  try {
    const meta = await image.metadata();
    if (!meta.width || !meta.height) throw undecodable();
    if (meta.width * meta.height > IMAGE_BOMB_TOTAL_PIXELS) throw tooManyPixels();
    return await work(image);
  } catch (error) {
    if (error instanceof JsonableError) throw error;
    if (error instanceof Error && /pixel limit/i.test(error.message)) throw tooManyPixels();
    throw undecodable();
  }
}

/** Squares of the image (centre-cropped, EXIF orientation applied), as PNGs, one per size asked. */
export async function squarePngs(input: Buffer, sizes: readonly number[]): Promise<Buffer[]> {
  return withStillImage(input, (image) => Promise.all(sizes.map((size) => image.clone().rotate().resize(size, size, { fit: 'cover', position: 'centre' }).png().toBuffer())));
}

/** The image shrunk (never enlarged) to fit within `width`×`height`, proportions kept, as a PNG (Zulip's resize_logo). */
export async function fittedPng(input: Buffer, width: number, height: number): Promise<Buffer> {
  return withStillImage(input, (image) => image.rotate().resize(width, height, { fit: 'inside', withoutEnlargement: true }).png().toBuffer());
}

/** The first frame of the image as a PNG, with the same pixel limit (an imported animated emoji's still image). */
export async function firstFramePng(input: Buffer): Promise<Buffer> {
  return withStillImage(input, (image) => image.png().toBuffer());
}

/** Animated images are refused above this many pixels across their first three frames (a third of the still limit). */
export const IMAGE_MAX_ANIMATED_PIXELS = IMAGE_BOMB_TOTAL_PIXELS / 3;

type EncodableFormat = 'avif' | 'gif' | 'jpeg' | 'png' | 'webp';
const FORMAT_OF_TYPE: Readonly<Record<string, EncodableFormat>> = {
  'image/avif': 'avif',
  'image/gif': 'gif',
  'image/jpeg': 'jpeg',
  'image/png': 'png',
  'image/webp': 'webp',
};

/**
 * A custom emoji's images (Zulip's resize_emoji): a `size`-pixel square centre crop re-encoded in the
 * type it was uploaded as; an animated image (GIF, WebP) stays animated, fitted into the square with
 * transparent padding, with a still PNG of its first frame besides.
 */
export async function emojiImages(input: Buffer, contentType: string, size: number): Promise<{ image: Buffer; still: Buffer | null }> {
  const format = FORMAT_OF_TYPE[contentType];
  if (!format) throw invalidImageFormat();
  try {
    const meta = await sharp(input, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, failOn: 'error' }).metadata();
    const width = meta.width ?? 0;
    const height = meta.pageHeight ?? meta.height ?? 0;
    const pages = meta.pages ?? 1;
    if (!width || !height) throw undecodable();
    if (width * height > IMAGE_BOMB_TOTAL_PIXELS) throw tooManyPixels();
    if (pages > 1 && width * height * Math.min(3, pages) > IMAGE_MAX_ANIMATED_PIXELS) throw tooManyPixels();
    const still = () => sharp(input, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, failOn: 'error' }).rotate().resize(size, size, { fit: 'cover', position: 'centre' });
    if (pages === 1 || (format !== 'gif' && format !== 'webp')) return { image: await still().toFormat(format).toBuffer(), still: null };
    const animated = await sharp(input, { animated: true, limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, failOn: 'error' })
      .resize(size, size, { fit: 'contain', background: { r: 0, g: 0, b: 0, alpha: 0 } })
      .toFormat(format)
      .toBuffer();
    return { image: animated, still: await still().png().toBuffer() };
  } catch (error) {
    if (error instanceof JsonableError) throw error;
    if (error instanceof Error && /pixel limit/i.test(error.message)) throw tooManyPixels();
    throw undecodable();
  }
}
