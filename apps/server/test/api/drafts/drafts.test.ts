// Drafts (seed operation 11, with GET, PATCH and DELETE): every rule and error of POST /drafts in
// Zulip's order, the batch rejected as a whole, what is stored and read back, the owner-only edit and
// delete, the `drafts` events on the owner's own queues, the `drafts` state of /register, and the
// enable_drafts_synchronization guard.
import { beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { createDeactivatedUser } from '../../helpers/people.ts';
import { pollEvents, registerQueue, type Queue, type RegisterBody } from '../../helpers/queues.ts';
import { deleteAllDraftsOfUser } from '../../../src/data/drafts.repo.ts';

const env = useTestServer();
let publicChannel: { id: number; name: string };
let privateChannel: { id: number; name: string };
let archivedChannel: { id: number; name: string };
let deactivated: { id: number; email: string };

beforeAll(async () => {
  publicChannel = await createChannel(env, 'iago', { name: 'drafts public' }, ['iago', 'hamlet']);
  privateChannel = await createChannel(env, 'iago', { name: 'drafts private', invite_only: true }, ['iago']);
  archivedChannel = await createChannel(env, 'iago', { name: 'drafts archived' }, ['iago', 'hamlet']);
  const { error } = await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archivedChannel.id } } });
  if (error) throw new Error(`setup: archive failed: ${JSON.stringify(error)}`);
  const id = await createDeactivatedUser(env, 'drafts-gone');
  deactivated = { id, email: (await db().user.findUniqueOrThrow({ where: { id } })).email };
});

// ---------------------------------------------------------------------------------------------
// helpers

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

interface DraftIn {
  type: '' | 'stream' | 'private';
  to: number[];
  topic: string;
  content: string;
  timestamp?: number | null;
}

const streamDraft = (content = 'channel draft', extra: Partial<DraftIn> = {}): DraftIn => ({ type: 'stream', to: [publicChannel.id], topic: 'castle', content, ...extra });
const directDraft = (to: number[], content = 'direct draft', extra: Partial<DraftIn> = {}): DraftIn => ({ type: 'private', to, topic: '', content, ...extra });

/** POST /drafts through the generated client (which JSON-encodes `drafts` as real clients do). */
const create = (as: Person, drafts: unknown[]) => env.client(as).POST('/drafts', { body: { drafts: drafts as DraftIn[] } });

async function createOk(as: Person, drafts: DraftIn[]): Promise<number[]> {
  const { data, error } = await create(as, drafts);
  if (!data) throw new Error(`create-drafts failed: ${JSON.stringify(error)}`);
  return data.ids;
}

async function listDrafts(as: Person) {
  const { data, error } = await env.client(as).GET('/drafts');
  if (!data) throw new Error(`get-drafts failed: ${JSON.stringify(error)}`);
  return data;
}

const edit = (as: Person, draftId: number, draft: unknown) =>
  env.client(as).PATCH('/drafts/{draft_id}', { params: { path: { draft_id: draftId } }, body: { draft: draft as DraftIn } });
const remove = (as: Person, draftId: number) => env.client(as).DELETE('/drafts/{draft_id}', { params: { path: { draft_id: draftId } } });

/** Raw form-encoded POST /drafts with `drafts` as the given text (for malformed values). */
const rawCreate = (as: Person, draftsText: string) =>
  env.raw('/drafts', { method: 'POST', as, headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ drafts: draftsText }).toString() });

const storedCount = (person: Person) => db().draft.count({ where: { userId: uid(person) } });
const storedRow = (id: number) => db().draft.findUnique({ where: { id } });

/** Runs `body` with the person's enable_drafts_synchronization turned off (set in the database). */
async function withSyncOff<T>(person: Person, body: () => Promise<T>): Promise<T> {
  await db().userSettings.update({ where: { userId: uid(person) }, data: { enableDraftsSynchronization: false } });
  try {
    return await body();
  } finally {
    await db().userSettings.update({ where: { userId: uid(person) }, data: { enableDraftsSynchronization: true } });
  }
}

