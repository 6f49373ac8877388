// `pnpm start`: runs Parley, one server process per core (PARLEY_WORKERS) under a primary process that
// owns the database: cluster/primary.ts (start-up, signals, replacing a worker that dies) and
// cluster/worker.ts (a server process). Without DATABASE_URL an embedded PostgreSQL keeps its data
// under $PARLEY_DATA_DIR/postgres (default ./.parley).
import cluster from 'node:cluster';

const startedAt = performance.now();
if (cluster.isPrimary) {
  const { runPrimary } = await import('./cluster/primary.ts');
  // Workers run the script this process was started with (node:cluster's default): scripts/start.mjs
  // under `pnpm start` (it finds the build fresh and loads it), src/main.ts under tsx, or the built
  // bundle. Not import.meta.url: in the bundle it names this source file (scripts/build.mjs).
  await runPrimary(process.argv[1]!, startedAt);
} else {
  const { runWorker } = await import('./cluster/worker.ts');
  await runWorker();
}
