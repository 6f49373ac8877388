// Reading a Slack export zip safely: every entry is checked before a byte of it is written.
//
// yauzl reads the central directory first (entry names, sizes, attributes) and then streams each entry
// on demand, so the archive is never held in memory, the declared uncompressed sizes are known before
// anything is inflated (the zip-bomb bound is checked up front), and `validateEntrySizes` makes yauzl
// fail an entry whose inflated bytes exceed what its header declared (a lying header cannot get past
// the bound either).
//
// Refused, naming the entry: absolute paths, `..` segments, backslashes, NUL bytes, symbolic links
// (Unix mode in the external attributes), encrypted entries, more entries than `maxEntries`, and a
// total declared uncompressed size over `maxTotalBytes` — or, as Zulip's Slack importer judges a
// suspicious archive, over 1 GiB and more than ten times the archive's own size. Entries the importer
// does not read (canvases, anything unexpected) are skipped, not extracted.
import { createWriteStream, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import yauzl from 'yauzl';

export class SlackImportError extends Error {
  override name = 'SlackImportError';
}

export interface ZipLimits {
  /** Most entries an archive may have (default 200,000). */
  maxEntries?: number;
  /** Most uncompressed bytes of all entries together (default 20 GiB). */
  maxTotalBytes?: number;
}

const DEFAULT_MAX_ENTRIES = 200_000;
const DEFAULT_MAX_TOTAL_BYTES = 20 * 1024 ** 3;
const GIB = 1024 ** 3;

/** Whether an entry (a relative path with `/` separators) is one the importer reads. */
function wanted(name: string): boolean {
  const parts = name.split('/');
  if (parts.length === 1) return name.endsWith('.json');
  // <conversation>/<yyyy-mm-dd>.json
  if (parts.length === 2) return parts[1]!.endsWith('.json');
  // Files that some exporters put inside the archive: __uploads/<file id>/<name> (slackdump's and
  // slack-advanced-exporter's layout) and <conversation>/attachments/<file id>-<name> (slackdump's).
  if (parts[0] === '__uploads' && parts.length === 3) return true;
  return parts.length === 3 && parts[1] === 'attachments';
}

function checkName(name: string): string | null {
  if (name.includes('\0')) return 'has a NUL byte in its name';
  if (name.includes('\\')) return 'has a backslash in its name';
  if (name.startsWith('/') || /^[a-zA-Z]:/.test(name)) return 'has an absolute path';
  if (name.split('/').some((p) => p === '..')) return 'has a ".." path segment';
  return null;
}

/** The entry's name: Slack writes UTF-8 names without setting the zip's UTF-8 flag, so decode as UTF-8 always. */
function entryName(entry: yauzl.Entry): string {
  const raw: unknown = entry.fileName;
  return Buffer.isBuffer(raw) ? raw.toString('utf8') : String(raw);
}

/**
 * Extracts the entries the Slack importer reads from `zipPath` into `destDir` (which must exist and be
 * empty), after checking every entry. Returns the relative paths extracted.
 */
export async function extractSlackZip(zipPath: string, destDir: string, limits: ZipLimits = {}): Promise<string[]> {
  const maxEntries = limits.maxEntries ?? DEFAULT_MAX_ENTRIES;
  const maxTotal = limits.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES;
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(zipPath, { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true });
  } catch (error) {
    throw new SlackImportError(`${zipPath} is not a readable zip archive: ${error instanceof Error ? error.message : String(error)}`);
  }
  try {
    if (zip.entryCount > maxEntries) throw new SlackImportError(`the archive has ${zip.entryCount} entries; at most ${maxEntries} are accepted`);
    // First pass: the central directory only (names, sizes, attributes).
    const entries: Array<{ name: string; entry: yauzl.Entry }> = [];
    let total = 0;
    const seen = new Set<string>();
    try {
      for await (const entry of zip.eachEntry()) {
        const name = entryName(entry);
        const problem = checkName(name);
        if (problem) throw new SlackImportError(`zip entry "${name}" ${problem}; refusing the archive`);
        const mode = (entry.externalFileAttributes >>> 16) & 0o170000;
        if (mode === 0o120000) throw new SlackImportError(`zip entry "${name}" is a symbolic link; refusing the archive`);
        if (entry.isEncrypted()) throw new SlackImportError(`zip entry "${name}" is encrypted; refusing the archive`);
        total += entry.uncompressedSize;
        if (total > maxTotal) throw new SlackImportError(`zip entry "${name}" takes the archive past ${maxTotal} uncompressed bytes; refusing the archive`);
        if (name.endsWith('/')) continue;
        const normal = path.posix.normalize(name);
        if (seen.has(normal)) throw new SlackImportError(`zip entry "${name}" appears twice; refusing the archive`);
        seen.add(normal);
        if (wanted(normal)) entries.push({ name: normal, entry });
      }
    } catch (error) {
      if (error instanceof SlackImportError) throw error;
      throw new SlackImportError(`the archive is malformed: ${error instanceof Error ? error.message : String(error)}`);
    }
    const archiveSize = statSync(zipPath).size;
    if (total > GIB && total > 10 * archiveSize) {
      throw new SlackImportError(`the archive inflates to ${total} bytes, more than ten times its own size; refusing it as a compression bomb`);
    }
    // Second pass: stream each wanted entry to disk, counting bytes against its declared size.
    const root = path.resolve(destDir);
    for (const { name, entry } of entries) {
      const target = path.resolve(root, ...name.split('/'));
      if (!target.startsWith(root + path.sep)) throw new SlackImportError(`zip entry "${name}" points outside the archive; refusing it`);
      mkdirSync(path.dirname(target), { recursive: true });
      let written = 0;
      const limit = entry.uncompressedSize;
      const guard = new Transform({
        transform(chunk: Buffer, _enc, done) {
          written += chunk.length;
          if (written > limit) done(new SlackImportError(`zip entry "${name}" inflates past its declared size; refusing the archive`));
          else done(null, chunk);
        },
      });
      try {
        const stream = await zip.openReadStreamPromise(entry);
        await pipeline(stream, guard, createWriteStream(target, { flags: 'wx' }));
      } catch (error) {
        if (error instanceof SlackImportError) throw error;
        throw new SlackImportError(`zip entry "${name}" cannot be read: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    return entries.map((e) => e.name);
  } finally {
    zip.close();
  }
}