/**
 * The request fails with `msg` (400 BAD_REQUEST unless said otherwise), and stores no draft (of the
 * caller) and no event.
 */
async function expectRefused(as: Person, send: () => Promise<Parameters<typeof expectJsonError>[0]>, msg: string, status = 400, code = 'BAD_REQUEST') {
  const before = await storedCount(as);
  const mark = await markEvents(env);
  expectJsonError(await send(), status, msg, code);
  expect(await storedCount(as)).toBe(before);
  expect(await eventsSince(env, mark)).toEqual([]);
}

const register = (as: Person, body: RegisterBody) => registerQueue(env.client(as), body);
const poll = (as: Person, queue: Queue) => pollEvents(env.client(as), queue);

// ---------------------------------------------------------------------------------------------

describe('POST /drafts', () => {
  it('stores a batch of every kind, answers the ids in the order given, and reads them back as Zulip does', async () => {
    const ids = await createOk('hamlet', [
      streamDraft('to the castle', { timestamp: 1_600_000_001 }),
      directDraft([uid('othello')], 'to othello', { timestamp: 1_600_000_002 }),
      directDraft([uid('othello'), uid('cordelia'), uid('othello')], 'to a group', { timestamp: 1_600_000_003 }),
      directDraft([uid('hamlet')], 'to myself', { timestamp: 1_600_000_004 }),
      directDraft([uid('hamlet'), uid('cordelia')], 'to cordelia, me included', { timestamp: 1_600_000_005 }),
      directDraft([], 'direct without recipients', { timestamp: 1_600_000_006 }),
      { type: '', to: [uid('othello'), publicChannel.id], topic: 'ignored', content: 'unaddressed', timestamp: 1_600_000_007 },
      directDraft([uid('othello')], 'topic ignored', { topic: 'not kept', timestamp: 1_600_000_008 }),
    ]);
    expect(ids).toHaveLength(8);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    const byId = new Map((await listDrafts('hamlet')).drafts.map((d) => [d.id, d]));
    const read = ids.map((id) => byId.get(id));
    const [othello, cordelia, hamlet] = [uid('othello'), uid('cordelia'), uid('hamlet')];
    expect(read).toEqual([
      { id: ids[0], type: 'stream', to: [publicChannel.id], topic: 'castle', content: 'to the castle', timestamp: 1_600_000_001 },
      { id: ids[1], type: 'private', to: [othello], topic: '', content: 'to othello', timestamp: 1_600_000_002 },
      // A group: the other participants, ascending, once each.
      { id: ids[2], type: 'private', to: [othello, cordelia].sort((a, b) => a - b), topic: '', content: 'to a group', timestamp: 1_600_000_003 },
      { id: ids[3], type: 'private', to: [hamlet], topic: '', content: 'to myself', timestamp: 1_600_000_004 },
      { id: ids[4], type: 'private', to: [cordelia], topic: '', content: 'to cordelia, me included', timestamp: 1_600_000_005 },
      // No recipients: stored unaddressed.
      { id: ids[5], type: '', to: [], topic: '', content: 'direct without recipients', timestamp: 1_600_000_006 },
      { id: ids[6], type: '', to: [], topic: '', content: 'unaddressed', timestamp: 1_600_000_007 },
      { id: ids[7], type: 'private', to: [othello], topic: '', content: 'topic ignored', timestamp: 1_600_000_008 },
    ]);
  });

  it('fills in the time of the request when no timestamp (or null) is given, and drops fractions of seconds', async () => {
    const before = Math.floor(Date.now() / 1000);
    const ids = await createOk('hamlet', [streamDraft('no timestamp'), streamDraft('null timestamp', { timestamp: null }), streamDraft('fraction', { timestamp: 1_595_479_019.9 })]);
    const after = Math.ceil(Date.now() / 1000);
    const byId = new Map((await listDrafts('hamlet')).drafts.map((d) => [d.id, d]));
    for (const id of ids.slice(0, 2)) {
      expect(byId.get(id)!.timestamp).toBeGreaterThanOrEqual(before);
      expect(byId.get(id)!.timestamp).toBeLessThanOrEqual(after);
    }
    expect(byId.get(ids[2]!)!.timestamp).toBe(1_595_479_019);
    expect(Number.isInteger(byId.get(ids[0]!)!.timestamp)).toBe(true);
  });

  it('strips the content, cuts over-long content and topics as Zulip does, and keeps a topic as given otherwise', async () => {
    const long = 'x'.repeat(10_001);
    const [stripped, cut, exact, topicCut, controlEnd] = await createOk('hamlet', [
      streamDraft('\n\n  hello there \t\n', { topic: '  spaced topic  ' }),
      streamDraft(long),
      streamDraft('y'.repeat(10_000), { topic: 't'.repeat(60) }),
      streamDraft('long topic', { topic: 'é'.repeat(61) }),
      // Zulip's message normalisation also drops trailing \x1c-\x1f (Python whitespace).
      streamDraft('ends in a separator\u001f'),
    ]);
    expect(await storedRow(stripped!)).toMatchObject({ content: 'hello there', topic: '  spaced topic  ' });
    expect((await storedRow(cut!))!.content).toBe(`${'x'.repeat(9_980)}\n[message truncated]`);
    expect(await storedRow(exact!)).toMatchObject({ content: 'y'.repeat(10_000), topic: 't'.repeat(60) });
    expect((await storedRow(topicCut!))!.topic).toBe(`${'é'.repeat(57)}...`);
    expect((await storedRow(controlEnd!))!.content).toBe('ends in a separator');
    // Only separators: not blank for the parameter check, empty once normalised.
    await expectRefused('hamlet', () => create('hamlet', [streamDraft('\u001c\u001d')]), 'Message must not be empty');
  });

  it('accepts the draft list as JSON text in a form body, as real clients send it, and reports unknown parameters', async () => {
    const text = JSON.stringify([{ type: 'private', to: [uid('othello')], topic: '', content: 'from the wire' }]);
    const res = await env.raw('/drafts', {
      method: 'POST',
      as: 'hamlet',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ drafts: text, client_hint: 'x' }).toString(),
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ result: 'success', msg: '', ignored_parameters_unsupported: ['client_hint'] });
    expect(res.body.ids).toHaveLength(1);
    expect(await storedRow(res.body.ids[0])).toMatchObject({ type: 'private', toIds: [uid('othello')], content: 'from the wire' });

    // zulip-js sends POST bodies as multipart.
    const form = new FormData();
    form.set('drafts', JSON.stringify([{ type: '', to: [], topic: '', content: 'multipart' }]));
    const multipart = await env.raw('/drafts', { method: 'POST', as: 'hamlet', body: form });
    expect(multipart.status).toBe(200);
    expect(await storedRow(multipart.body.ids[0])).toMatchObject({ type: '', content: 'multipart' });
  });

  it('creates nothing without the drafts parameter, or with an empty list', async () => {
    const before = await storedCount('hamlet');
    const res = await env.raw('/drafts', { method: 'POST', as: 'hamlet' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', ids: [] });
    expect(await createOk('hamlet', [])).toEqual([]);
    expect(await storedCount('hamlet')).toBe(before);
  });

  describe('refuses an invalid draft with Zulip\'s error, storing nothing', () => {
    it('checks the parameter and each draft\'s fields', async () => {
      await expectRefused('hamlet', () => rawCreate('hamlet', 'not json'), 'drafts is not valid JSON');
      await expectRefused('hamlet', () => rawCreate('hamlet', '{"type": "stream"}'), 'drafts is not a list');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft(), { ...streamDraft(), type: 'channel' }]), 'Invalid drafts[1]["type"]');
      await expectRefused('hamlet', () => create('hamlet', [{ ...streamDraft(), id: 5 }]), 'Argument "id" at drafts[0]["id"] is unexpected');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('')]), 'drafts[0]["content"] cannot be blank');
      await expectRefused('hamlet', () => create('hamlet', [{ ...streamDraft(), to: ['Denmark'] }]), 'drafts[0]["to"][0] is not an integer');
      await expectRefused('hamlet', () => create('hamlet', [{ ...streamDraft(), to: publicChannel.id }]), 'drafts[0]["to"] is not a list');
      await expectRefused('hamlet', () => create('hamlet', [{ ...streamDraft(), topic: 5 }]), 'drafts[0]["topic"] is not a string');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('ok', { timestamp: 253_402_300_800 })]), 'drafts[0]["timestamp"] is too large');
    });

    it('refuses content that is only whitespace, and checks every draft\'s content before any addressee', async () => {
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine'), streamDraft(' \n\t\u3000 ')]), 'drafts[1]["content"] cannot be blank');
      // draft 0 names a channel that does not exist, draft 1 is blank: the blank content is reported.
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine', { to: [999_999] }), streamDraft('   ')]), 'drafts[1]["content"] cannot be blank');
    });

    it('refuses NUL characters in any string of a draft (Parley refuses them in every parameter)', async () => {
      // Zulip answers `Message must not contain null bytes` / `Topic must not contain null bytes` and
      // ignores the topic of a direct-message draft; Parley's parameter decoder refuses a NUL anywhere
      // first, naming where it is (spec/openapi.yaml, limits that apply to every operation).
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('bad \u0000 content')]), 'drafts[0]["content"] contains a NUL character');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft(), streamDraft('fine', { topic: 'bad \u0000 topic' })]), 'drafts[1]["topic"] contains a NUL character');
      await expectRefused('hamlet', () => create('hamlet', [directDraft([uid('othello')], 'fine', { topic: 'bad \u0000 topic' })]), 'drafts[0]["topic"] contains a NUL character');
    });

    it('checks the content, then the timestamp, then the channel count, then the channel', async () => {
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('\u001c', { timestamp: -1, to: [] })]), 'Message must not be empty');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine', { timestamp: -1, to: [] })]), 'Timestamp must not be negative.');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine', { to: [] })]), 'Must specify exactly 1 channel ID for channel messages');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine', { to: [999_999, privateChannel.id] })]), 'Must specify exactly 1 channel ID for channel messages');
      // Drafts are checked in order: the first invalid one is reported.
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine', { to: [999_998] }), directDraft([999_997])]), 'Invalid channel ID');
      await expectRefused('hamlet', () => create('hamlet', [directDraft([999_997]), streamDraft('fine', { to: [999_998] })]), 'Invalid user ID 999997');
    });

    it('refuses a negative timestamp, but not one that rounds to zero', async () => {
      await expectRefused('hamlet', () => create('hamlet', [directDraft([], 'past', { timestamp: -0.5 })]), 'Timestamp must not be negative.');
      const [id] = await createOk('hamlet', [directDraft([], 'epoch', { timestamp: -0.0000001 })]);
      expect((await storedRow(id!))!.lastEditTime.getTime()).toBe(0);
    });

    it('refuses channels that do not exist, that the user cannot read, and archived ones', async () => {
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine', { to: [999_999] })]), 'Invalid channel ID');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine', { to: [privateChannel.id] })]), 'Invalid channel ID');
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('fine', { to: [archivedChannel.id] })]), 'Invalid channel ID');
      // A guest reads only the channels they are subscribed to (or web-public ones).
      await expectRefused('polonius', () => create('polonius', [streamDraft('fine')]), 'Invalid channel ID');
      // A subscriber of the private channel may draft to it; a guest may draft direct messages.
      expect(await createOk('iago', [streamDraft('private plans', { to: [privateChannel.id] })])).toHaveLength(1);
      expect(await createOk('polonius', [directDraft([uid('hamlet')])])).toHaveLength(1);
    });

    it('refuses unknown and deactivated recipients of a direct-message draft', async () => {
      await expectRefused('hamlet', () => create('hamlet', [directDraft([uid('othello'), 999_999])]), 'Invalid user ID 999999');
      await expectRefused('hamlet', () => create('hamlet', [directDraft([uid('othello'), deactivated.id])]), `'${deactivated.email}' is no longer using Zulip.`);
      // An unknown id is reported before a deactivated one.
      await expectRefused('hamlet', () => create('hamlet', [directDraft([deactivated.id, 999_999])]), 'Invalid user ID 999999');
    });

    it('rejects the whole batch when one draft is invalid: no draft of it is stored, and no event', async () => {
      const before = (await listDrafts('hamlet')).drafts;
      await expectRefused('hamlet', () => create('hamlet', [streamDraft('first is fine'), directDraft([uid('othello')], 'second is fine'), streamDraft('third is not', { to: [privateChannel.id] })]), 'Invalid channel ID');
      expect((await listDrafts('hamlet')).drafts).toEqual(before);
    });
  });
});

