// The server's Prometheus metrics (prom-client), kept in prom-client's default registry: the one the
// endpoint of a single process serves (metrics/server.ts) and the one each node:cluster worker reports
// to the primary, which serves them summed (prom-client's AggregatorRegistry).
//
// Counters and histograms are counted where things happen, through the small functions below (one
// call at each place, no I/O). Gauges are read when scraped: polls parked in this process, its
// database pool, and one statement for the installation-wide counts (event queues, waiting jobs).
//
// Labels are bounded: operation ids of the spec (never paths or ids), status codes, job names, and a
// few fixed outcomes.
import cluster from 'node:cluster';
import client from 'prom-client';
import type { AppDeps } from '../deps.ts';
import { poolUsage, readDatabaseCounts, type DatabaseCounts } from '../data/metrics.repo.ts';
import { JOB_NAMES } from '../jobs/queue.ts';

const { Counter, Gauge, register } = client;

/**
 * A metric of the default registry: the one already there under that name (this module evaluated again
 * in the same process, as test runners do), or a new one.
 */
function metric<T>(name: string, make: () => T): T {
  return (register.getSingleMetric(name) as T | undefined) ?? make();
}

// ---------------------------------------------------------------------------------------------
// HTTP

// Counted on every request, so kept in plain numbers (a map lookup and a few additions per request)
// rather than prom-client's Counter and Histogram, which hash and validate the label set on every call
// (about 35× the cost per request in a micro-benchmark); prom-client reads them when scraped, through two
// metrics of the registry that compute their values then (in prom-client's own shapes, so that a
// cluster's primary sums them as it sums any counter or histogram).

/** Upper bounds of the latency histogram, in seconds. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

interface OperationFigures {
  /** Requests by status code. */
  statuses: Map<number, number>;
  /** Requests per bucket (not cumulative); the last one is +Inf. */
  buckets: number[];
  sum: number;
  count: number;
}
const HTTP_FIGURES = Symbol.for('parley.metrics.http');
const operations: Map<string, OperationFigures> = ((globalThis as typeof globalThis & { [HTTP_FIGURES]?: Map<string, OperationFigures> })[HTTP_FIGURES] ??= new Map());

/**
 * One answered request (http/logging.ts, when its response closes): `operation` is the spec's
 * operationId (undefined outside the API, or for a path the API does not have).
 */
export function observeRequest(operation: string | undefined, status: number, seconds: number): void {
  const op = operation ?? 'none';
  let figures = operations.get(op);
  if (figures === undefined) {
    figures = { statuses: new Map(), buckets: new Array<number>(DURATION_BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
    operations.set(op, figures);
  }
  figures.statuses.set(status, (figures.statuses.get(status) ?? 0) + 1);
  let bucket = 0;
  while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]!) bucket++;
  figures.buckets[bucket]!++;
  figures.sum += seconds;
  figures.count++;
}

interface MetricValue {
  metricName?: string;
  labels: Record<string, string>;
  value: number;
}

/** A metric of the registry whose values are computed when it is scraped. */
function registerComputed(name: string, help: string, type: 'counter' | 'histogram', values: () => MetricValue[]): void {
  if (register.getSingleMetric(name)) return;
  const computed = {
    name,
    help,
    type,
    aggregator: 'sum',
    get: () => Promise.resolve({ name, help, type, aggregator: 'sum', values: values() }),
    reset: () => operations.clear(),
  };
  register.registerMetric(computed as unknown as client.Metric);
}

registerComputed(
  'parley_http_requests_total',
  'HTTP requests answered, by API operation (spec operationId; "none" outside the API) and status code (499: the client went away first).',
  'counter',
  () => {
    const values: MetricValue[] = [];
    for (const [operation, figures] of operations) {
      for (const [status, n] of figures.statuses) values.push({ labels: { operation, status: String(status) }, value: n });
    }
    return values;
  },
);
registerComputed(
  'parley_http_request_duration_seconds',
  'Time from the request to the end of its answer, by API operation (GET /events includes the long-poll wait).',
  'histogram',
  () => {
    const name = 'parley_http_request_duration_seconds';
    const values: MetricValue[] = [];
    for (const [operation, figures] of operations) {
      let cumulative = 0;
      for (let i = 0; i <= DURATION_BUCKETS.length; i++) {
        cumulative += figures.buckets[i]!;
        values.push({ metricName: `${name}_bucket`, labels: { le: i < DURATION_BUCKETS.length ? String(DURATION_BUCKETS[i]) : '+Inf', operation }, value: cumulative });
      }
      values.push({ metricName: `${name}_sum`, labels: { operation }, value: figures.sum });
      values.push({ metricName: `${name}_count`, labels: { operation }, value: figures.count });
    }
    return values;
  },
);

