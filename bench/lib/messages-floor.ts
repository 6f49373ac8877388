// The floor of bench/messages.bench.ts's typing row: a bare Express 5 route answering POST
// /api/v1/typing with `{"result":"success","msg":""}` (what Parley answers), without reading the body,
// authenticating or telling anybody. Run as a separate Node process like Parley (NODE_ENV=production),
// on the port in BENCH_FLOOR_PORT; GET /ready answers once it listens. Not Parley code.
import { createRequire } from 'node:module';

interface ExpressResponse {
  json(body: unknown): void;
}
interface ExpressApp {
  disable(setting: string): void;
  get(path: string, handler: (req: unknown, res: ExpressResponse) => void): void;
  post(path: string, handler: (req: unknown, res: ExpressResponse) => void): void;
  listen(port: number, host: string): unknown;
}
const express = createRequire(new URL('../../apps/server/package.json', import.meta.url))('express') as () => ExpressApp;

const app = express();
app.disable('x-powered-by');
app.post('/api/v1/typing', (_req, res) => {
  res.json({ result: 'success', msg: '' });
});
app.get('/ready', (_req, res) => {
  res.json({ ok: true });
});
app.listen(Number(process.env.BENCH_FLOOR_PORT), '127.0.0.1');

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
