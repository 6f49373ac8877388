// Streaming reader of a JSON file shaped as Zulip's export partials are: one object whose members are
// tables (arrays of row objects) or scalars, e.g. `{"zerver_message": [{…}, …], "zerver_usermessage":
// [{…}, …], "realm_id": 2}`. The file is read in chunks and each row is parsed on its own (JSON.parse of
// its bytes), so memory holds one chunk and one row, never the file: a partial of 1,000 messages in a
// channel of 10,000 subscribers holds 10,000,000 per-user rows.
//
// The scanner follows strings (and their escapes) and nesting only; rows are checked by JSON.parse,
// and the structure around them (a root object, arrays of objects, nothing left open at the end) by the
// scanner. Errors are JsonRowsError, whose message the caller prefixes with the file's name.
import { createReadStream } from 'node:fs';

export class JsonRowsError extends Error {}

export type JsonRow = Record<string, unknown>;

/** Rows read from one chunk of the file, in order, with the table each belongs to. */
export interface RowBatch {
  tables: string[];
  rows: JsonRow[];
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

/**
 * The rows of every table of `file`, a batch per chunk read. `wanted`, when given, names the tables
 * whose rows are parsed (the others are scanned past).
 */
export async function* jsonTableRows(file: string, wanted?: ReadonlySet<string>, chunkBytes = 1 << 20): AsyncGenerator<RowBatch> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let started = false;
  // The last string seen at depth 1 (a member's name) and whether depth 2 is a table's array.
  let keyStart = -1;
  let keyParts: Buffer[] = [];
  let lastKey = '';
  let table: string | null = null;
  let inTableArray = false;
  // The row being read (depth ≥ 3 inside a table's array): its bytes from earlier chunks.
  let rowParts: Buffer[] = [];
  let rowStart = -1;
  let line = 1;

  const fail = (what: string): never => {
    throw new JsonRowsError(`malformed JSON (${what}, line ${line})`);
  };

  for await (const chunk of createReadStream(file, { highWaterMark: chunkBytes }) as AsyncIterable<Buffer>) {
    const tables: string[] = [];
    const rows: JsonRow[] = [];
    if (rowStart === -1 && rowParts.length > 0) rowStart = 0;
    if (keyStart === -1 && keyParts.length > 0) keyStart = 0;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (inString) {
        if (escaped) escaped = false;
        else if (b === BACKSLASH) escaped = true;
        else if (b === QUOTE) {
          inString = false;
          if (keyStart !== -1) {
            keyParts.push(chunk.subarray(keyStart, i));
            keyStart = -1;
            lastKey = Buffer.concat(keyParts).toString('utf8');
            keyParts = [];
          }
        }
        continue;
      }
      if (b === 0x0a) line++;
      if (isSpace(b)) continue;
      if (!started) {
        if (b !== OPEN_OBJECT) fail('expected an object of tables');
        started = true;
        depth = 1;
        continue;
      }
      if (depth === 0) fail('text after the end of the object');
      if (depth === 2 && inTableArray) {
        // Between rows of a table: a row object, a comma or the end of the array.
        if (b === OPEN_OBJECT) {
          depth = 3;
          rowStart = i;
          continue;
        }
        if (b === CLOSE_ARRAY) {
          depth = 1;
          inTableArray = false;
          table = null;
          continue;
        }
        if (b === 0x2c) continue;
        throw new JsonRowsError(`${table}: every row must be an object`);
      }
      if (b === QUOTE) {
        inString = true;
        if (depth === 1) keyStart = i + 1;
        continue;
      }
      if (b === OPEN_OBJECT || b === OPEN_ARRAY) {
        if (depth === 1 && b === OPEN_ARRAY) {
          table = lastKey;
          inTableArray = true;
        }
        depth++;
        continue;
      }
      if (b === CLOSE_OBJECT || b === CLOSE_ARRAY) {
        depth--;
        if (depth === 2 && inTableArray) {
          if (b !== CLOSE_OBJECT) fail('unbalanced brackets');
          // A row ends.
          if (!wanted || wanted.has(table!)) {
            const bytes = rowParts.length ? Buffer.concat([...rowParts, chunk.subarray(rowStart, i + 1)]) : chunk.subarray(rowStart, i + 1);
            let row: unknown;
            try {
              row = JSON.parse(bytes.toString('utf8'));
            } catch (error) {
              fail(error instanceof Error ? error.message : String(error));
            }
            tables.push(table!);
            rows.push(row as JsonRow);
          }
          rowParts = [];
          rowStart = -1;
        }
        if (depth < 0) fail('unbalanced brackets');
        continue;
      }
    }
    // What continues into the next chunk.
    if (rowStart !== -1) {
      if (!wanted || wanted.has(table!)) rowParts.push(Buffer.from(chunk.subarray(rowStart)));
      else rowParts = [Buffer.alloc(0)];
      rowStart = -1;
    }
    if (keyStart !== -1) {
      keyParts.push(Buffer.from(chunk.subarray(keyStart)));
      keyStart = -1;
    }
    if (rows.length) yield { tables, rows };
  }
  if (!started) fail('empty file');
  if (depth !== 0 || inString) fail('unexpected end of the file');
}