// ---------------------------------------------------------------------------------------------
// Events

const eventsPublished = metric(
  'parley_events_published_total',
  () => new Counter({ name: 'parley_events_published_total', help: 'Events published: stored (committed with their change) or ephemeral (typing, not stored).', labelNames: ['kind'] as const }),
);
const storedEvents = eventsPublished.labels('stored');
const ephemeralEvents = eventsPublished.labels('ephemeral');
const eventsDelivered = metric('parley_events_delivered_total', () => new Counter({ name: 'parley_events_delivered_total', help: 'Events answered to GET /events polls.' }));

/** Stored events, once their transaction committed (events/bus.ts). */
export function countStoredEvents(n: number): void {
  storedEvents.inc(n);
}
/** One ephemeral event published (events/bus.ts). */
export function countEphemeralEvent(): void {
  ephemeralEvents.inc();
}
/** Events in one GET /events answer. */
export function countEventsDelivered(n: number): void {
  if (n > 0) eventsDelivered.inc(n);
}

// ---------------------------------------------------------------------------------------------
// Jobs, e-mail, push

const jobFailures = metric(
  'parley_job_failures_total',
  () => new Counter({ name: 'parley_job_failures_total', help: 'Background jobs that failed (each is retried with backoff until its retry limit), by job name.', labelNames: ['job'] as const }),
);
const emails = metric(
  'parley_emails_total',
  () =>
    new Counter({
      name: 'parley_emails_total',
      help: 'Outbox e-mail deliveries by outcome: sent, kept (no SMTP server configured), failed (retried), already-done, missing.',
      labelNames: ['outcome'] as const,
    }),
);
const pushes = metric(
  'parley_push_notifications_total',
  () =>
    new Counter({
      name: 'parley_push_notifications_total',
      help: 'Push notification deliveries by outcome: sent, rejected (by APNs), failed (gave up after the last attempt), retry (APNs unreachable or busy: tried again later), error (tried again later), or why none was sent (recorded: no APNs configured or not an iOS device; dropped; skipped: already read; gone).',
      labelNames: ['outcome'] as const,
    }),
);

export function countJobFailures(job: string, n = 1): void {
  jobFailures.inc({ job }, n);
}
export function countEmail(outcome: string): void {
  emails.inc({ outcome });
}
export function countPush(outcome: string): void {
  pushes.inc({ outcome });
}

// ---------------------------------------------------------------------------------------------
// Gauges read at scrape time, from the servers of this process (one in production; tests run several)

interface Source {
  /** The registration lane is absent from stand-ins (tests) that have none. */
  deps: Pick<AppDeps, 'db' | 'delivery' | 'logger'> & Partial<Pick<AppDeps, 'registrations'>>;
}
/**
 * The state the gauges' collect() functions read, one per process like the registry they are in (kept
 * on globalThis, so that this module evaluated again finds the gauges registered the first time).
 */
interface SharedState {
  sources: Set<Source>;
  /** The installation-wide counts being read for the current scrape. */
  reading: Promise<DatabaseCounts | null> | null;
  processMetrics: boolean;
  workerResponder: boolean;
}
const SHARED = Symbol.for('parley.metrics');
const shared: SharedState = ((globalThis as typeof globalThis & { [SHARED]?: SharedState })[SHARED] ??= {
  sources: new Set(),
  reading: null,
  processMetrics: false,
  workerResponder: false,
});
const sources = shared.sources;

/** The installation-wide counts: one statement per scrape, shared by the gauges that show them. */
function databaseCounts(): Promise<DatabaseCounts | null> {
  const first = sources.values().next().value;
  if (!first) return Promise.resolve(null);
  shared.reading ??= readDatabaseCounts(first.deps.db)
    .catch((error: unknown) => {
      first.deps.logger.warn({ err: error }, 'metrics: reading the database counts failed');
      return null;
    })
    .finally(() => {
      // The gauges of one scrape call in the same turn; the next scrape reads again.
      setImmediate(() => (shared.reading = null));
    });
  return shared.reading;
}

