// The floors of bench/perf.bench.ts: the least a server could do for each measured request, run as a
// separate Node process like Parley (NODE_ENV=production). Not Parley code and not a design for it.
//
//   :expressPort  GET /api/v1/users/me           a bare Express 5 route answering a fixed JSON (the
//                                                body Parley gave for the same user, captured at start)
//   :httpPort     GET /api/v1/users              one pg query + JSON.stringify of the same body as Parley's
//                 PATCH /api/v1/streams/:id      the same writes in SQL: lock + UPDATE channel + INSERT event
//                 POST /api/v1/users/me/subscriptions   the same writes in SQL: lock channel + INSERT
//                                                subscription + INSERT the two events (subscription add,
//                                                peer_add to everyone else who can see the channel)
//                 GET /ready
//
// The floors do not authenticate and check no permissions: the caller is taken from the e-mail of the
// Basic credentials (a map given at start). Both servers use a pg pool of 10, as Parley does.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';

interface FloorConfig {
  databaseUrl: string;
  expressPort: number;
  httpPort: number;
  /** e-mail (lower case) → the caller. */
  people: Record<string, { id: number; realmId: number; role: number }>;
  /** realm id → its URL. */
  realmUrls: Record<string, string>;
  /** Parley's GET /users/me body for the member. */
  meBody: Record<string, unknown>;
}

interface PgPool {
  query<R = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<{ rows: R[] }>;
  connect(): Promise<{ query: PgPool['query']; release(): void }>;
}
const serverRequire = createRequire(new URL('../../apps/server/package.json', import.meta.url));
const pg = serverRequire('pg') as { Pool: new (options: { connectionString: string; max: number }) => PgPool };
interface ExpressResponse {
  json(body: unknown): void;
}
interface ExpressApp {
  disable(setting: string): void;
  get(path: string, handler: (req: unknown, res: ExpressResponse) => void): void;
  listen(port: number, host: string): unknown;
}
const express = serverRequire('express') as () => ExpressApp;

const config = JSON.parse(readFileSync(process.env.BENCH_FLOOR_CONFIG!, 'utf8')) as FloorConfig;
const pool = new pg.Pool({ connectionString: config.databaseUrl, max: 10 });

// --- GET /users/me: bare Express 5 ------------------------------------------------------------------
const app = express();
app.disable('x-powered-by');
app.get('/api/v1/users/me', (_req, res) => {
  res.json(config.meBody);
});
app.listen(config.expressPort, '127.0.0.1');

// --- the rest: node:http ----------------------------------------------------------------------------
function caller(req: http.IncomingMessage) {
  const header = req.headers.authorization ?? '';
  const email = Buffer.from(header.replace(/^Basic\s+/i, ''), 'base64').toString('utf8').split(':')[0]!.toLowerCase();
  const who = config.people[email];
  if (!who) throw new Error(`unknown caller ${email}`);
  return who;
}

function readBody(req: http.IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}

