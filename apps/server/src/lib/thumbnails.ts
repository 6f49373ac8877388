// Thumbnails of uploaded images (Zulip's zerver/lib/thumbnail.py, facts only): which uploads are
// images worth thumbnailing, the pixel limits that refuse decompression bombs, the formats made, and
// the markup of an inline image preview (a loading placeholder until the thumbnail exists).
//
// Decoding is sharp (libvips): it runs on libuv's thread pool, never on the event loop, with its own
// pixel limit (limitInputPixels) on top of the header checks below. Only headers are read at upload
// (probeImage); whole images are decoded by the thumbnail job (jobs/thumbnails.ts), one at a time.
import sharp from 'sharp';

// libvips' own threads per image: one, so that thumbnailing (one image at a time per process, see the
// job's kind in jobs/queue.ts) holds at most one core and requests keep the others.
sharp.concurrency(1);

/** Zulip's IMAGE_BOMB_TOTAL_PIXELS: no image with more pixels (all frames, for animations) is decoded. */
export const IMAGE_BOMB_TOTAL_PIXELS = 90_000_000;
/** Zulip's IMAGE_MAX_ANIMATED_PIXELS: an animation's first three frames must fit in a third of that. */
export const IMAGE_MAX_ANIMATED_PIXELS = IMAGE_BOMB_TOTAL_PIXELS / 3;

/** Zulip's THUMBNAIL_ACCEPT_IMAGE_TYPES: claimed types whose bytes are parsed at all. */
export const THUMBNAIL_ACCEPT_IMAGE_TYPES: ReadonlySet<string> = new Set(['image/avif', 'image/gif', 'image/heic', 'image/jpeg', 'image/png', 'image/tiff', 'image/webp', 'image/svg+xml']);

export interface ThumbnailFormat {
  extension: 'webp';
  maxWidth: number;
  maxHeight: number;
  animated: boolean;
}

/**
 * Zulip's THUMBNAIL_OUTPUT_FORMATS: the first format matching the source's animated-ness is the one
 * written into rendered content. (Zulip also makes a 4032x3024 webp transcoding of types browsers do
 * not show; not made here.)
 */
export const THUMBNAIL_FORMATS: readonly ThumbnailFormat[] = [
  { extension: 'webp', maxWidth: 840, maxHeight: 560, animated: true },
  { extension: 'webp', maxWidth: 840, maxHeight: 560, animated: false },
];

/** A format's name as in thumbnail URLs and storage keys: `840x560.webp`, `840x560-anim.webp`. */
export const formatName = (f: Pick<ThumbnailFormat, 'extension' | 'maxWidth' | 'maxHeight' | 'animated'>) => `${f.maxWidth}x${f.maxHeight}${f.animated ? '-anim' : ''}.${f.extension}`;

/** The configured format a name denotes, or null. */
export const formatByName = (name: string): ThumbnailFormat | null => THUMBNAIL_FORMATS.find((f) => formatName(f) === name) ?? null;

/** /register's server_thumbnail_formats (Zulip's shape). */
export const serverThumbnailFormats = () =>
  THUMBNAIL_FORMATS.map((f) => ({ name: formatName(f), max_width: f.maxWidth, max_height: f.maxHeight, format: f.extension, animated: f.animated }));

/** Storage key of a thumbnail. */
export const thumbnailKey = (pathId: string, format: ThumbnailFormat) => `thumbnails/${pathId}/${formatName(format)}`;

/** The storage keys every thumbnail of a file may have (whichever were made): deleted with the file. */
export const thumbnailKeys = (pathId: string): string[] => THUMBNAIL_FORMATS.map((f) => thumbnailKey(pathId, f));

/** One thumbnail made (stored in image_attachment.thumbnail_metadata; Zulip's StoredThumbnailFormat). */
export interface StoredThumbnail {
  extension: string;
  content_type: string;
  max_width: number;
  max_height: number;
  animated: boolean;
  width: number;
  height: number;
  byte_size: number;
}

