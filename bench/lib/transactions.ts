// The longest transaction a bench's server holds: pg_stat_activity sampled from a connection of its
// own (every SAMPLE_EVERY_MS), each transaction keyed by backend and start time, its largest age kept.
import { pg } from './messages-seed.ts';
import { sleep } from './processes.ts';

/** How often pg_stat_activity is read. */
export const SAMPLE_EVERY_MS = 20;

/** Samples the other client backends' transactions until stop(): the longest age seen, how many, how many samples. */
export function sampleTransactions(databaseUrl: string): { stop(): Promise<{ longestMs: number; transactions: number; samples: number }> } {
  const client = new pg.Client({ connectionString: databaseUrl });
  const ages = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async () => {
    await client.connect();
    while (running) {
      const { rows } = await client.query<{ pid: number; started: string; ms: number }>(
        `SELECT pid, xact_start::text AS started, extract(epoch FROM clock_timestamp() - xact_start) * 1000 AS ms
         FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND xact_start IS NOT NULL`,
      );
      samples++;
      for (const r of rows) {
        const key = `${r.pid} ${r.started}`;
        ages.set(key, Math.max(ages.get(key) ?? 0, Number(r.ms)));
      }
      await sleep(SAMPLE_EVERY_MS);
    }
    await client.end();
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { longestMs: Math.max(0, ...ages.values()), transactions: ages.size, samples };
    },
  };
}
