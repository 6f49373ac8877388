// `pnpm manage backup`: a logical backup made by Parley itself (the embedded PostgreSQL binaries have
// no pg_dump), consistent and streamed. One REPEATABLE READ READ ONLY transaction reads every table
// (as pg_dump does): one snapshot, while the server keeps serving. Each table goes out with
// `COPY … TO STDOUT` (pg-copy-streams) straight into the archive's SQL parts; no table is ever held in
// memory, only the part being filled (format.ts PART_BYTES). Uploaded files of local storage follow,
// each streamed from storage. Layout and replay: format.ts.
import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import pg from 'pg';
import { createTarGzWriter, type TarGzWriter } from '../export/tarball.ts';
import type { ObjectStorage } from '../storage/index.ts';
import { ZULIP_VERSION } from '../version.ts';
import {
  appliedMigrations,
  beginSnapshot,
  copyTableOut,
  endSnapshot,
  listSequences,
  listTables,
  lockTables,
  quoteIdent,
  type BackupSequence,
} from '../data/backup.repo.ts';
import { END, FORMAT, FORMAT_VERSION, MANIFEST, PART_BYTES, partName, SECRET, UPLOADS_PREFIX, type BackupEnd, type BackupManifest, type BackupProgress } from './format.ts';

export interface BackupOptions {
  databaseUrl: string;
  /** The server's file storage: local storage is included, S3 is not. */
  storage: ObjectStorage;
  /** The server secret in use (null when none was ever made). */
  secret: Buffer | null;
  onProgress?: (progress: BackupProgress) => void;
}

export interface BackupSummary extends BackupEnd {
  /** Bytes of the archive (compressed). */
  size: number;
  sha256: string;
}

/** The SQL script, cut into archive entries of PART_BYTES as it is written. */
class ScriptParts {
  private chunks: Buffer[] = [];
  private pending = 0;
  private index = 0;
  readonly hash = createHash('sha256');
  bytes = 0;

  constructor(private readonly tar: TarGzWriter) {}

  async write(data: Buffer | string): Promise<void> {
    const chunk = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    this.chunks.push(chunk);
    this.pending += chunk.length;
    this.bytes += chunk.length;
    this.hash.update(chunk);
    if (this.pending >= PART_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending === 0) return;
    const part = Buffer.concat(this.chunks, this.pending);
    this.chunks = [];
    this.pending = 0;
    await this.tar.addBuffer(partName(++this.index), part);
  }
}

const HEADER = (manifest: BackupManifest) => `-- Parley backup (format ${manifest.version}), made ${manifest.createdAt} by Parley ${manifest.parleyVersion} from PostgreSQL ${manifest.postgresVersion}.
-- The schema is that of migration ${manifest.migrations.at(-1) ?? '(none)'}. Into an EMPTY database, with a superuser role:
--   tar -xzOf BACKUP.tar.gz --wildcards 'parley-backup/database/*' | psql -v ON_ERROR_STOP=1 --single-transaction "$DATABASE_URL"
-- or, with what else the backup holds (secret, files): pnpm manage restore --file BACKUP.tar.gz

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SET check_function_bodies = false;
SET client_min_messages = warning;
SET row_security = off;
SELECT pg_catalog.set_config('search_path', 'public', false);

-- Prisma's migration history (its own table, made by its migration engine).
CREATE TABLE "_prisma_migrations" (
    "id" VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum" VARCHAR(64) NOT NULL,
    "finished_at" TIMESTAMPTZ,
    "migration_name" VARCHAR(255) NOT NULL,
    "logs" TEXT,
    "rolled_back_at" TIMESTAMPTZ,
    "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count" INTEGER NOT NULL DEFAULT 0
);
`;

const setval = (s: BackupSequence) =>
  s.lastValue === null
    ? `SELECT pg_catalog.setval('public.${quoteIdent(s.name)}', 1, false);\n`
    : `SELECT pg_catalog.setval('public.${quoteIdent(s.name)}', ${s.lastValue}, true);\n`;

