// `pnpm manage restore`: a backup (format.ts) into an EMPTY database and file storage, in one
// transaction. The archive is read as a stream (gunzip, then tar entries one after another): the SQL
// script's statements run as they come, each `COPY … FROM stdin;` block is streamed into PostgreSQL
// (pg-copy-streams), files go into storage. Only when the end entry is there and agrees (rows per
// table, files, the script's SHA-256) does the transaction commit; any failure (a damaged or cut-short
// file, a refused statement) rolls it back and deletes the files written, so the target stays empty.
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Readable, type Writable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import pg from 'pg';
import { lookup as mimeLookup } from 'mime-types';
import { extract as tarExtract } from 'tar-stream';
import type { ObjectStorage } from '../storage/index.ts';
import { safeEntryPath } from '../import/archive.ts';
import {
  analyzeDatabase,
  beginRestore,
  commitRestore,
  copyTableIn,
  countUserRelations,
  rollbackRestore,
  runScript,
  shippedMigrations,
} from '../data/backup.repo.ts';
import { BackupError, DATABASE_PREFIX, END, FORMAT, FORMAT_VERSION, MANIFEST, SECRET, UPLOADS_PREFIX, type BackupEnd, type BackupManifest, type BackupProgress } from './format.ts';

export interface RestoreOptions {
  databaseUrl: string;
  storage: ObjectStorage;
  /** Called with the backup's server secret before anything is written; throws a BackupError to refuse. */
  acceptSecret(secret: Buffer | null): void;
  onProgress?: (progress: BackupProgress) => void;
}

export interface RestoreSummary {
  manifest: BackupManifest;
  end: BackupEnd;
  secret: Buffer | null;
}

const NOTHING_RESTORED = 'nothing was restored (the database and file storage are as they were)';
const JSON_LIMIT = 1024 * 1024;
const COPY_LINE = /^COPY public\."((?:[^"]|"")+)" \(.*\) FROM stdin;$/;

/** Replays the backup's SQL script as it arrives: statements as simple queries, COPY blocks as streams. */
class ScriptRunner {
  private sql: string[] = [];
  private rest: Buffer | null = null;
  private copy: { table: string; stream: Writable; rows: number; shown: number } | null = null;
  readonly counts = new Map<string, number>();
  readonly hash = createHash('sha256');
  bytes = 0;

  constructor(
    private readonly client: pg.Client,
    private readonly progress: (p: BackupProgress) => void,
  ) {}

  async feed(chunk: Buffer): Promise<void> {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    const data = this.rest ? Buffer.concat([this.rest, chunk]) : chunk;
    this.rest = null;
    let start = 0;
    while (start < data.length) {
      const copy = this.copy;
      if (copy) {
        // Whole rows go to COPY in one write; the line `\.` ends the block.
        let line = start;
        let ended = false;
        let next = -1;
        for (;;) {
          const nl = data.indexOf(10, line);
          if (nl === -1) break;
          if (nl - line === 2 && data[line] === 0x5c && data[line + 1] === 0x2e) {
            ended = true;
            next = nl + 1;
            break;
          }
          copy.rows++;
          line = nl + 1;
        }
        if (line > start && !copy.stream.write(data.subarray(start, line))) await once(copy.stream, 'drain');
        if (!ended) {
          if (line < data.length) this.rest = Buffer.from(data.subarray(line));
          if (copy.rows - copy.shown >= 10_000) {
            copy.shown = copy.rows;
            this.progress({ kind: 'table', table: copy.table, rows: copy.rows, done: false });
          }
          return;
        }
        copy.stream.end();
        await finished(copy.stream);
        this.counts.set(copy.table, copy.rows);
        this.progress({ kind: 'table', table: copy.table, rows: copy.rows, done: true });
        this.copy = null;
        start = next;
      } else {
        const nl = data.indexOf(10, start);
        if (nl === -1) {
          this.rest = Buffer.from(data.subarray(start));
          return;
        }
        const line = data.toString('utf8', start, nl);
        start = nl + 1;
        const match = COPY_LINE.exec(line);
        if (!match) {
          this.sql.push(line);
          continue;
        }
        await this.flushSql();
        const table = match[1]!.replaceAll('""', '"');
        const stream = copyTableIn(this.client, line);
        // A failure while nobody waits on the stream is seen at the next write or at its end.
        stream.on('error', () => {});
        this.copy = { table, stream, rows: 0, shown: 0 };
        this.progress({ kind: 'table', table, rows: 0, done: false });
      }
    }
  }

