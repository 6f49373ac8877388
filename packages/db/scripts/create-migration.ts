// pnpm --filter @parley/db migration:create <name>
// Creates prisma/migrations/<timestamp>_<name>/migration.sql offline. The starting point is the schema
// as last committed to git (the state the existing migrations produce); the target is the working copy
// of prisma/schema.prisma. Commit the schema together with its migration.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../src/embedded.ts';
import { createMigration, migrationsDir, schemaPath } from '../src/migrate.ts';

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: migration:create <snake_case_name>');
  process.exit(2);
}
const hasMigrations = existsSync(migrationsDir) && readdirSync(migrationsDir).some((entry) => /^\d+_/.test(entry));
let previousSchema: string | null = null;
if (hasMigrations) {
  const relative = path.relative(execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim(), schemaPath);
  previousSchema = execFileSync('git', ['show', `HEAD:${relative}`], { encoding: 'utf8' });
}
const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-migrate-'));
const db = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), ephemeral: true });
try {
  const created = await createMigration(db.adminUrl, name, previousSchema);
  console.log(created ? `created prisma/migrations/${created}` : 'schema unchanged: no migration created');
} finally {
  await db.stop();
  rmSync(dir, { recursive: true, force: true });
}
