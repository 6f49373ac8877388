// One server process without the node:cluster primary (for measuring a single process in isolation,
// or while `pnpm start` cannot be used): DATABASE_URL must be set; the organization must exist.
//
//   PARLEY_BENCH_SERVER_CMD='node --expose-gc --import tsx bench/lib/org-sim-server.ts' npx tsx bench/organization.bench.ts
import { loadConfig } from '../../apps/server/src/config.ts';
import { createDeps, listen } from '../../apps/server/src/server.ts';

const config = loadConfig();
const deps = await createDeps(config, process.env.DATABASE_URL!);
const running = await listen(deps, config.host, config.port);
console.log(`[org-sim-server] listening on ${running.url}`);
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    if (stopping) process.exit(0);
    stopping = true;
    void running.close({ drainMs: 2_000 }).finally(() => process.exit(0));
  });
// SIGUSR2: a full collection, then the heap's figures on stdout (bench/organization.bench.ts reads them
// to tell the memory per parked poll; RSS alone does not shrink when garbage is collected).
process.on('SIGUSR2', () => {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  console.log(`[org-sim-server] memory ${JSON.stringify({ heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss, collected: gc !== undefined })}`);
});
