// The server's own view of a load step, read from its Prometheus endpoint (PARLEY_METRICS_PORT): how long
// it took to answer the API requests (from its request event to the end of its answer: no time in the
// kernel's queue or the client's event loop) and how late its event loop ran. Compared with what the
// generator measured, it tells whether a tail is the server's or the load generator's.
import http from 'node:http';

/** Cumulative bucket counts of parley_http_request_duration_seconds by operation, and the lag gauges. */
export interface MetricsReading {
  /** operation → [upper bound in seconds (Infinity for +Inf), cumulative count][], ascending. */
  durations: Map<string, Array<[number, number]>>;
  /** nodejs_eventloop_lag_* gauges in seconds (prom-client resets them at every scrape). */
  lag: { p50: number; p99: number; max: number };
  /** The database pool at the moment of the scrape (all workers summed). */
  pool: { inUse: number; waiting: number };
}

export function scrapeMetrics(port: number): Promise<MetricsReading> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(parseMetrics(text)));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

function parseMetrics(text: string): MetricsReading {
  const durations = new Map<string, Array<[number, number]>>();
  const lag = { p50: Number.NaN, p99: Number.NaN, max: Number.NaN };
  const pool = { inUse: Number.NaN, waiting: Number.NaN };
  for (const line of text.split('\n')) {
    const bucket = /^parley_http_request_duration_seconds_bucket\{(.*)\} (\S+)$/.exec(line);
    if (bucket) {
      const labels = Object.fromEntries([...bucket[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      const le = labels['le'] === '+Inf' ? Number.POSITIVE_INFINITY : Number(labels['le']);
      const op = labels['operation'] ?? 'none';
      let rows = durations.get(op);
      if (!rows) durations.set(op, (rows = []));
      rows.push([le, Number(bucket[2])]);
      continue;
    }
    const gauge = /^nodejs_eventloop_lag_(p50|p99|max)_seconds(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (gauge) lag[gauge[1] as 'p50' | 'p99' | 'max'] = Number(gauge[2]);
    const db = /^parley_db_pool_(connections_in_use|waiting_queries)(?:\{[^}]*\})? (\S+)$/.exec(line);
    if (db) pool[db[1] === 'waiting_queries' ? 'waiting' : 'inUse'] = Number(db[2]);
  }
  for (const rows of durations.values()) rows.sort((a, b) => a[0] - b[0]);
  return { durations, lag, pool };
}

export interface ServerStep {
  /** API requests answered (all operations but `exclude`). */
  requests: number;
  /** Of them, answered in more than 100, 250 and 1,000 ms. */
  over100: number;
  over250: number;
  over1000: number;
  /** The bucket bound under which 99 % of them were answered, in ms (Infinity: beyond the last). */
  p99BoundMs: number;
  lag: MetricsReading['lag'];
}

/** Requests of one operation answered between two readings, and of them those over `ms`. */
export function operationOver(before: MetricsReading, after: MetricsReading, operation: string, ms: number): { requests: number; over: number } {
  const rows = after.durations.get(operation) ?? [];
  const earlier = new Map(before.durations.get(operation) ?? []);
  const delta = (le: number) => (rows.find((r) => r[0] === le)?.[1] ?? 0) - (earlier.get(le) ?? 0);
  const requests = delta(Number.POSITIVE_INFINITY);
  return { requests, over: requests - delta(ms / 1000) };
}

/** What happened between two readings, for every operation but the excluded ones (the long-polls). */
export function serverStep(before: MetricsReading, after: MetricsReading, exclude: string[]): ServerStep {
  const total = new Map<number, number>();
  for (const [op, rows] of after.durations) {
    if (exclude.includes(op)) continue;
    const earlier = new Map(before.durations.get(op) ?? []);
    for (const [le, n] of rows) total.set(le, (total.get(le) ?? 0) + n - (earlier.get(le) ?? 0));
  }
  const bounds = [...total.keys()].sort((a, b) => a - b);
  const requests = total.get(Number.POSITIVE_INFINITY) ?? 0;
  const under = (seconds: number) => total.get(seconds) ?? 0;
  let p99BoundMs = Number.NaN;
  for (const le of bounds) {
    if (requests > 0 && total.get(le)! >= requests * 0.99) {
      p99BoundMs = le * 1000;
      break;
    }
  }
  return { requests, over100: requests - under(0.1), over250: requests - under(0.25), over1000: requests - under(1), p99BoundMs, lag: after.lag };
}