/** Writes the backup to `output` (a .tar.gz); resolves once every byte is written. */
export async function createBackup(options: BackupOptions, output: Writable): Promise<BackupSummary> {
  const progress = options.onProgress ?? (() => {});
  const tar = createTarGzWriter(output);
  const client = new pg.Client({ connectionString: options.databaseUrl, application_name: 'parley backup' });
  let connected = false;
  try {
    await client.connect();
    connected = true;
    const { postgresVersion } = await beginSnapshot(client);
    const tables = await listTables(client);
    await lockTables(client, tables);
    const migrations = await appliedMigrations(client);
    const includeFiles = options.storage.kind === 'local';
    const manifest: BackupManifest = {
      format: FORMAT,
      version: FORMAT_VERSION,
      createdAt: new Date().toISOString(),
      parleyVersion: ZULIP_VERSION,
      postgresVersion,
      migrations: migrations.map((m) => m.name),
      uploads: { storage: options.storage.kind, included: includeFiles },
      secret: options.secret !== null,
    };
    await tar.addBuffer(MANIFEST, Buffer.from(JSON.stringify(manifest, null, 2) + '\n'));
    if (options.secret) await tar.addBuffer(SECRET, Buffer.from(options.secret.toString('hex') + '\n'));

    // The script: settings, schema (the migrations), rows, sequences.
    const script = new ScriptParts(tar);
    await script.write(HEADER(manifest));
    for (const m of migrations) await script.write(`\n-- Migration ${m.name}\n${m.sql.trimEnd()}\n`);
    await script.write('\n-- Rows, as they were in one snapshot. Triggers stay off (they would add derived rows twice) and so do foreign-key checks.\nSET session_replication_role = replica;\n');
    const counts: BackupEnd['tables'] = [];
    for (const table of tables) {
      await script.write(`\nCOPY public.${quoteIdent(table.name)} (${table.columns.map(quoteIdent).join(', ')}) FROM stdin;\n`);
      let rows = 0;
      let shown = 0;
      progress({ kind: 'table', table: table.name, rows, done: false });
      for await (const chunk of copyTableOut(client, table)) {
        const data = chunk as Buffer;
        // COPY's text format escapes newlines inside values: each newline ends one row.
        for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, i + 1)) rows++;
        await script.write(data);
        if (rows - shown >= 10_000) {
          shown = rows;
          progress({ kind: 'table', table: table.name, rows, done: false });
        }
      }
      await script.write('\\.\n');
      counts.push({ name: table.name, rows });
      progress({ kind: 'table', table: table.name, rows, done: true });
    }
    // Sequences are read in the same transaction: their values are never below the ids the snapshot holds.
    const sequences = await listSequences(client);
    await script.write('\nSET session_replication_role = DEFAULT;\n\n-- Sequences\n');
    for (const s of sequences) await script.write(setval(s));
    await script.write('\n-- End of the Parley backup script.\n');
    await script.flush();
    await endSnapshot(client);
    await client.end();
    connected = false;

    // Files: after the snapshot, so every file the rows refer to is there (unless deleted meanwhile).
    let files = 0;
    let fileBytes = 0;
    if (includeFiles) {
      progress({ kind: 'files', files, bytes: fileBytes, done: false });
      for await (const object of options.storage.list('')) {
        const read = await options.storage.get(object.key);
        if (!read || 'unsatisfiable' in read) continue; // deleted since it was listed
        await tar.addStream(`${UPLOADS_PREFIX}${object.key}`, read.size, read.body);
        files++;
        fileBytes += read.size;
        if (files % 100 === 0) progress({ kind: 'files', files, bytes: fileBytes, done: false });
      }
      progress({ kind: 'files', files, bytes: fileBytes, done: true });
    }
    const end: BackupEnd = { tables: counts, sequences: sequences.length, files, fileBytes, sqlBytes: script.bytes, sqlSha256: script.hash.digest('hex') };
    await tar.addBuffer(END, Buffer.from(JSON.stringify(end, null, 2) + '\n'));
    const { size, sha256 } = await tar.finish();
    return { ...end, size, sha256 };
  } catch (error) {
    tar.abort(error instanceof Error ? error : new Error(String(error)));
    throw error;
  } finally {
    if (connected) await client.end().catch(() => {});
  }
}
