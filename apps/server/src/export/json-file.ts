// A JSON object of tables (`{"zerver_realm":[…],"zerver_userprofile":[…],…}`), or an array of records,
// written to a file a row at a time, so that realm.json or a records.json is never held whole: a tar entry's size must be known before its
// bytes, so the export writes the file first (in a temporary folder) and then streams it into the
// archive. The bytes are those JSON.stringify gives for the whole object (no spaces, keys in the order
// written), which both Zulip's import (orjson) and ours (import/json-rows.ts) read.
import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';

/** Rows a table is written from: an array, or pages of rows as they are read. */
export type TableRows = readonly unknown[] | AsyncIterable<readonly unknown[]>;

const FLUSH_AT = 1 << 16;

export interface JsonTablesFile {
  /** Writes the table `name` from `rows`; the number of rows written. */
  table(name: string, rows: TableRows): Promise<number>;
  /** Ends the object and the file; its size in bytes. */
  close(): Promise<number>;
  /** Closes the file after a failure (nothing more is written). */
  destroy(): void;
}

/** A file written through a buffer (starting with `opening`), its size in bytes counted. */
function bufferedFile(file: string, opening: string) {
  const out: WriteStream = createWriteStream(file, { mode: 0o600 });
  let size = 0;
  let buffered = opening;
  const flush = async () => {
    if (!buffered) return;
    const chunk = Buffer.from(buffered, 'utf8');
    buffered = '';
    size += chunk.length;
    if (!out.write(chunk)) await once(out, 'drain');
  };
  return {
    async append(text: string) {
      buffered += text;
      if (buffered.length >= FLUSH_AT) await flush();
    },
    async close(last: string): Promise<number> {
      buffered += last;
      await flush();
      out.end();
      await finished(out);
      return size;
    },
    destroy() {
      out.destroy();
    },
  };
}

export function createJsonTablesFile(file: string): JsonTablesFile {
  const out = bufferedFile(file, '{');
  let tables = 0;
  return {
    async table(name, rows) {
      await out.append(`${tables++ === 0 ? '' : ','}${JSON.stringify(name)}:[`);
      let n = 0;
      const pages: AsyncIterable<readonly unknown[]> | Iterable<readonly unknown[]> = Symbol.asyncIterator in rows ? rows : [rows as readonly unknown[]];
      for await (const page of pages) {
        for (const row of page) await out.append(`${n++ === 0 ? '' : ','}${JSON.stringify(row)}`);
      }
      await out.append(']');
      return n;
    },
    close: () => out.close('}'),
    destroy: () => out.destroy(),
  };
}

/** A JSON array (a folder's records.json) written to a file a row at a time. */
export interface JsonArrayFile {
  add(row: unknown): Promise<void>;
  /** Ends the array and the file; its size in bytes. */
  close(): Promise<number>;
  destroy(): void;
  readonly rows: number;
}

export function createJsonArrayFile(file: string): JsonArrayFile {
  const out = bufferedFile(file, '[');
  let rows = 0;
  return {
    add: (row) => out.append(`${rows++ === 0 ? '' : ','}${JSON.stringify(row)}`),
    close: () => out.close(']'),
    destroy: () => out.destroy(),
    get rows() {
      return rows;
    },
  };
}
