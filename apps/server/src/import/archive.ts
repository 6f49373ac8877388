// Safe extraction of an export tarball (.tar.gz, or a plain .tar) into a fresh temporary folder, for
// the importers. The archive is untrusted: every entry is checked before a byte of it is written.
// Refused, naming the entry: absolute paths, `..` segments, backslashes and control characters in
// names; anything but regular files and folders (symbolic and hard links, devices, FIFOs); an entry
// larger than `maxEntryBytes`; more than `maxTotalBytes` uncompressed in all (a compression bomb is
// stopped while it inflates, as the bytes are counted when they arrive, not from the headers alone);
// more than `maxEntries` entries. Nothing is left behind on refusal.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { extract as tarExtract } from 'tar-stream';

export interface ArchiveLimits {
  /** Largest single entry, uncompressed. */
  maxEntryBytes: number;
  /** Largest total of all entries, uncompressed. */
  maxTotalBytes: number;
  maxEntries: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = {
  maxEntryBytes: 4 * 1024 ** 3,
  maxTotalBytes: 64 * 1024 ** 3,
  maxEntries: 2_000_000,
};

/** A refused archive: the message names the entry (and says nothing was imported). */
export class ArchiveError extends Error {
  constructor(
    message: string,
    readonly entry?: string,
  ) {
    super(message);
  }
}

/** Checks an entry's name and returns it as a relative path of safe segments. */
export function safeEntryPath(name: string): string {
  const shown = JSON.stringify(name);
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || /[\u0000-\u001f\u007f\\]/.test(name)) throw new ArchiveError(`archive entry ${shown}: invalid characters in its name`, name);
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw new ArchiveError(`archive entry ${shown}: absolute paths are refused`, name);
  const segments = name.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..')) throw new ArchiveError(`archive entry ${shown}: ".." in a path is refused`, name);
  if (segments.length === 0) throw new ArchiveError(`archive entry ${shown}: empty path`, name);
  return segments.join('/');
}

async function isGzip(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/**
 * Extracts `file` into a new temporary folder and returns it (the caller removes it). On any refusal
 * the folder is removed and an ArchiveError says which entry and why.
 */
export async function extractArchive(file: string, limits: Partial<ArchiveLimits> = {}): Promise<string> {
  const bounds = { ...DEFAULT_ARCHIVE_LIMITS, ...limits };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'parley-import-'));
  try {
    await extractInto(file, dir, bounds);
    return dir;
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    if (error instanceof ArchiveError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new ArchiveError(`${path.basename(file)}: not a readable tar.gz archive (${message})`);
  }
}

async function extractInto(file: string, dir: string, limits: ArchiveLimits): Promise<void> {
  const gzip = await isGzip(file);
  const source = createReadStream(file);
  const gunzip = gzip ? createGunzip() : null;
  const extractor = tarExtract();
  let total = 0;
  let entries = 0;
  const written = new Set<string>();
  await new Promise<void>((resolve, reject) => {
    let failed = false;
    // The first failure stops everything at once (a bomb is not inflated any further).
    const fail = (error: unknown) => {
      if (failed) return;
      failed = true;
      source.destroy();
      gunzip?.destroy();
      extractor.destroy();
      reject(error);
    };
    extractor.on('entry', (header, stream, next) => {
      if (failed) return;
      let relative: string;
      try {
        relative = safeEntryPath(header.name);
        if (++entries > limits.maxEntries) throw new ArchiveError(`archive entry ${JSON.stringify(header.name)}: more than ${limits.maxEntries} entries`, header.name);
        const type = header.type ?? 'file';
        if (type !== 'file' && type !== 'directory' && type !== 'contiguous-file') {
          throw new ArchiveError(`archive entry ${JSON.stringify(header.name)}: ${type} entries are refused (only files and folders)`, header.name);
        }
        if ((header.size ?? 0) > limits.maxEntryBytes) throw tooLarge(header.name, limits.maxEntryBytes);
        if (type === 'directory') {
          stream.resume();
          mkdir(path.join(dir, relative), { recursive: true }).then(() => next(), fail);
          return;
        }
        if (written.has(relative)) throw new ArchiveError(`archive entry ${JSON.stringify(header.name)}: appears twice`, header.name);
        written.add(relative);
      } catch (error) {
        return fail(error);
      }
      const target = path.join(dir, relative);
      let size = 0;
      const counter = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          size += chunk.length;
          total += chunk.length;
          if (size > limits.maxEntryBytes) return callback(tooLarge(header.name, limits.maxEntryBytes));
          if (total > limits.maxTotalBytes) {
            return callback(new ArchiveError(`archive entry ${JSON.stringify(header.name)}: the archive holds more than ${limits.maxTotalBytes} bytes uncompressed`, header.name));
          }
          callback(null, chunk);
        },
      });
      mkdir(path.dirname(target), { recursive: true })
        .then(() => pipeline(stream, counter, createWriteStream(target, { flags: 'wx', mode: 0o600 })))
        .then(() => next(), fail);
    });
    extractor.on('finish', () => (failed ? undefined : resolve()));
    extractor.on('error', fail);
    source.on('error', fail);
    gunzip?.on('error', fail);
    if (gunzip) source.pipe(gunzip).pipe(extractor);
    else source.pipe(extractor);
  });
}

function tooLarge(name: string, max: number): ArchiveError {
  return new ArchiveError(`archive entry ${JSON.stringify(name)}: larger than ${max} bytes uncompressed`, name);
}
