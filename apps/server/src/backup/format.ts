// The layout of a Parley backup (`pnpm manage backup`), shared by the writer (backup.ts) and the
// reader (restore.ts). One .tar.gz whose entries come in this order:
//
//   parley-backup/manifest.json         what it is: format, when, PostgreSQL version, migrations, what it covers
//   parley-backup/secret.key            the server secret (API keys are stored encrypted with it), hex
//   parley-backup/database/000001.sql   the database as one plain SQL script, cut into parts of
//   parley-backup/database/000002.sql   PART_BYTES (tar needs each entry's size before its bytes;
//   …                                   parts keep memory bounded without a temporary file)
//   parley-backup/uploads/<key>         each uploaded file of local storage, under its storage key
//   parley-backup/end.json              rows per table, files, the script's SHA-256: the archive is whole
//
// The script is what psql replays into an empty database, as pg_dump's plain format:
//   tar -xzOf backup.tar.gz --wildcards 'parley-backup/database/*' | psql -v ON_ERROR_STOP=1 --single-transaction "$DATABASE_URL"
// (the schema is the migrations' own SQL in order; then one `COPY table (columns) FROM stdin;` block
// per table ending with `\.`, under session_replication_role = replica so triggers do not add rows
// twice; then setval for every sequence).

export const ROOT = 'parley-backup';
export const MANIFEST = `${ROOT}/manifest.json`;
export const SECRET = `${ROOT}/secret.key`;
export const DATABASE_PREFIX = `${ROOT}/database/`;
export const UPLOADS_PREFIX = `${ROOT}/uploads/`;
export const END = `${ROOT}/end.json`;
export const FORMAT = 'parley-backup';
export const FORMAT_VERSION = 1;
/** Size of one part of the SQL script: what the writer holds in memory at most (twice, while writing one). */
export const PART_BYTES = 8 * 1024 * 1024;

export const partName = (index: number) => `${DATABASE_PREFIX}${String(index).padStart(6, '0')}.sql`;

export interface BackupManifest {
  format: typeof FORMAT;
  version: number;
  createdAt: string;
  parleyVersion: string;
  postgresVersion: string;
  /** Applied migrations, in order: the schema the script creates. */
  migrations: string[];
  /** Uploaded files: `local` storage is in the archive; an S3 bucket is not (back it up with its own tools). */
  uploads: { storage: 'local' | 's3'; included: boolean };
  secret: boolean;
}

export interface BackupEnd {
  /** Rows per table, in the script's order. */
  tables: Array<{ name: string; rows: number }>;
  sequences: number;
  files: number;
  fileBytes: number;
  sqlBytes: number;
  sqlSha256: string;
}

/** A backup refused or failed: the message says what and what to do; nothing was changed. */
export class BackupError extends Error {}

/** What backup and restore report as they go (the command prints it). */
export type BackupProgress =
  | { kind: 'table'; table: string; rows: number; done: boolean }
  | { kind: 'files'; files: number; bytes: number; done: boolean }
  | { kind: 'step'; text: string };