export interface ProbedImage {
  /** As rendered: after the EXIF orientation. */
  width: number;
  height: number;
  frames: number;
}

/**
 * Reads an image's header: its size as rendered and its frame count, or null when it does not decode
 * as an image or exceeds Zulip's pixel limits (a still over 90 M pixels; an animation whose first three
 * frames exceed 30 M). Never throws.
 */
export async function probeImage(bytes: Buffer): Promise<ProbedImage | null> {
  try {
    const meta = await sharp(bytes, { limitInputPixels: false, failOn: 'error' }).metadata();
    const frames = meta.pages ?? 1;
    const frameHeight = meta.pageHeight ?? meta.height;
    const width = meta.width;
    if (!width || !frameHeight) return null;
    if (frames === 1 ? width * frameHeight > IMAGE_BOMB_TOTAL_PIXELS : width * frameHeight * Math.min(3, frames) > IMAGE_MAX_ANIMATED_PIXELS) return null;
    const swapped = meta.orientation !== undefined && meta.orientation >= 5 && meta.orientation <= 8;
    return swapped ? { width: frameHeight, height: width, frames } : { width, height: frameHeight, frames };
  } catch {
    return null;
  }
}

/**
 * The formats still to make for an image (Zulip's missing_thumbnails): those not made yet, without
 * animated ones for a still image.
 */
export function missingFormats(image: { frames: number; thumbnails: readonly StoredThumbnail[] }): ThumbnailFormat[] {
  const made = new Set(image.thumbnails.map((t) => formatName({ extension: 'webp', maxWidth: t.max_width, maxHeight: t.max_height, animated: t.animated })));
  return THUMBNAIL_FORMATS.filter((f) => !made.has(formatName(f)) && (image.frames > 1 || !f.animated));
}

/**
 * Makes one thumbnail: scaled down (never up) to fit the format's box, EXIF orientation applied; an
 * animated format keeps as many frames as fit in Zulip's animation budget, a still one the first.
 * Throws when the image does not decode.
 */
export async function makeThumbnail(bytes: Buffer, image: { width: number; height: number; frames: number }, format: ThumbnailFormat): Promise<{ data: Buffer; meta: StoredThumbnail }> {
  let pages = 1;
  if (image.frames > 1 && format.animated) {
    const perFrame = image.width * image.height;
    pages = perFrame * image.frames < IMAGE_MAX_ANIMATED_PIXELS ? -1 : Math.max(1, Math.floor(IMAGE_MAX_ANIMATED_PIXELS / perFrame));
  }
  const data = await sharp(bytes, { limitInputPixels: IMAGE_BOMB_TOTAL_PIXELS, pages, failOn: 'error' })
    .rotate()
    .resize(format.maxWidth, format.maxHeight, { fit: 'inside', withoutEnlargement: true })
    .webp()
    .toBuffer();
  const out = await sharp(data, { limitInputPixels: false }).metadata();
  return {
    data,
    meta: {
      extension: format.extension,
      content_type: 'image/webp',
      max_width: format.maxWidth,
      max_height: format.maxHeight,
      animated: format.animated,
      width: out.width,
      height: out.pageHeight ?? out.height,
      byte_size: data.length,
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Markup

/** Zulip's spinner shown while a thumbnail is pending. */
export const LOADING_PLACEHOLDER_SRC = '/static/images/loading/loader-black.svg';

/** What rendering needs of an image upload (Zulip's MarkdownImageMetadata). */
export interface ImagePreview {
  pathId: string;
  width: number;
  height: number;
  contentType: string | null;
  frames: number;
  /** Whether the default thumbnail has been made. */
  ready: boolean;
}

const escapeAttribute = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The thumbnail written into rendered content: the first format matching the image's animated-ness. */
export function defaultThumbnail(preview: Pick<ImagePreview, 'frames' | 'pathId'>): { url: string; animated: boolean } {
  const format = THUMBNAIL_FORMATS.find((f) => f.animated === preview.frames > 1) ?? THUMBNAIL_FORMATS[0]!;
  return { url: `/user_uploads/thumbnail/${preview.pathId}/${formatName(format)}`, animated: format.animated };
}

/** The `<img>` of a preview: Zulip's loading placeholder while pending, the thumbnail once made. */
export function previewImg(preview: ImagePreview): string {
  const type = preview.contentType ? ` data-original-content-type="${escapeAttribute(preview.contentType)}"` : '';
  const dimensions = ` data-original-dimensions="${preview.width}x${preview.height}"`;
  if (!preview.ready) return `<img class="image-loading-placeholder"${type}${dimensions} src="${LOADING_PLACEHOLDER_SRC}">`;
  const thumb = defaultThumbnail(preview);
  return `<img${thumb.animated ? ' data-animated="true"' : ''}${type}${dimensions} src="${escapeAttribute(thumb.url)}">`;
}

/** Zulip's `message_inline_image` block for a link to an uploaded image. */
export function previewBlock(href: string, title: string, preview: ImagePreview): string {
  return `<div class="message_inline_image"><a href="${escapeAttribute(href)}" title="${escapeAttribute(title)}">${previewImg(preview)}</a></div>`;
}

/** The links to uploaded files in rendered HTML, in order: href (as rendered), path id and text. */
export function uploadLinks(html: string): Array<{ href: string; pathId: string; text: string }> {
  const links: Array<{ href: string; pathId: string; text: string }> = [];
  for (const m of html.matchAll(/<a href="\/user_uploads\/(\d+\/[^"]+)">(.*?)<\/a>/g)) {
    const pathId = decodeEntities(m[1]!);
    if (!/^\d+\/[\w./-]+$/.test(pathId)) continue; // Zulip's path-id pattern
    links.push({ href: `/user_uploads/${pathId}`, pathId, text: decodeEntities(m[2]!.replace(/<[^>]*>/g, '')) });
  }
  return links;
}

function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39);/g, (_, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!);
}