/** A gauge summing a figure over this process's servers (sources without the figure add nothing). */
const summedGauge = (name: string, help: string, read: (deps: Source['deps']) => number | null) =>
  metric(
    name,
    () =>
      new Gauge({
        name,
        help,
        collect() {
          let total = 0;
          for (const s of sources) total += read(s.deps) ?? 0;
          this.set(total);
        },
      }),
  );
summedGauge('parley_event_polls_parked', 'GET /events long-polls waiting in this process (summed over the processes of a cluster).', (d) => d.delivery.parked);

metric(
  'parley_event_queues',
  () =>
    new Gauge({
      name: 'parley_event_queues',
      help: 'Event queues registered and not yet deleted or expired, in the installation (the database).',
      // Every process reads the same database: a cluster shows one process's figure, not the sum.
      aggregator: 'first',
      async collect() {
        const counts = await databaseCounts();
        if (counts) this.set(counts.eventQueues);
        else this.reset();
      },
    }),
);

const jobGauge = (name: string, help: string, field: 'due' | 'scheduled') =>
  metric(
    name,
    () =>
      new Gauge({
        name,
        help,
        labelNames: ['job'] as const,
        aggregator: 'first',
        async collect() {
          const counts = await databaseCounts();
          this.reset();
          if (!counts) return;
          for (const job of JOB_NAMES) this.set({ job }, 0);
          for (const row of counts.jobs) this.set({ job: row.name }, row[field]);
        },
      }),
  );
jobGauge('parley_job_queue_depth', 'Background jobs due and waiting for a worker, by job name (the installation).', 'due');
jobGauge('parley_jobs_scheduled', 'Background jobs waiting for a later start time (scheduled messages, retries after backoff), by job name.', 'scheduled');

const poolGauge = (name: string, help: string, read: (usage: NonNullable<ReturnType<typeof poolUsage>>) => number) =>
  summedGauge(name, help, (deps) => {
    const usage = poolUsage(deps.db);
    return usage ? read(usage) : null;
  });
poolGauge('parley_db_pool_connections_in_use', 'Database connections of the pool checked out by a query or transaction.', (u) => u.inUse);
poolGauge('parley_db_pool_connections_idle', 'Database connections of the pool open and free.', (u) => u.idle);
poolGauge('parley_db_pool_waiting_queries', 'Queries waiting for a database connection of the pool.', (u) => u.waiting);
poolGauge('parley_db_pool_connections_max', 'Size limit of the database pool (PARLEY_DB_POOL_SIZE).', (u) => u.max);
// POST /register's lane (lib/lane.ts): registrations reading their state, and those waiting their turn.
summedGauge('parley_registrations_in_progress', 'POST /register requests reading their state now (at most PARLEY_REGISTER_CONCURRENCY per process).', (d) => d.registrations?.running ?? null);
summedGauge('parley_registrations_waiting', 'POST /register requests waiting for their turn to read their state (outside the database pool).', (d) => d.registrations?.waiting ?? null);

// In a node:cluster worker, the primary's requests for this process's metrics are answered from the
// moment this module is loaded (prom-client installs that answer with its first AggregatorRegistry): a
// worker still starting answers what it has rather than holding the scrape until prom-client's timeout.
if (cluster.isWorker && !shared.workerResponder) {
  shared.workerResponder = true;
  new client.AggregatorRegistry();
}

/**
 * Makes a running server's figures part of the metrics (server.ts listen), until the returned function
 * is called. The first call also starts Node's default process metrics.
 */
export function attachMetrics(deps: Pick<AppDeps, 'db' | 'delivery' | 'logger'> & Partial<Pick<AppDeps, 'registrations'>>): () => void {
  if (!shared.processMetrics) {
    shared.processMetrics = true;
    if (!register.getSingleMetric('process_cpu_user_seconds_total')) client.collectDefaultMetrics();
  }
  const source: Source = { deps };
  sources.add(source);
  return () => {
    sources.delete(source);
  };
}