describe('GET /drafts', () => {
  it('lists only the user\'s own drafts, oldest edit first (ties by id), with their count', async () => {
    const ids = await createOk('cordelia', [
      directDraft([uid('hamlet')], 'third', { timestamp: 1_700_000_300 }),
      directDraft([uid('hamlet')], 'first', { timestamp: 1_700_000_100 }),
      directDraft([uid('hamlet')], 'second a', { timestamp: 1_700_000_200 }),
      directDraft([uid('hamlet')], 'second b', { timestamp: 1_700_000_200 }),
    ]);
    await createOk('othello', [directDraft([uid('cordelia')], 'othello\'s own')]);
    const listed = await listDrafts('cordelia');
    const mine = listed.drafts.filter((d) => ids.includes(d.id));
    expect(mine.map((d) => d.content)).toEqual(['first', 'second a', 'second b', 'third']);
    expect(listed.count).toBe(listed.drafts.length);
    expect(listed.count).toBe(await storedCount('cordelia'));
    expect(listed.drafts.some((d) => d.content === 'othello\'s own')).toBe(false);
    const times = listed.drafts.map((d) => d.timestamp);
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });
});

describe('PATCH /drafts/{draft_id}', () => {
  it('replaces the whole draft, validated as on creation', async () => {
    const [id] = await createOk('hamlet', [streamDraft('before', { topic: 'old topic', timestamp: 1_600_000_000 })]);
    const { error } = await edit('hamlet', id!, directDraft([uid('othello'), uid('cordelia')], '  after  ', { timestamp: 1_650_000_000 }));
    expect(error).toBeUndefined();
    const read = (await listDrafts('hamlet')).drafts.find((d) => d.id === id);
    expect(read).toEqual({ id, type: 'private', to: [uid('othello'), uid('cordelia')].sort((a, b) => a - b), topic: '', content: 'after', timestamp: 1_650_000_000 });

    // Without a timestamp the edit time is now.
    const before = Math.floor(Date.now() / 1000);
    expect((await edit('hamlet', id!, { type: '', to: [], topic: '', content: 'now' })).error).toBeUndefined();
    const row = await storedRow(id!);
    expect(row).toMatchObject({ type: '', toIds: [], topic: '', content: 'now' });
    expect(row!.lastEditTime.getTime()).toBeGreaterThanOrEqual(before * 1000);
  });

  it('answers Draft does not exist (404, BAD_REQUEST) for an unknown draft or someone else\'s, leaving it unchanged', async () => {
    const [othellos] = await createOk('othello', [directDraft([uid('hamlet')], 'othello keeps this')]);
    const rowBefore = await storedRow(othellos!);
    await expectRefused('hamlet', () => edit('hamlet', othellos!, directDraft([], 'hijacked')), 'Draft does not exist', 404);
    expect(await storedRow(othellos!)).toEqual(rowBefore);
    await expectRefused('hamlet', () => edit('hamlet', 2_000_000_000, directDraft([], 'nothing')), 'Draft does not exist', 404);
    // The draft is looked up before its new addressee is checked.
    await expectRefused('hamlet', () => edit('hamlet', othellos!, streamDraft('x', { to: [999_999] })), 'Draft does not exist', 404);
  });

  it('refuses an invalid draft and keeps the stored one', async () => {
    const [id] = await createOk('hamlet', [streamDraft('keep me')]);
    const rowBefore = await storedRow(id!);
    const missing = await env.raw(`/drafts/${id}`, { method: 'PATCH', as: 'hamlet' });
    expectJsonError(missing, 400, "Missing 'draft' argument", 'REQUEST_VARIABLE_MISSING');
    expect(missing.body.var_name).toBe('draft');
    await expectRefused('hamlet', () => edit('hamlet', id!, streamDraft('   ')), 'draft["content"] cannot be blank');
    await expectRefused('hamlet', () => edit('hamlet', id!, { ...streamDraft(), type: 'direct' }), 'Invalid draft["type"]');
    await expectRefused('hamlet', () => edit('hamlet', id!, { ...streamDraft(), id }), 'Argument "id" at draft["id"] is unexpected');
    await expectRefused('hamlet', () => edit('hamlet', id!, streamDraft('x', { to: [privateChannel.id] })), 'Invalid channel ID');
    await expectRefused('hamlet', () => edit('hamlet', id!, streamDraft('x', { to: [] })), 'Must specify exactly 1 channel ID for channel messages');
    await expectRefused('hamlet', () => edit('hamlet', id!, directDraft([999_999])), 'Invalid user ID 999999');
    expect(await storedRow(id!)).toEqual(rowBefore);
  });
});

