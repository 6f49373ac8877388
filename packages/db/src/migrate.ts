// Offline migrations through Prisma's own schema engine compiled to WebAssembly. The migration files
// stay in Prisma's standard layout (prisma/migrations/<timestamp>_<name>/migration.sql) and history
// table (_prisma_migrations), so the official CLI can take over wherever it can download its engine.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';

const require = createRequire(import.meta.url);
const packageDir = fileURLToPath(new URL('..', import.meta.url));
export const schemaPath = path.join(packageDir, 'prisma', 'schema.prisma');
export const migrationsDir = path.join(packageDir, 'prisma', 'migrations');
const noFilter = { externalTables: [], externalEnums: [] };

function loadMigrationsList() {
  const lockPath = path.join(migrationsDir, 'migration_lock.toml');
  const directories = existsSync(migrationsDir)
    ? readdirSync(migrationsDir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()
    : [];
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: existsSync(lockPath) ? readFileSync(lockPath, 'utf8') : null },
    shadowDbInitScript: '',
    migrationDirectories: directories.map((name) => {
      const file = path.join(migrationsDir, name, 'migration.sql');
      return {
        path: name,
        migrationFile: {
          path: 'migration.sql',
          content: existsSync(file)
            ? { tag: 'ok' as const, value: readFileSync(file, 'utf8') }
            : { tag: 'error' as const, value: 'missing migration.sql' },
        },
      };
    }),
  };
}

type SchemaEngineModule = typeof import('@prisma/schema-engine-wasm');
let engineModule: Promise<SchemaEngineModule> | undefined;

/**
 * Loads the engine's wasm-bindgen glue and instantiates the WebAssembly module ourselves (what the
 * package's entry point does through a `.wasm` import), so no Node flag is needed.
 */
function loadSchemaEngine(): Promise<SchemaEngineModule> {
  engineModule ??= (async () => {
    const glue = (await import('@prisma/schema-engine-wasm/schema_engine_bg')) as SchemaEngineModule & {
      __wbg_set_wasm(exports: unknown): void;
    };
    // The WebAssembly global is not in the ES lib typings this project compiles against.
    const wasmApi = (globalThis as unknown as { WebAssembly: { instantiate(bytes: Buffer, imports: object): Promise<{ instance: { exports: Record<string, unknown> } }> } }).WebAssembly;
    const wasmPath = path.join(path.dirname(require.resolve('@prisma/schema-engine-wasm')), 'schema_engine_bg.wasm');
    const { instance } = await wasmApi.instantiate(readFileSync(wasmPath), { './schema_engine_bg.js': glue });
    glue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return glue;
  })();
  return engineModule;
}

/**
 * PrismaPg's executeScript splits a migration on every `;`, which breaks any statement with a body
 * (a PL/pgSQL function, a DO block). PostgreSQL runs a parameterless multi-statement script as one
 * simple query, so the script is sent whole instead.
 */
function wholeScripts(factory: PrismaPg): PrismaPg {
  const wrap = <A extends { executeScript(script: string): Promise<void>; underlyingDriver(): unknown }>(adapter: A): A => {
    const original = adapter as A & { onError?(error: unknown): never };
    adapter.executeScript = async (script: string) => {
      try {
        await (adapter.underlyingDriver() as pg.Pool).query(script);
      } catch (error) {
        if (typeof original.onError === 'function') original.onError(error);
        throw error;
      }
    };
    return adapter;
  };
  const connect = factory.connect.bind(factory);
  factory.connect = async () => wrap(await connect());
  const shadow = factory.connectToShadowDb?.bind(factory);
  if (shadow) factory.connectToShadowDb = async () => wrap(await shadow());
  return factory;
}

async function withEngine<T>(connectionString: string, run: (engine: import('@prisma/schema-engine-wasm').SchemaEngine) => Promise<T>): Promise<T> {
  const { SchemaEngine } = await loadSchemaEngine();
  const schema = readFileSync(schemaPath, 'utf8');
  // Our own pool, ended afterwards: the engine holds a session advisory lock while migrating, and a
  // pool left open would make the next migration run wait for that lock.
  const pool = new pg.Pool({ connectionString, max: 2 });
  const adapter = bindMigrationAwareSqlAdapterFactory(wholeScripts(new PrismaPg(pool)));
  const engine = await SchemaEngine.new({ datamodels: [[schemaPath, schema]] }, () => {}, adapter);
  try {
    return await run(engine);
  } finally {
    engine.free();
    await pool.end();
  }
}

/** Names of the migrations in prisma/migrations that the database has not finished applying. */
async function pendingMigrations(connectionString: string): Promise<string[]> {
  const all = loadMigrationsList().migrationDirectories.map((d) => d.path);
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const table = await client.query(`SELECT to_regclass('_prisma_migrations') AS t`);
    if (!table.rows[0]?.t) return all;
    const done = await client.query(
      'SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    const applied = new Set(done.rows.map((row: { migration_name: string }) => row.migration_name));
    return all.filter((name) => !applied.has(name));
  } finally {
    await client.end();
  }
}

/**
 * Applies every migration not yet applied; returns the names applied now. Concurrent callers (several
 * server processes starting together) are serialised by the engine's advisory lock. The engine is only
 * loaded when something is pending, so an up-to-date start costs one query.
 */
export async function applyMigrations(connectionString: string): Promise<string[]> {
  if ((await pendingMigrations(connectionString)).length === 0) return [];
  return withEngine(connectionString, async (engine) => {
    const out = await engine.applyMigrations({ migrationsList: loadMigrationsList(), filters: noFilter });
    return out.appliedMigrationNames;
  });
}

/**
 * Writes a new migration folder with the SQL that takes `previousSchema` (the datamodel the existing
 * migrations produce; null when there are none) to the current prisma/schema.prisma. The WebAssembly
 * engine cannot use a shadow database here, so the starting point is given as a datamodel.
 */
export async function createMigration(connectionString: string, name: string, previousSchema: string | null): Promise<string | null> {
  return withEngine(connectionString, async (engine) => {
    const current = [{ path: schemaPath, content: readFileSync(schemaPath, 'utf8') }];
    const diff = await engine.diff({
      from: previousSchema === null ? { tag: 'empty' } : { tag: 'schemaDatamodel', files: [{ path: schemaPath, content: previousSchema }] },
      to: { tag: 'schemaDatamodel', files: current },
      script: true,
      exitCode: true,
      filters: noFilter,
    });
    if (diff.exitCode !== 2 || !diff.stdout) return null;
    const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
    const generatedName = `${stamp}_${name}`;
    const dir = path.join(migrationsDir, generatedName);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'migration.sql'), diff.stdout);
    const lockPath = path.join(migrationsDir, 'migration_lock.toml');
    if (!existsSync(lockPath)) {
      writeFileSync(lockPath, '# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "postgresql"\n');
    }
    return generatedName;
  });
}