function send(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

async function transaction<T>(work: (q: PgPool['query']) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client.query.bind(client));
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

interface UserRow {
  id: number;
  email: string;
  delivery_email: string;
  full_name: string;
  role: number;
  is_active: boolean;
  is_bot: boolean;
  bot_type: number | null;
  bot_owner_id: number | null;
  timezone: string;
  avatar_source: string;
  avatar_version: number;
  date_joined: string;
  visibility: number | null;
}

/** GET /users: the member list of the caller's organization, as Parley formats it (client_gravatar=true). */
async function listUsers(viewer: { id: number; realmId: number; role: number }) {
  const host = new URL(config.realmUrls[String(viewer.realmId)]!).hostname;
  const { rows } = await pool.query<UserRow>(
    `SELECT u.id, u.email, u.delivery_email, u.full_name, u.role, u.is_active, u.is_bot, u.bot_type, u.bot_owner_id, u.timezone,
            u.avatar_source, u.avatar_version, to_char(u.date_joined, 'YYYY-MM-DD"T"HH24:MI:SS.US') || '+00:00' AS date_joined,
            s.email_address_visibility AS visibility
     FROM "user" u LEFT JOIN user_settings s ON s.user_id = u.id
     WHERE u.realm_id = $1 ORDER BY u.id`,
    [viewer.realmId],
  );
  const members = rows.map((u) => {
    const visibility = u.visibility ?? 1;
    const sees =
      viewer.id === u.id || u.is_bot || visibility === 1 || (visibility === 2 && viewer.role <= 400) || (visibility === 3 && viewer.role <= 200) || (visibility === 5 && viewer.role <= 300);
    const out: Record<string, unknown> = {
      email: visibility === 1 || u.is_bot ? u.delivery_email : `user${u.id}@${host}`,
      user_id: u.id,
      avatar_version: u.avatar_version,
      is_admin: u.role === 100 || u.role === 200,
      is_owner: u.role === 100,
      is_guest: u.role === 600,
      role: u.role,
      is_bot: u.is_bot,
      full_name: u.full_name,
      timezone: u.timezone,
      is_active: u.is_active,
      date_joined: u.date_joined,
      delivery_email: sees ? u.delivery_email : null,
      avatar_url:
        sees && u.avatar_source === 'G'
          ? null
          : `https://secure.gravatar.com/avatar/${createHash('md5').update(u.delivery_email.trim().toLowerCase()).digest('hex')}?d=identicon&version=${u.avatar_version}`,
    };
    if (u.is_bot) {
      out.bot_type = u.bot_type ?? 1;
      out.bot_owner_id = u.bot_owner_id;
    }
    return out;
  });
  return { result: 'success', msg: '', members };
}

/** The audience of a public channel's events: active non-guest users of the organization. */
const AUDIENCE = `SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM "user" WHERE realm_id = $1 AND is_active AND role <> 600`;

async function updateDescription(who: { realmId: number }, channelId: number, description: string) {
  const rendered = description.trim() ? `<p>${escapeHtml(description.trim()).replace(/\n/g, '<br>\n')}</p>` : '';
  await transaction(async (q) => {
    const { rows } = await q<{ name: string }>('SELECT name FROM channel WHERE id = $1 AND realm_id = $2 FOR UPDATE', [channelId, who.realmId]);
    if (!rows[0]) throw new Error('no such channel');
    await q('UPDATE channel SET description = $2, rendered_description = $3 WHERE id = $1', [channelId, description, rendered]);
    const payload = { type: 'stream', op: 'update', stream_id: channelId, name: rows[0].name, property: 'description', value: description, rendered_description: rendered };
    await q(`INSERT INTO event (realm_id, user_ids, realm_wide, payload) VALUES ($1, (${AUDIENCE}), false, $2)`, [who.realmId, JSON.stringify(payload)]);
  });
  await pool.query(`SELECT pg_notify('parley_events', $1)`, [String(who.realmId)]);
  return { result: 'success', msg: '' };
}

async function subscribe(who: { id: number; realmId: number }, name: string) {
  const subscribed = await transaction(async (q) => {
    const { rows } = await q<{ id: number; name: string }>('SELECT id, name FROM channel WHERE realm_id = $1 AND lower(name) = lower($2) FOR UPDATE', [who.realmId, name]);
    const channel = rows[0];
    if (!channel) throw new Error('no such channel');
    await q(
      `INSERT INTO subscription (user_id, channel_id, active, color) VALUES ($1, $2, true, '#76ce90')
       ON CONFLICT (user_id, channel_id) DO UPDATE SET active = true`,
      [who.id, channel.id],
    );
    // subscription add, for the new subscriber (with the channel's subscribers)…
    await q(
      `INSERT INTO event (realm_id, user_ids, realm_wide, payload)
       SELECT $1, ARRAY[$2::int], false, jsonb_build_object('type', 'subscription', 'op', 'add', 'subscriptions', jsonb_build_array(
         jsonb_build_object('stream_id', $3::int, 'name', $4::text, 'color', '#76ce90', 'subscribers',
           (SELECT coalesce(jsonb_agg(user_id ORDER BY user_id), '[]') FROM subscription WHERE channel_id = $3 AND active))))`,
      [who.realmId, who.id, channel.id, channel.name],
    );
    // …and peer_add for everyone else who can see it.
    await q(
      `INSERT INTO event (realm_id, user_ids, realm_wide, payload)
       SELECT $1, array_agg(id ORDER BY id), false, jsonb_build_object('type', 'subscription', 'op', 'peer_add', 'stream_ids', jsonb_build_array($3::int), 'user_ids', jsonb_build_array($2::int))
       FROM "user" WHERE realm_id = $1 AND is_active AND role <> 600 AND id <> $2 HAVING count(*) > 0`,
      [who.realmId, who.id, channel.id],
    );
    return channel.name;
  });
  await pool.query(`SELECT pg_notify('parley_events', $1)`, [String(who.realmId)]);
  return { result: 'success', msg: '', subscribed: { [String(who.id)]: [subscribed] }, already_subscribed: {}, new_subscription_messages_sent: false };
}

http
  .createServer((req, res) => {
    const url = req.url ?? '';
    const run = async () => {
      if (req.method === 'GET' && url === '/ready') return send(res, 200, { ok: true });
      if (req.method === 'GET' && url.startsWith('/api/v1/users') && (url.length === 13 || url[13] === '?')) {
        const text = JSON.stringify(await listUsers(caller(req)));
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
        return res.end(text);
      }
      const patch = /^\/api\/v1\/streams\/(\d+)$/.exec(url);
      if (req.method === 'PATCH' && patch) {
        const body = await readBody(req);
        return send(res, 200, await updateDescription(caller(req), Number(patch[1]), body.get('description') ?? ''));
      }
      if (req.method === 'POST' && url === '/api/v1/users/me/subscriptions') {
        const body = await readBody(req);
        const [first] = JSON.parse(body.get('subscriptions') ?? '[]') as Array<{ name: string }>;
        return send(res, 200, await subscribe(caller(req), first!.name));
      }
      send(res, 404, { result: 'error', msg: 'Not Found' });
    };
    run().catch((error: Error) => send(res, 500, { result: 'error', msg: error.message }));
  })
  .listen(config.httpPort, '127.0.0.1');

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
