// The Prometheus endpoint (src/metrics): scraped over HTTP after API calls, its counters move with
// the right labels; its token is enforced; in a node:cluster primary it serves the workers' metrics
// gathered over IPC (two forked workers of a tiny script).
import cluster, { type Worker } from 'node:cluster';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { waitFor } from '../../helpers/wait.ts';
import { inTransaction } from '../../../src/data/transactions.ts';
import { enqueueEmail } from '../../../src/mail/outbox.ts';
import { startMetricsServer } from '../../../src/metrics/server.ts';

const TOKEN = 'metrics-test-token';
const env = useTestServer({ config: { metricsPort: 0, metricsToken: TOKEN } });

const metricsUrl = (p = '/metrics') => `http://127.0.0.1:${env.running.metrics!.port}${p}`;

async function scrape(url = metricsUrl(), token: string | null = TOKEN): Promise<Scrape> {
  const res = await fetch(url, token === null ? {} : { headers: { Authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return new Scrape(await res.text());
}

/** Samples of Prometheus's text format, looked up by name and (a subset of) labels. */
class Scrape {
  private samples: Array<{ name: string; labels: Record<string, string>; value: number }> = [];
  constructor(readonly text: string) {
    for (const line of text.split('\n')) {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) continue;
      const labels: Record<string, string> = {};
      for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
      this.samples.push({ name: m[1]!, labels, value: Number(m[3]) });
    }
  }
  /** The sample's value; 0 when absent (a counter not moved yet). */
  value(name: string, labels: Record<string, string> = {}): number {
    const found = this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
    return found[0]?.value ?? 0;
  }
  has(name: string): boolean {
    return this.samples.some((s) => s.name === name);
  }
}

describe('GET /metrics (Prometheus endpoint)', () => {
  it('asks for the bearer token, and answers only /metrics', async () => {
    expect((await fetch(metricsUrl())).status).toBe(401);
    expect((await fetch(metricsUrl(), { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(metricsUrl(), { headers: { Authorization: `Basic ${TOKEN}` } })).status).toBe(401);
    const refused = await fetch(metricsUrl());
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect((await fetch(metricsUrl('/other'), { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
    // Not on the API's port.
    expect(env.running.metrics!.port).not.toBe(new URL(env.url).port);
    await scrape();
  });

  it('counts requests by operation and status, events published and delivered', async () => {
    const before = await scrape();
    const hamlet = env.client('hamlet');
    const othello = env.client('othello');
    expect((await hamlet.GET('/users/me')).response.status).toBe(200);
    expect((await hamlet.GET('/users/me')).response.status).toBe(200);
    expect((await env.raw('/users/me')).status).toBe(401);
    expect((await env.raw('/no/such/path', { as: 'hamlet' })).status).toBe(404);

    const { data: queue } = await hamlet.POST('/register', { body: { event_types: ['message', 'typing'] } });
    expect((await othello.POST('/messages', { body: { type: 'direct', to: JSON.stringify([env.users.hamlet.id]), content: 'counted' } })).response.status).toBe(200);
    expect((await othello.POST('/typing', { body: { op: 'start', to: [env.users.hamlet.id] } })).response.status).toBe(200);
    // Both events reach the queue (the typing one is ephemeral: polled for until it arrives).
    let delivered = 0;
    await waitFor(async () => {
      const { data } = await hamlet.GET('/events', { params: { query: { queue_id: queue!.queue_id!, last_event_id: queue!.last_event_id!, dont_block: true } } });
      delivered = data!.events.length;
      return delivered >= 2;
    }, { what: 'the message and typing events' });

    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) => after.value(name, labels) - before.value(name, labels);
    expect(delta('parley_http_requests_total', { operation: 'get-own-user', status: '200' })).toBe(2);
    expect(delta('parley_http_requests_total', { operation: 'get-own-user', status: '401' })).toBe(1);
    expect(delta('parley_http_requests_total', { operation: 'none', status: '404' })).toBe(1);
    expect(delta('parley_http_requests_total', { operation: 'send-message', status: '200' })).toBe(1);
    expect(delta('parley_http_request_duration_seconds_count', { operation: 'get-own-user' })).toBe(3);
    expect(delta('parley_http_request_duration_seconds_bucket', { operation: 'get-own-user', le: '+Inf' })).toBe(3);
    // Operations are spec operation ids: no raw paths or ids.
    expect(after.text).not.toContain('/users/me');
    const operations = new Set([...after.text.matchAll(/operation="([^"]*)"/g)].map((m) => m[1]!));
    for (const operation of operations) expect(operation).toMatch(/^[a-z]+(-[a-z]+)*$/);

    expect(delta('parley_events_published_total', { kind: 'ephemeral' })).toBe(1);
    expect(delta('parley_events_published_total', { kind: 'stored' })).toBeGreaterThanOrEqual(1);
    expect(delta('parley_events_delivered_total')).toBe(delivered);
    expect(after.value('parley_event_queues')).toBeGreaterThanOrEqual(1);

    expect(after.value('parley_db_pool_connections_max')).toBe(8); // the test server's pool
    expect(after.value('parley_db_pool_connections_in_use') + after.value('parley_db_pool_connections_idle')).toBeGreaterThan(0);
    expect(after.has('parley_db_pool_waiting_queries')).toBe(true);
    expect(after.has('parley_job_queue_depth')).toBe(true);
    expect(after.text).toMatch(/^parley_job_queue_depth\{job="send-email"\} \d+$/m);
    expect(after.value('process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(after.has('nodejs_eventloop_lag_seconds')).toBe(true);
    // POST /register's lane: nothing reading or waiting between requests.
    expect(after.has('parley_registrations_in_progress') && after.has('parley_registrations_waiting')).toBe(true);
    expect([after.value('parley_registrations_in_progress'), after.value('parley_registrations_waiting')]).toEqual([0, 0]);
  });

  it('shows parked polls, and a poll its client gave up as 499', async () => {
    const before = await scrape();
    const hamlet = env.client('hamlet');
    const { data: queue } = await hamlet.POST('/register', { body: { event_types: ['message'] } });
    const controller = new AbortController();
    const poll = fetch(`${env.url}/api/v1/events?queue_id=${queue!.queue_id}&last_event_id=${queue!.last_event_id}`, {
      headers: { Authorization: `Basic ${Buffer.from(`${env.users.hamlet.email}:${env.users.hamlet.apiKey}`).toString('base64')}` },
      signal: controller.signal,
    }).catch(() => null);
    await waitFor(async () => (await scrape()).value('parley_event_polls_parked') >= 1, { what: 'a parked poll' });
    controller.abort();
    await poll;
    await waitFor(async () => {
      const now = await scrape();
      return now.value('parley_event_polls_parked') === 0 && now.value('parley_http_requests_total', { operation: 'get-events', status: '499' }) === before.value('parley_http_requests_total', { operation: 'get-events', status: '499' }) + 1;
    }, { what: 'the abandoned poll counted as 499' });
  });

  it('counts e-mail outcomes and job failures', async () => {
    const deps = env.running.deps;
    const before = await scrape();
    const send = () => inTransaction(deps.db, (tx) => enqueueEmail(tx, deps, { to: 'metrics@parley.test', subject: 'Metrics', text: 'Counted', html: '<p>Counted</p>' }));
    // An SMTP server that refuses connections: the delivery fails (and is retried later).
    deps.config.smtpUrl = 'smtp://127.0.0.1:1';
    try {
      await send();
      await waitFor(async () => (await scrape()).value('parley_emails_total', { outcome: 'failed' }) > before.value('parley_emails_total', { outcome: 'failed' }), { what: 'a failed e-mail' });
    } finally {
      deps.config.smtpUrl = null;
    }
    const failed = await scrape();
    expect(failed.value('parley_job_failures_total', { job: 'send-email' })).toBeGreaterThan(before.value('parley_job_failures_total', { job: 'send-email' }));
    // Without an SMTP server, e-mails are kept in the outbox.
    await send();
    await waitFor(async () => (await scrape()).value('parley_emails_total', { outcome: 'kept' }) > before.value('parley_emails_total', { outcome: 'kept' }), { what: 'a kept e-mail' });
  });
});

describe('GET /metrics of a node:cluster primary (aggregateCluster)', () => {
  const workers: Worker[] = [];
  afterAll(async () => {
    await Promise.all(
      workers.filter((w) => !w.isDead()).map((w) => {
        const exited = new Promise((resolve) => w.once('exit', resolve));
        w.process.kill();
        return exited;
      }),
    );
  });

  it("serves the workers' metrics, summed, and installation-wide counts once", async () => {
    const here = path.dirname(fileURLToPath(import.meta.url));
    cluster.setupPrimary({ exec: path.join(here, '../../fixtures/metrics-cluster-worker.ts'), execArgv: ['--import', 'tsx'], silent: true });
    const ready = [
      { PARKED: '2', STORED: '5' },
      { PARKED: '3', STORED: '7' },
    ].map((workerEnv) => {
      const worker = cluster.fork(workerEnv);
      workers.push(worker);
      return new Promise<void>((resolve, reject) => {
        worker.once('message', () => resolve());
        worker.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
      });
    });
    await Promise.all(ready);
    const server = await startMetricsServer({ port: 0, host: '127.0.0.1', token: null, aggregateCluster: true });
    try {
      const scraped = await scrape(`http://127.0.0.1:${server.port}/metrics`, null);
      expect(scraped.value('parley_event_polls_parked')).toBe(5);
      expect(scraped.value('parley_events_published_total', { kind: 'stored' })).toBe(12);
      // Every worker reads the same database: its count is shown once, not summed.
      expect(scraped.value('parley_event_queues')).toBe(7);
      expect(scraped.value('process_resident_memory_bytes')).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });
});