describe('DELETE /drafts/{draft_id}', () => {
  it('deletes the user\'s own draft', async () => {
    const [id, kept] = await createOk('hamlet', [streamDraft('delete me'), streamDraft('keep me')]);
    const { data, error } = await remove('hamlet', id!);
    expect(error).toBeUndefined();
    expect(data).toMatchObject({ result: 'success', msg: '' });
    expect(await storedRow(id!)).toBeNull();
    expect(await storedRow(kept!)).not.toBeNull();
    await expectRefused('hamlet', () => remove('hamlet', id!), 'Draft does not exist', 404);
  });

  it('answers Draft does not exist (404, BAD_REQUEST) for someone else\'s draft, which stays', async () => {
    const [othellos] = await createOk('othello', [directDraft([uid('hamlet')], 'not yours')]);
    await expectRefused('hamlet', () => remove('hamlet', othellos!), 'Draft does not exist', 404);
    expect(await storedRow(othellos!)).not.toBeNull();
    const tooLarge = await env.raw('/drafts/99999999999', { method: 'DELETE', as: 'hamlet' });
    expectJsonError(tooLarge, 404, 'Draft does not exist', 'BAD_REQUEST');
  });
});

describe('drafts events', () => {
  it('stores add, update and remove events for the owner only, matching the spec', async () => {
    const mark = await markEvents(env);
    const ids = await createOk('hamlet', [streamDraft('event one', { timestamp: 1_600_000_010 }), directDraft([uid('othello')], 'event two', { timestamp: 1_600_000_020 })]);
    expect((await edit('hamlet', ids[0]!, streamDraft('event one, edited', { timestamp: 1_600_000_030 }))).error).toBeUndefined();
    expect((await remove('hamlet', ids[1]!)).error).toBeUndefined();
    const events = await eventsSince(env, mark); // each payload is checked against the spec's event schemas
    expect(events).toEqual([
      {
        userIds: [uid('hamlet')],
        payload: {
          type: 'drafts',
          op: 'add',
          drafts: [
            { id: ids[0], type: 'stream', to: [publicChannel.id], topic: 'castle', content: 'event one', timestamp: 1_600_000_010 },
            { id: ids[1], type: 'private', to: [uid('othello')], topic: '', content: 'event two', timestamp: 1_600_000_020 },
          ],
        },
      },
      {
        userIds: [uid('hamlet')],
        payload: { type: 'drafts', op: 'update', draft: { id: ids[0], type: 'stream', to: [publicChannel.id], topic: 'castle', content: 'event one, edited', timestamp: 1_600_000_030 } },
      },
      { userIds: [uid('hamlet')], payload: { type: 'drafts', op: 'remove', draft_id: ids[1] } },
    ]);
  });

  it('delivers them to the user\'s own queues, not to anyone else\'s', async () => {
    const mine = await register('hamlet', { event_types: ['drafts'] });
    const other = await register('othello', { event_types: ['drafts'] });
    const [id] = await createOk('hamlet', [directDraft([uid('othello')], 'queued', { timestamp: 1_600_000_040 })]);
    expect((await edit('hamlet', id!, directDraft([uid('othello')], 'queued, edited', { timestamp: 1_600_000_050 }))).error).toBeUndefined();
    expect((await remove('hamlet', id!)).error).toBeUndefined();
    const events = await poll('hamlet', mine);
    expect(events.map(({ id: _id, ...rest }) => rest)).toEqual([
      { type: 'drafts', op: 'add', drafts: [{ id, type: 'private', to: [uid('othello')], topic: '', content: 'queued', timestamp: 1_600_000_040 }] },
      { type: 'drafts', op: 'update', draft: { id, type: 'private', to: [uid('othello')], topic: '', content: 'queued, edited', timestamp: 1_600_000_050 } },
      { type: 'drafts', op: 'remove', draft_id: id },
    ]);
    expect(events.every((e) => Number.isInteger(e.id) && e.id > mine.last_event_id)).toBe(true);
    expect(await poll('othello', other)).toEqual([]);
  });
});

