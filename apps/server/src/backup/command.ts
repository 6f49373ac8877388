// `pnpm manage backup --file <out.tar.gz>` and `pnpm manage restore --file <backup.tar.gz>`, against
// the server's database (DATABASE_URL, or the embedded PostgreSQL of $PARLEY_DATA_DIR) and file
// storage. They run before manage.ts opens Parley's dependencies: a restore needs the database
// untouched (no migrations applied, no server secret made up).
import { createReadStream, createWriteStream, existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Config } from '../config.ts';
import { openDatabase } from '../server.ts';
import { createStorage } from '../storage/index.ts';
import { loadOrCreateSecret } from '../security/secrets.ts';
import { createBackup } from './backup.ts';
import { restoreBackup } from './restore.ts';
import { BackupError, type BackupProgress } from './format.ts';

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

/** Progress on the terminal (stderr): one line per table, updated in place on a terminal. */
function printer(): (p: BackupProgress) => void {
  const tty = process.stderr.isTTY === true;
  return (p) => {
    if (p.kind === 'step') process.stderr.write(`${p.text}\n`);
    else if (p.kind === 'table') {
      if (p.done) process.stderr.write(`${tty ? '\r\x1b[K' : ''}  ${p.table}: ${p.rows} rows\n`);
      else if (tty) process.stderr.write(`\r\x1b[K  ${p.table}: ${p.rows} rows…`);
    } else if (p.done) process.stderr.write(`${tty ? '\r\x1b[K' : ''}  files: ${p.files} (${mib(p.bytes)})\n`);
    else if (tty) process.stderr.write(`\r\x1b[K  files: ${p.files}…`);
  };
}

/** The server secret in use, without making one up: PARLEY_SECRET_KEY, else $PARLEY_DATA_DIR/secret.key. */
function currentSecret(config: Config): Buffer | null {
  if (config.secretKey || existsSync(path.join(config.dataDir, 'secret.key'))) return loadOrCreateSecret(config.secretKey, config.dataDir);
  return null;
}

export async function runBackupCommand(config: Config, file: string): Promise<void> {
  const database = await openDatabase(config);
  const storage = await createStorage(config.storage);
  // Written beside the target and renamed into place once whole: a failed backup leaves no file that looks like one.
  const partial = `${file}.partial`;
  const started = performance.now();
  try {
    const output = createWriteStream(partial, { mode: 0o600 });
    const closed = once(output, 'close');
    const summary = await createBackup({ databaseUrl: database.url, storage, secret: currentSecret(config), onProgress: printer() }, output);
    await closed;
    renameSync(partial, file);
    const rows = summary.tables.reduce((n, t) => n + t.rows, 0);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `backup written to ${file}: ${summary.tables.length} tables, ${rows} rows, ${summary.sequences} sequences, ` +
        `${summary.files} files (${mib(summary.fileBytes)}); SQL ${mib(summary.sqlBytes)}, archive ${mib(summary.size)} in ${seconds} s; sha256 ${summary.sha256}` +
        (config.storage.kind === 's3' ? `\nuploaded files are in the S3 bucket ${config.storage.bucket}, not in this backup: back the bucket up with its own tools` : ''),
    );
  } catch (error) {
    rmSync(partial, { force: true });
    throw error instanceof Error && !(error instanceof BackupError) ? new BackupError(`backup failed: ${error.message}`) : error;
  } finally {
    await storage.close();
    await database.stop();
  }
}

export async function runRestoreCommand(config: Config, file: string): Promise<void> {
  if (!existsSync(file)) throw new BackupError(`no file ${file}`);
  const secretFile = path.join(config.dataDir, 'secret.key');
  const database = await openDatabase(config);
  const storage = await createStorage(config.storage);
  const started = performance.now();
  try {
    const { end, secret, manifest } = await restoreBackup(
      {
        databaseUrl: database.url,
        storage,
        onProgress: printer(),
        acceptSecret(backupSecret) {
          if (!backupSecret) return;
          if (config.secretKey) {
            if (!loadOrCreateSecret(config.secretKey, config.dataDir).equals(backupSecret)) {
              throw new BackupError('PARLEY_SECRET_KEY is not the secret of the backed-up server (API keys are stored encrypted with it): unset it to use the backup\'s (written to the data directory), or set it to the backed-up server\'s');
            }
          } else if (existsSync(secretFile) && !Buffer.from(readFileSync(secretFile, 'utf8').trim(), 'hex').equals(backupSecret)) {
            throw new BackupError(`${secretFile} holds another server secret than the backup's (API keys are stored encrypted with it): restore into a new data directory, or move that file away`);
          }
        },
      },
      createReadStream(file),
    );
    if (secret && !config.secretKey && !existsSync(secretFile)) writeFileSync(secretFile, secret.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    const rows = end.tables.reduce((n, t) => n + t.rows, 0);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `restored ${file} (made ${manifest.createdAt}): ${end.tables.length} tables, ${rows} rows, ${end.files} files in ${seconds} s` +
        (manifest.uploads.included ? '' : `\nthe backup does not hold uploaded files (they were in ${manifest.uploads.storage} storage): restore them with that storage's own tools`),
    );
  } finally {
    await storage.close();
    await database.stop();
  }
}
