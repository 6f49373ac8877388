// Load generation with autocannon (in this process). Latencies are collected from autocannon's
// `response` events (floating-point milliseconds, 2xx only), so that percentiles are not rounded to
// whole milliseconds; throughput is 2xx responses divided by the run's duration.
import { createRequire } from 'node:module';
import { percentile } from './stats.ts';

interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
}
interface AutocannonResult {
  duration: number;
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  throughput: { total: number };
}
interface AutocannonInstance {
  on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
  on(event: 'done', listener: (result: AutocannonResult) => void): void;
  stop(): void;
}
type Autocannon = (
  options: Record<string, unknown>,
  callback: (error: Error | null, result: AutocannonResult) => void,
) => AutocannonInstance;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  durationS: number;
  /** Called for every request with its sequence number (from 0 in each run); may change it. */
  setup?: (n: number) => AutocannonRequest;
  /** Collect the first failing response's status and body (costs a body copy per response; small bodies only). */
  captureFailures?: boolean;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  ok: number;
  failed: number;
  bytesPerResponse: number;
  firstFailure?: string;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  let n = 0;
  let firstFailure: string | undefined;
  const request: Record<string, unknown> = {};
  if (options.setup) {
    const setup = options.setup;
    request.setupRequest = (req: AutocannonRequest) => {
      const change = setup(n++);
      return { ...req, ...change, headers: { ...req.headers, ...change.headers } };
    };
  }
  if (options.captureFailures) {
    request.onResponse = (status: number, body: string) => {
      if ((status < 200 || status >= 300) && firstFailure === undefined) firstFailure = `${status} ${String(body).slice(0, 500)}`;
    };
  }
  const result = await new Promise<AutocannonResult>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        ...(options.body !== undefined ? { body: options.body } : {}),
        connections: options.connections,
        duration: options.durationS,
        timeout: 120,
        ...(Object.keys(request).length ? { requests: [request] } : {}),
      },
      (error, res) => (error ? reject(error) : resolve(res)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
  const ok = result['2xx'];
  return {
    rps: ok / result.duration,
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    ok,
    failed: result.non2xx + result.errors + result.timeouts,
    bytesPerResponse: ok ? result.throughput.total / ok : 0,
    ...(firstFailure !== undefined ? { firstFailure } : {}),
  };
}