  private async flushSql(): Promise<void> {
    const text = this.sql.join('\n').trim();
    this.sql = [];
    if (text) await runScript(this.client, text);
  }

  /** The script ended: its last statements run; a COPY block left open means it was cut short. */
  async finish(): Promise<void> {
    if (this.copy || (this.rest && this.rest.length > 0)) throw new BackupError(`the backup's SQL script ends inside ${this.copy ? `the rows of table ${this.copy.table}` : 'a line'}: the file was cut short`);
    await this.flushSql();
  }

  /** A COPY under way when the restore fails: ended, so the connection can roll back. */
  abandon(): void {
    this.copy?.stream.destroy();
    this.copy = null;
  }
}

async function readSmall(entry: AsyncIterable<Buffer>, name: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of entry) {
    size += (chunk as Buffer).length;
    if (size > JSON_LIMIT) throw new BackupError(`${name} is larger than ${JSON_LIMIT} bytes: not a Parley backup`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function parseJson<T>(data: Buffer, name: string): T {
  try {
    return JSON.parse(data.toString('utf8')) as T;
  } catch {
    throw new BackupError(`${name} is not valid JSON: the backup is damaged`);
  }
}

function checkManifest(manifest: BackupManifest): void {
  if (manifest?.format !== FORMAT) throw new BackupError('not a Parley backup (its manifest names no Parley backup format)');
  if (manifest.version !== FORMAT_VERSION) throw new BackupError(`this backup has format ${manifest.version}; this Parley reads format ${FORMAT_VERSION}: restore it with the version of Parley that made it`);
  if (!Array.isArray(manifest.migrations)) throw new BackupError('the backup manifest lists no migrations: the backup is damaged');
  const shipped = shippedMigrations();
  const unknown = manifest.migrations.filter((m) => !shipped.has(m));
  if (unknown.length > 0) throw new BackupError(`this backup comes from a newer Parley (migration ${unknown[0]} is unknown here): restore it with that version or a later one`);
}

/** What a failure means to the person restoring. */
function explain(error: unknown): BackupError {
  if (error instanceof BackupError) return error;
  const e = error as { code?: string; message?: string; errno?: number };
  const message = e?.message ?? String(error);
  if (typeof e?.code === 'string' && e.code.startsWith('Z_')) return new BackupError(`the file is not a whole .tar.gz backup (${message}): it is damaged or was cut short`);
  if (/unexpected end of (file|data)|invalid tar header|unexpected end/i.test(message)) return new BackupError(`the file is not a whole .tar.gz backup (${message}): it is damaged or was cut short`);
  if (e?.code === '42501') return new BackupError(`the database refused a statement of the backup (${message}): restoring needs a superuser role (it sets session_replication_role), as the embedded PostgreSQL's`);
  if (typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return new BackupError(`the database refused the backup's SQL (${e.code}: ${message}): the backup is damaged or was not made by Parley`);
  return new BackupError(message);
}

export async function restoreBackup(options: RestoreOptions, input: Readable): Promise<RestoreSummary> {
  const progress = options.onProgress ?? (() => {});
  const client = new pg.Client({ connectionString: options.databaseUrl, application_name: 'parley restore' });
  await client.connect();
  const written: string[] = [];
  let inTransaction = false;
  let runner: ScriptRunner | null = null;
  const extract = tarExtract();
  try {
    const relations = await countUserRelations(client);
    if (relations > 0) {
      throw new BackupError(`the target database is not empty (${relations} tables, sequences or other relations): restore only into an empty database (a new PARLEY_DATA_DIR, or a new database for DATABASE_URL)`);
    }
    let manifest: BackupManifest | null = null;
    let secret: Buffer | null = null;
    let end: BackupEnd | null = null;
    let secretChecked = false;
    const checkSecret = () => {
      if (secretChecked) return;
      if (manifest!.secret && !secret) throw new BackupError('the backup has no secret.key though its manifest says it does: the backup is damaged');
      options.acceptSecret(secret);
      secretChecked = true;
    };
    // Read from here on (tar-stream hands entries only to an iterator that exists when they arrive).
    const reading = pipeline(input, createGunzip(), extract);
    reading.catch(() => undefined); // seen through the entries' iteration
    for await (const item of extract) {
      const entry = item as unknown as AsyncIterable<Buffer> & { header: { name: string; type: string | null } };
      const name = entry.header.name;
      if (end) throw new BackupError(`unexpected entry ${JSON.stringify(name)} after the end of the backup`);
      if (entry.header.type !== 'file') throw new BackupError(`unexpected entry ${JSON.stringify(name)} (${entry.header.type}): not a Parley backup`);
      if (!manifest) {
        if (name !== MANIFEST) throw new BackupError(`not a Parley backup (it begins with ${JSON.stringify(name)}, not ${MANIFEST})`);
        manifest = parseJson<BackupManifest>(await readSmall(entry, name), name);
        checkManifest(manifest);
        if (manifest.uploads?.included) {
          for await (const object of options.storage.list('')) {
            throw new BackupError(`the target's file storage is not empty (it holds ${object.key}): restore only into a new data directory / empty uploads folder`);
          }
        }
        progress({ kind: 'step', text: `backup of ${manifest.createdAt} (Parley ${manifest.parleyVersion}, PostgreSQL ${manifest.postgresVersion}, migration ${manifest.migrations.at(-1)})` });
      } else if (name === SECRET) {
        const hex = (await readSmall(entry, name)).toString('utf8').trim();
        if (!/^([0-9a-f]{2}){32,}$/i.test(hex)) throw new BackupError('the backup secret.key is not a secret: the backup is damaged');
        secret = Buffer.from(hex, 'hex');
      } else if (name.startsWith(DATABASE_PREFIX)) {
        checkSecret();
        if (!runner) {
          await beginRestore(client);
          inTransaction = true;
          runner = new ScriptRunner(client, progress);
        }
        for await (const chunk of entry) await runner.feed(chunk as Buffer);
      } else if (name.startsWith(UPLOADS_PREFIX)) {
        if (!runner) throw new BackupError(`the backup holds files but no database: it is damaged`);
        const key = safeEntryPath(name.slice(UPLOADS_PREFIX.length));
        written.push(key);
        await options.storage.put(key, Readable.from(entry), { contentType: mimeLookup(key) || 'application/octet-stream' });
        progress({ kind: 'files', files: written.length, bytes: 0, done: false });
      } else if (name === END) {
        end = parseJson<BackupEnd>(await readSmall(entry, name), name);
      } else {
        throw new BackupError(`unexpected entry ${JSON.stringify(name)}: not a Parley backup`);
      }
    }
    await reading;
    if (!manifest) throw new BackupError('the file is empty: not a Parley backup');
    if (!runner) throw new BackupError('the backup holds no database: it is damaged or was cut short');
    if (!end) throw new BackupError('the backup has no end (end.json): the file was cut short');
    await runner.finish();
    // The end agrees with what was restored: nothing missing, nothing altered.
    if (runner.hash.digest('hex') !== end.sqlSha256 || runner.bytes !== end.sqlBytes) throw new BackupError("the backup's SQL script does not match its checksum: the backup is damaged");
    for (const table of end.tables ?? []) {
      if (runner.counts.get(table.name) !== table.rows) throw new BackupError(`table ${table.name}: ${runner.counts.get(table.name) ?? 0} rows restored, the backup says ${table.rows}: the backup is damaged`);
    }
    if (written.length !== end.files) throw new BackupError(`${written.length} files restored, the backup says ${end.files}: the backup is damaged`);
    progress({ kind: 'files', files: written.length, bytes: end.fileBytes, done: true });
    await commitRestore(client);
    inTransaction = false;
    progress({ kind: 'step', text: 'updating planner statistics (ANALYZE)' });
    await analyzeDatabase(client);
    return { manifest, end, secret };
  } catch (error) {
    runner?.abandon();
    extract.destroy();
    input.destroy();
    if (inTransaction) await rollbackRestore(client).catch(() => {});
    if (written.length > 0) await options.storage.delete(written).catch(() => {});
    const failure = explain(error);
    throw new BackupError(`${failure.message}; ${NOTHING_RESTORED}`);
  } finally {
    await client.end().catch(() => {});
  }
}
