// pnpm db:migrate — applies pending migrations to DATABASE_URL.
import { applyMigrations } from './migrate.ts';

const url = process.env.DATABASE_URL;
if (!url) {
  console.error('DATABASE_URL is not set (the server migrates its embedded database itself at start).');
  process.exit(2);
}
const applied = await applyMigrations(url);
console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