describe('/register drafts state', () => {
  it('holds the user\'s drafts, newest edit first', async () => {
    const ids = await createOk('shiva', [
      directDraft([uid('hamlet')], 'older', { timestamp: 1_600_000_100 }),
      directDraft([uid('hamlet')], 'newest', { timestamp: 1_600_000_300 }),
      directDraft([uid('hamlet')], 'middle', { timestamp: 1_600_000_200 }),
    ]);
    const state = await register('shiva', { fetch_event_types: ['drafts'] });
    const drafts = state.drafts!;
    expect(drafts.map((d) => d.id)).toEqual([ids[1], ids[2], ids[0]]);
    expect(drafts[0]).toEqual({ id: ids[1], type: 'private', to: [uid('hamlet')], topic: '', content: 'newest', timestamp: 1_600_000_300 });
    const gotten = (await listDrafts('shiva')).drafts;
    expect([...drafts].reverse()).toEqual(gotten);
    expect(state).not.toHaveProperty('realm_users');
  });
});

describe('enable_drafts_synchronization off', () => {
  it('refuses every drafts operation with Zulip\'s error and shows no drafts in /register', async () => {
    const [id] = await createOk('desdemona', [directDraft([uid('hamlet')], 'stored before')]);
    await withSyncOff('desdemona', async () => {
      const msg = 'User has disabled synchronizing drafts.';
      await expectRefused('desdemona', () => create('desdemona', [directDraft([uid('hamlet')])]), msg);
      expectJsonError(await env.client('desdemona').GET('/drafts'), 400, msg, 'BAD_REQUEST');
      await expectRefused('desdemona', () => edit('desdemona', id!, directDraft([], 'changed')), msg);
      await expectRefused('desdemona', () => remove('desdemona', id!), msg);
      // The guard comes before the draft lookup.
      await expectRefused('desdemona', () => remove('desdemona', 2_000_000_000), msg);
      const state = await register('desdemona', { fetch_event_types: ['drafts'] });
      expect(state.drafts).toEqual([]);
    });
    expect(await storedRow(id!)).toMatchObject({ content: 'stored before' });
    // Back on: everything works again.
    expect((await listDrafts('desdemona')).drafts.some((d) => d.id === id)).toBe(true);
  });

  it('deleteAllDraftsOfUser (for PATCH /settings) deletes every draft of that user and nobody else\'s', async () => {
    await createOk('desdemona', [directDraft([uid('hamlet')], 'one'), directDraft([uid('hamlet')], 'two')]);
    const othersBefore = await db().draft.count({ where: { userId: { not: uid('desdemona') } } });
    const deleted = await db().$transaction((tx) => deleteAllDraftsOfUser(tx, uid('desdemona')));
    expect(deleted).toBeGreaterThanOrEqual(2);
    expect(await storedCount('desdemona')).toBe(0);
    expect(await db().draft.count({ where: { userId: { not: uid('desdemona') } } })).toBe(othersBefore);
  });
});