/** Zulip's limit on inline previews in one message. */
export const MAX_INLINE_PREVIEWS = 24;

/**
 * Appends the previews of the uploaded images `html` links to (each once, in order of first link),
 * after the content, as Zulip appends its inline image blocks.
 */
export function withImagePreviews(html: string, previews: ReadonlyMap<string, ImagePreview>): string {
  const seen = new Set<string>();
  const blocks: string[] = [];
  for (const link of uploadLinks(html)) {
    const preview = previews.get(link.pathId);
    if (!preview || seen.has(link.pathId) || blocks.length >= MAX_INLINE_PREVIEWS) continue;
    seen.add(link.pathId);
    blocks.push(previewBlock(link.href, link.text, preview));
  }
  return blocks.length === 0 ? html : `${html}\n${blocks.join('')}`;
}

/**
 * Rewrites the pending placeholder of one image in rendered content (Zulip's
 * rewrite_thumbnailed_images): to its thumbnail (`preview` ready), or removes the whole preview block
 * (`preview` null: the image turned out not to decode). Null when nothing changed.
 */
export function rewritePreview(html: string, pathId: string, preview: ImagePreview | null): string | null {
  const href = escapeAttribute(`/user_uploads/${pathId}`);
  const block = new RegExp(`<div class="message_inline_image"><a href="${escapeRegExp(href)}" title="([^"]*)"><img class="image-loading-placeholder"[^>]*></a></div>`, 'g');
  let changed = false;
  const out = html.replace(block, (_all, title: string) => {
    changed = true;
    return preview === null ? '' : `<div class="message_inline_image"><a href="${href}" title="${title}">${previewImg(preview)}</a></div>`;
  });
  if (!changed) return null;
  return preview === null ? out.replace(/\n$/, '') : out;
}

/** The path ids whose preview blocks in rendered content are still loading placeholders. */
export function pendingPreviewPathIds(html: string): string[] {
  const ids = new Set<string>();
  for (const m of html.matchAll(/<div class="message_inline_image"><a href="\/user_uploads\/([^"]+)" title="[^"]*"><img class="image-loading-placeholder"/g)) ids.add(decodeEntities(m[1]!));
  return [...ids];
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
