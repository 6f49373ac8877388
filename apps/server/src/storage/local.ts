// Files on local disk under one folder ($PARLEY_DATA_DIR/uploads by default): the key is the path
// below it. A write goes to a temporary file in the folder's `.incomplete/` and is renamed into place
// only once whole, so a reader never sees part of a file and a failed write leaves nothing behind
// (a crash mid-write leaves a temporary file, which removeIncomplete sweeps). Several processes on one
// machine may share the folder; processes on several machines need S3-compatible storage instead.
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { checkKey, type ListedObject, type ObjectRead, type ObjectStorage, type ObjectWrite, type RangeRequest } from './types.ts';
import { resolveRange } from './ranges.ts';

const INCOMPLETE = '.incomplete';
/** Reads in large chunks: fewer system calls and socket writes for big files. */
const READ_CHUNK_BYTES = 256 * 1024;
/** Writes queue up to this much before the source is paused: the disk is written in large steps. */
const WRITE_BUFFER_BYTES = 1024 * 1024;

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
        await pipeline(body, createWriteStream(temporary, { flags: 'wx', mode: 0o640, highWaterMark: WRITE_BUFFER_BYTES }), options.signal ? { signal: options.signal } : {});
        size = (await stat(temporary)).size;
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
