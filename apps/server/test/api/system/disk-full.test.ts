// Disk full for the database, simulated: triggers make PostgreSQL refuse writes to message and reaction
// with SQLSTATE 53100 (disk_full), as it does when it cannot extend a file. Writes answer 503 in the
// envelope (with retry-after), nothing of them is left (no message, no recipients' rows, no event),
// reads keep working, and once the space is back (the triggers dropped) writes succeed again with no
// restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { useTestServer } from '../../helpers/test-server.ts';
import { createChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';

const env = useTestServer();
let sql: pg.Client;
let channelId = 0;
let earlier = 0;

const send = (content: string) => env.raw('/messages', { method: 'POST', as: 'hamlet', body: new URLSearchParams({ type: 'stream', to: String(channelId), topic: 'space', content }) });
const react = (messageId: number) => env.raw(`/messages/${messageId}/reactions`, { method: 'POST', as: 'othello', body: new URLSearchParams({ emoji_name: 'thumbs_up' }) });
const count = async (query: string) => Number((await sql.query<{ n: string }>(query)).rows[0]!.n);
// Recipients' rows of messages after the first one (rows of older messages may be written later, deferred).
const written = async () => ({ messages: await count('SELECT count(*) AS n FROM message'), recipients: await count(`SELECT count(*) AS n FROM user_message WHERE message_id > ${earlier}`), reactions: await count('SELECT count(*) AS n FROM reaction') });

beforeAll(async () => {
  sql = new pg.Client({ connectionString: env.databaseUrl });
  await sql.connect();
  channelId = (await createChannel(env, 'iago', { name: 'disk space' }, ['hamlet', 'othello'])).id;
  const first = await send('before the disk filled up');
  expect(first.status).toBe(200);
  earlier = first.body.id as number;
});

afterAll(async () => {
  await sql?.end();
});

describe('database disk full (simulated)', () => {
  it('refuses writes with 503 in the envelope, writes nothing, keeps reads, and resumes when space returns', async () => {
    await sql.query(`CREATE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'could not extend file "base/16384/16385": No space left on device' USING ERRCODE = 'disk_full'; END $$`);
    await sql.query('CREATE TRIGGER test_disk_full BEFORE INSERT ON message FOR EACH ROW EXECUTE FUNCTION test_disk_full()');
    await sql.query('CREATE TRIGGER test_disk_full BEFORE INSERT ON reaction FOR EACH ROW EXECUTE FUNCTION test_disk_full()');
    const before = await written();
    const mark = await markEvents(env);

    for (const refused of [await send('while the disk is full'), await react(earlier)]) {
      expect(refused.status).toBe(503);
      expect(refused.body).toEqual({ result: 'error', msg: 'The server is out of storage space; retry later', code: 'SERVER_OVERLOADED', 'retry-after': 30 });
      expect(refused.headers.get('retry-after')).toBe('30');
    }
    // Nothing half-written: no message, no recipients' rows, no reaction, no event.
    expect(await written()).toEqual(before);
    expect(await eventsSince(env, mark)).toEqual([]);
    // Reads are served.
    const read = await env.client('othello').GET('/messages', { params: { query: { anchor: 'newest', num_before: 5, num_after: 0 } } });
    expect(read.data!.messages.map((m) => m.content)).toContain('<p>before the disk filled up</p>');

    // Space returns: the same requests succeed, with no restart.
    await sql.query('DROP TRIGGER test_disk_full ON message; DROP TRIGGER test_disk_full ON reaction; DROP FUNCTION test_disk_full()');
    const sent = await send('after the space returned');
    expect(sent.status).toBe(200);
    expect((await react(earlier)).status).toBe(200);
    expect(await written()).toMatchObject({ messages: before.messages + 1, reactions: before.reactions + 1 });
    expect((await eventsSince(env, mark)).map((e) => [e.payload.type, e.payload.op ?? null])).toEqual([
      ['message', null],
      ['reaction', 'add'],
    ]);
  });
});
