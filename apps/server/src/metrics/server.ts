// The Prometheus endpoint: GET /metrics on its own port (PARLEY_METRICS_PORT), by default on
// 127.0.0.1 only, away from the public API port; with PARLEY_METRICS_TOKEN it asks for
// `Authorization: Bearer <token>` (401 otherwise).
//
// A single server process serves its own registry (metrics/metrics.ts). The primary process of a
// node:cluster (which serves no requests) serves the workers' registries, gathered over the cluster's
// IPC channel and summed per series by prom-client's AggregatorRegistry (gauges of installation-wide
// counts are taken from one worker, not summed: see their `aggregator`).
import { createHash, timingSafeEqual } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import client from 'prom-client';
import type { Config } from '../config.ts';

export interface MetricsServerOptions {
  /** 0: any free port (the one taken is returned). */
  port: number;
  host: string;
  /** Bearer token scrapers must send; null: none asked for. */
  token: string | null;
  /** Serve the node:cluster workers' metrics, summed (call in the cluster's primary process). */
  aggregateCluster: boolean;
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const expected = options.token === null ? null : digest(options.token);
  const aggregator = options.aggregateCluster ? new client.AggregatorRegistry() : null;

  const authorized = (req: IncomingMessage): boolean => {
    if (expected === null) return true;
    const header = req.headers.authorization ?? '';
    const match = /^Bearer +(\S+)\s*$/i.exec(header);
    // Digests compared in constant time: the token's length or prefix is not told by the timing.
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };

  const answer = (res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
    res.end(text);
  };

  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return answer(res, 404, 'Not found: metrics are at /metrics\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, 'Method not allowed\n', { Allow: 'GET, HEAD' });
    if (!authorized(req)) return answer(res, 401, 'Unauthorized\n', { 'WWW-Authenticate': 'Bearer realm="parley-metrics"' });
    const reading = aggregator ? aggregator.clusterMetrics() : client.register.metrics();
    reading.then(
      (body) => {
        res.writeHead(200, { 'Content-Type': aggregator ? aggregator.contentType : client.register.contentType, 'Cache-Control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => answer(res, 500, `Collecting metrics failed: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The endpoint as configured (PARLEY_METRICS_PORT, _HOST, _TOKEN), or null when it is off. */
export function startConfiguredMetricsServer(config: Pick<Config, 'metricsPort' | 'metricsHost' | 'metricsToken'>, aggregateCluster: boolean): Promise<MetricsServer | null> {
  if (config.metricsPort === null) return Promise.resolve(null);
  return startMetricsServer({ port: config.metricsPort, host: config.metricsHost, token: config.metricsToken, aggregateCluster });
}
