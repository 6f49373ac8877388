// The floors of bench/presence.bench.ts, run as a separate Node process like Parley
// (NODE_ENV=production). Not Parley code and not a design for it: no authentication, no checks.
//
//   POST /api/v1/users/me/presence   a bare Express 5 route: parses the form body and answers the
//                                    answer of a report when nothing changed since the client's
//                                    last_update_id (empty `presences`, the id sent back)
//   GET  /api/v1/realm/presence      the data floor: one pg query of the same rows Parley answers
//                                    (active humans who reported in the last 14 days) + building the
//                                    same legacy-format object + JSON.stringify
//   GET  /ready
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

interface FloorConfig {
  databaseUrl: string;
  port: number;
  realmId: number;
  /** The organization's host: the domain of the address of users whose real address is hidden. */
  host: string;
}

interface PgPool {
  query<R = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<{ rows: R[] }>;
}
const serverRequire = createRequire(new URL('../../apps/server/package.json', import.meta.url));
const pg = serverRequire('pg') as { Pool: new (options: { connectionString: string; max: number }) => PgPool };
interface Request {
  body: Record<string, string>;
}
interface Response {
  json(body: unknown): void;
  type(t: string): Response;
  send(body: string): void;
}
interface ExpressApp {
  disable(setting: string): void;
  use(middleware: unknown): void;
  get(path: string, handler: (req: Request, res: Response) => void): void;
  post(path: string, handler: (req: Request, res: Response) => void): void;
  listen(port: number, host: string): unknown;
}
const express = serverRequire('express') as (() => ExpressApp) & { urlencoded(options: { extended: boolean }): unknown };

// Timestamps without time zone hold UTC (as Parley writes them): read them so.
process.env.TZ = 'UTC';
const config = JSON.parse(readFileSync(process.env.BENCH_FLOOR_CONFIG!, 'utf8')) as FloorConfig;
const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 10 });

const app = express();
app.disable('x-powered-by');
app.use(express.urlencoded({ extended: false }));

app.post('/api/v1/users/me/presence', (req, res) => {
  const sent = req.body.last_update_id === undefined ? -1 : Number(req.body.last_update_id);
  res.json({ result: 'success', msg: '', presences: {}, server_timestamp: Date.now() / 1000, presence_last_update_id: sent });
});

const unix = (d: Date) => Math.floor(d.getTime() / 1000);
app.get('/api/v1/realm/presence', (_req, res) => {
  void (async () => {
    const { rows } = await pool.query<{ id: number; delivery_email: string; v: number; date_joined: Date; last_active_time: Date | null; last_connected_time: Date }>(
      `SELECT u.id, u.delivery_email, COALESCE(s.email_address_visibility, 1) AS v, u.date_joined, p.last_active_time, p.last_connected_time
       FROM user_presence p JOIN "user" u ON u.id = p.user_id LEFT JOIN user_settings s ON s.user_id = p.user_id
       WHERE p.realm_id = $1 AND u.is_active AND NOT u.is_bot AND p.last_connected_time >= $2`,
      [config.realmId, new Date(Date.now() - 14 * 86_400_000).toISOString()],
    );
    const presences: Record<string, unknown> = {};
    for (const r of rows) {
      const active = r.last_active_time ?? r.date_joined;
      const website =
        active.getTime() + 70_000 >= r.last_connected_time.getTime()
          ? { client: 'website', status: 'active', timestamp: unix(active), pushable: false }
          : { client: 'website', status: 'idle', timestamp: unix(r.last_connected_time), pushable: false };
      const email = r.v === 1 ? r.delivery_email : `user${r.id}@${config.host}`;
      presences[email] = { aggregated: { client: website.client, status: website.status, timestamp: website.timestamp }, website };
    }
    res.type('application/json').send(JSON.stringify({ result: 'success', msg: '', presences, server_timestamp: Date.now() / 1000 }));
  })();
});

app.get('/ready', (_req, res) => res.json({ ok: true }));
app.listen(config.port, '127.0.0.1');
