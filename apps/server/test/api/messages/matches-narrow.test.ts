// GET /messages/matches_narrow: which of the given messages match a narrow, among the requester's own
// rows only (rows still deferred included; channels the requester can no longer read left out), with
// GET /messages's narrow model and search highlighting.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { useChannel } from '../../helpers/channels.ts';
import { sendMessage } from '../../helpers/queues.ts';

const env = useTestServer();
const channel = useChannel(env, 'iago', { name: 'narrow matches' }, ['iago', 'hamlet', 'othello']);
/** Public; hamlet not subscribed. */
const elsewhere = useChannel(env, 'iago', { name: 'narrow elsewhere' }, ['iago']);
const privateChannel = useChannel(env, 'iago', { name: 'narrow private', invite_only: true }, ['iago', 'hamlet']);

const uid = (p: Person) => env.users[p].id;

type Narrow = Array<{ operator: string; operand: string | number | number[]; negated?: boolean } | string[]>;

/** GET with Zulip's encoding (strings raw, everything else JSON): the generated client does not put nested lists in a query string. */
const get = (as: Person, path: string, params: Record<string, unknown>) =>
  env.raw(`${path}?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]))}`, { method: 'GET', as });

async function matches(as: Person, msgIds: number[], narrow: Narrow): Promise<Record<string, { match_content: string; match_subject: string }>> {
  const res = await get(as, '/messages/matches_narrow', { msg_ids: msgIds, narrow });
  if (res.status !== 200) throw new Error(`matches_narrow: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.messages;
}

const send = (as: Person, to: { name: string }, topic: string, content: string) => sendMessage(env.client(as), { type: 'channel', to: to.name, topic, content });

describe('GET /messages/matches_narrow', () => {
  it('matches a search among the requester\'s rows, rows still deferred included, and highlights the matches', async () => {
    const castle = await send('iago', channel, 'Denmark castle', 'The castle tour');
    const other = await send('iago', channel, 'other', 'nothing here');
    // othello's rows of both messages are deferred until he reads.
    const rows = await env.running.deps.db.userMessage.count({ where: { userId: uid('othello'), messageId: { in: [castle, other] } } });
    expect(rows).toBe(0);
    const found = await matches('othello', [castle, other], [{ operator: 'search', operand: 'castle' }]);
    expect(found).toEqual({
      [String(castle)]: {
        match_content: '<p>The <span class="highlight">castle</span> tour</p>',
        match_subject: 'Denmark <span class="highlight">castle</span>',
      },
    });
    // The legacy [operator, operand] form.
    expect(Object.keys(await matches('othello', [castle, other], [['search', 'castle']]))).toEqual([String(castle)]);
  });

  it('without a search term answers the content and the escaped topic unhighlighted', async () => {
    const topic = `a <b> & "c" ${Date.now() % 1000}`;
    const id = await send('hamlet', channel, topic, 'plain **text**');
    const other = await send('hamlet', channel, 'elsewhere', 'x');
    const escaped = topic.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
    expect(await matches('hamlet', [id, other], [{ operator: 'topic', operand: topic }])).toEqual({
      [String(id)]: { match_content: '<p>plain <strong>text</strong></p>', match_subject: escaped },
    });
    expect(Object.keys(await matches('hamlet', [id, other], [{ operator: 'topic', operand: topic, negated: true }]))).toEqual([String(other)]);
    expect(Object.keys(await matches('hamlet', [id, other], []))).toEqual([id, other].map(String));
  });

  it('reads "general chat" as the empty topic', async () => {
    const id = await send('hamlet', channel, '', 'in general chat');
    expect(await matches('hamlet', [id], [{ operator: 'topic', operand: 'general chat' }])).toEqual({
      [String(id)]: { match_content: '<p>in general chat</p>', match_subject: '' },
    });
  });

  it('never looks beyond the requester\'s rows: channel history, others\' direct messages and unknown ids are left out', async () => {
    const history = await send('iago', elsewhere, 'history', 'castle in history');
    const dm = await sendMessage(env.client('iago'), { type: 'direct', to: JSON.stringify([uid('othello')]), content: 'castle between us' });
    const narrow = [{ operator: 'channel', operand: elsewhere.name }];
    // GET /messages reaches the public channel's history; matches_narrow does not (Zulip reads rows only).
    const page = await get('hamlet', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow });
    expect(page.body.messages.map((m: { id: number }) => m.id)).toContain(history);
    expect(await matches('hamlet', [history], narrow)).toEqual({});
    expect(await matches('hamlet', [history, dm, 999_999_999, 0], [{ operator: 'search', operand: 'castle' }])).toEqual({});
    expect(Object.keys(await matches('othello', [dm], [{ operator: 'search', operand: 'castle' }]))).toEqual([String(dm)]);
  });

  it('leaves out messages of a channel the requester can no longer read, though their rows remain', async () => {
    const id = await send('hamlet', privateChannel, 'secret', 'private castle');
    expect(Object.keys(await matches('hamlet', [id], []))).toEqual([String(id)]);
    const { error } = await env.client('hamlet').DELETE('/users/me/subscriptions', { body: { subscriptions: [privateChannel.name] } });
    expect(error).toBeUndefined();
    expect(await env.running.deps.db.userMessage.count({ where: { userId: uid('hamlet'), messageId: id } })).toBe(1);
    expect(await matches('hamlet', [id], [])).toEqual({});
    expect(await matches('hamlet', [id], [{ operator: 'search', operand: 'castle' }])).toEqual({});
  });

  it("answers Zulip's errors", async () => {
    const get = (query: string) => env.raw(`/messages/matches_narrow?${query}`, { method: 'GET', as: 'hamlet' });
    const missingIds = await get(`narrow=${encodeURIComponent('[]')}`);
    expectJsonError(missingIds, 400, "Missing 'msg_ids' argument", 'REQUEST_VARIABLE_MISSING');
    expect(missingIds.body.var_name).toBe('msg_ids');
    expectJsonError(await get(`msg_ids=${encodeURIComponent('[1]')}`), 400, "Missing 'narrow' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await get(`msg_ids=${encodeURIComponent('"x"')}&narrow=${encodeURIComponent('[]')}`), 400, 'msg_ids is not a list', 'BAD_REQUEST');
    const unknown = await get(`msg_ids=${encodeURIComponent('[1]')}&narrow=${encodeURIComponent('[{"operator": "channel", "operand": "no such channel"}]')}`);
    expectJsonError(unknown, 400, 'Invalid narrow operator: unknown channel no such channel', 'BAD_NARROW');
    expect(unknown.body.desc).toBe('unknown channel no such channel');
    expectJsonError(await get(`msg_ids=${encodeURIComponent('[1]')}&narrow=${encodeURIComponent('[{"operator": "is", "operand": "nothing"}]')}`), 400, "Invalid narrow operator: unknown 'is' operand nothing", 'BAD_NARROW');
  });

  it('answers a GET shaped as the Python client sends it (JSON values in the query string)', async () => {
    const id = await send('othello', channel, 'python', 'castle from python');
    const query = `msg_ids=${encodeURIComponent(`[${id}]`).replace(/%20/g, '+')}&narrow=${encodeURIComponent('[{"operator": "search", "operand": "castle"}]').replace(/%20/g, '+')}`;
    const res = await env.raw(`/messages/matches_narrow?${query}`, { method: 'GET', as: 'othello', headers: { 'User-Agent': 'ZulipPython/0.9.0' } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.messages)).toEqual([String(id)]);
    expect(res.body.messages[String(id)].match_content).toBe('<p><span class="highlight">castle</span> from python</p>');
  });
});
