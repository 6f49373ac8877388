// Files on local disk under one folder ($PARLEY_DATA_DIR/uploads by default): the key is the path
// below it. A write goes to a temporary file in the folder's `.incomplete/` and is renamed into place
// only once whole, so a reader never sees part of a file and a failed write leaves nothing behind
// (a crash mid-write leaves a temporary file, which removeIncomplete sweeps). Several processes on one
// machine may share the folder; processes on several machines need S3-compatible storage instead.
import { mkdir, open, readdir, rename, rm, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { checkKey, type ListedObject, type ObjectRead, type ObjectStorage, type ObjectWrite, type RangeRequest } from './types.ts';
import { resolveRange } from './ranges.ts';

const INCOMPLETE = '.incomplete';
/** Reads in large chunks: fewer system calls and socket writes for big files. */
const READ_CHUNK_BYTES = 256 * 1024;
/** A write is copied into two staging buffers of this size in turn: one is written while the other fills. */
const STAGE_BYTES = 1024 * 1024;
/** Staging buffers kept for the next writes (a few writes at once reuse them; more allocate their own). */
const SPARE_STAGES = 8;
const spareStages: Buffer[] = [];

export function createLocalStorage(dir: string): ObjectStorage {
  const root = path.resolve(dir);
  /** The file of a key, checked to stay inside the folder (keys are checked too; this is defence in depth). */
  const fileOf = (key: string) => {
    checkKey(key);
    if (key === INCOMPLETE || key.startsWith(`${INCOMPLETE}/`)) throw new Error(`storage key ${key} is reserved`);
    const file = path.resolve(root, ...key.split('/'));
    if (!file.startsWith(root + path.sep)) throw new Error(`storage key ${key} leaves the storage folder`);
    return file;
  };

  /** Removes the now-empty folders above a deleted file, up to the root (as Zulip does). */
  const pruneEmptyParents = async (file: string) => {
    for (let folder = path.dirname(file); folder !== root && folder.startsWith(root + path.sep); folder = path.dirname(folder)) {
      try {
        await rmdir(folder);
      } catch {
        return; // not empty (or gone): stop
      }
    }
  };

  return {
    kind: 'local',

    async put(key: string, body: Readable, options: ObjectWrite) {
      const file = fileOf(key);
      const temporary = path.join(root, INCOMPLETE, `${randomBytes(12).toString('hex')}`);
      await mkdir(path.dirname(temporary), { recursive: true });
      let size: number;
      try {
        const handle = await open(temporary, 'wx', 0o640);
        try {
          size = await writeStaged(body, handle, options.signal);
        } finally {
          await handle.close();
        }
        await mkdir(path.dirname(file), { recursive: true });
        await rename(temporary, file);
      } catch (error) {
        await rm(temporary, { force: true }).catch(() => {});
        throw error;
      }
      return { size };
    },

    async get(key: string, range?: RangeRequest | null): Promise<ObjectRead | { unsatisfiable: true; size: number } | null> {
      const file = fileOf(key);
      let handle;
      try {
        handle = await open(file, 'r');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'EISDIR') return null;
        throw error;
      }
      try {
        const { size, isFile } = await handle.stat().then((s) => ({ size: s.size, isFile: s.isFile() }));
        if (!isFile) {
          await handle.close();
          return null;
        }
        const resolved = range ? resolveRange(range, size) : null;
        if (resolved === 'unsatisfiable') {
          await handle.close();
          return { unsatisfiable: true, size };
        }
        const body = handle.createReadStream({ ...(resolved ? { start: resolved.start, end: resolved.end } : {}), highWaterMark: READ_CHUNK_BYTES, autoClose: true });
        return { size, contentType: null, body, range: resolved };
      } catch (error) {
        await handle.close().catch(() => {});
        throw error;
      }
    },

    async head(key: string) {
      try {
        const s = await stat(fileOf(key));
        return s.isFile() ? { size: s.size, contentType: null } : null;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },

    async delete(keys: readonly string[]) {
      for (const key of keys) {
        const file = fileOf(key);
        try {
          await unlink(file);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
          throw error;
        }
        await pruneEmptyParents(file);
      }
    },

    async *list(prefix: string): AsyncIterable<ListedObject> {
      // The folder the prefix names (or lies in), walked depth first; keys compared as text.
      const start = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
      const walk = async function* (relative: string): AsyncIterable<ListedObject> {
        let entries;
        try {
          entries = await readdir(path.join(root, ...relative.split('/').filter(Boolean)), { withFileTypes: true });
        } catch {
          return;
        }
        for (const entry of entries) {
          const key = relative ? `${relative}/${entry.name}` : entry.name;
          if (key === INCOMPLETE) continue;
          if (entry.isDirectory()) {
            if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) yield* walk(key);
          } else if (entry.isFile() && key.startsWith(prefix)) {
            const s = await stat(path.join(root, ...key.split('/'))).catch(() => null);
            if (s) yield { key, size: s.size, lastModified: s.mtime };
          }
        }
      };
      yield* walk(start);
    },

    async removeIncomplete(before: Date) {
      const folder = path.join(root, INCOMPLETE);
      let removed = 0;
      let names: string[];
      try {
        names = await readdir(folder);
      } catch {
        return 0;
      }
      for (const name of names) {
        const file = path.join(folder, name);
        const s = await stat(file).catch(() => null);
        if (s && s.mtime < before) {
          await rm(file, { force: true });
          removed++;
        }
      }
      return removed;
    },

    async redirectUrl() {
      return null;
    },

    async close() {},
  };
}

/**
 * Writes `body` into the file through two staging buffers: each chunk is copied as it arrives and let
 * go at once, and a full buffer is written while the other fills (the source waits only while both
 * are full). The chunks of a request body so die young: a WriteStream holds up to its high-water
 * mark of them across each write to disk, long enough under load for the garbage collector to move
 * them to the old generation, whose growth then makes V8 run full collections of the whole heap, over
 * and over while a large file arrives (what held uploads at a third of the disk's speed in
 * bench/uploads.bench.ts). Resolves with the bytes written; rejects with the body's failure or the
 * signal's reason.
 */
async function writeStaged(body: Readable, handle: FileHandle, signal?: AbortSignal): Promise<number> {
  const buffers = [spareStages.pop() ?? Buffer.allocUnsafeSlow(STAGE_BYTES), spareStages.pop() ?? Buffer.allocUnsafeSlow(STAGE_BYTES)];
  let filling = 0;
  let filled = 0;
  let size = 0;
  let position = 0;
  let writing: Promise<void> | null = null;
  const write = async (data: Buffer, length: number) => {
    const at = position;
    position += length;
    for (let done = 0; done < length; ) done += (await handle.write(data, done, length - done, at + done)).bytesWritten;
  };
  const abort = () => body.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
  signal?.addEventListener('abort', abort, { once: true });
  try {
    if (signal?.aborted) abort();
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      for (let offset = 0; offset < chunk.length; ) {
        const copied = chunk.copy(buffers[filling]!, filled, offset);
        filled += copied;
        offset += copied;
        if (filled === STAGE_BYTES) {
          await writing;
          writing = write(buffers[filling]!, filled);
          writing.catch(() => {}); // awaited before the next write or at the end
          filling = 1 - filling;
          filled = 0;
        }
      }
    }
    await writing;
    if (filled > 0) await write(buffers[filling]!, filled);
    return size;
  } catch (error) {
    await writing?.catch(() => {});
    body.destroy();
    throw error;
  } finally {
    signal?.removeEventListener('abort', abort);
    for (const buffer of buffers) if (spareStages.length < SPARE_STAGES) spareStages.push(buffer);
  }
}
