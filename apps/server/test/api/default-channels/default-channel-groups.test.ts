// Default channel groups: creating, renaming and describing, adding and removing channels, deleting;
// owners and administrators only; Zulip's checks in its order with nothing changed on a refusal; the
// `default_stream_groups` event (every group, sorted by name, channel IDs sorted by channel name) for
// users who are not guests; `realm_default_stream_groups` in /register; archiving a channel takes it
// out of every group.
import { randomBytes } from 'node:crypto';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers } from '../../helpers/people.ts';
import { registerQueue } from '../../helpers/queues.ts';

const env = useTestServer();

const db = () => env.running.deps.db;

// Named so that name order differs from id order.
let zebra: { id: number; name: string };
let apple: { id: number; name: string };
let mango: { id: number; name: string };
let defaultOne: { id: number; name: string };
let hidden: { id: number; name: string };

beforeAll(async () => {
  zebra = await createChannel(env, 'iago', { name: 'zebra' }, ['iago']);
  apple = await createChannel(env, 'iago', { name: 'apple' }, ['iago']);
  mango = await createChannel(env, 'iago', { name: 'mango' }, ['iago']);
  defaultOne = await createChannel(env, 'iago', { name: 'already default', is_default_stream: true }, ['iago']);
  hidden = await createChannel(env, 'hamlet', { name: 'hidden', invite_only: true }, ['hamlet']);
});

// Each test starts without groups.
beforeEach(async () => {
  await db().defaultChannelGroup.deleteMany({ where: { realmId: env.realmId } });
});

const uniqueName = (label: string) => `${label} ${randomBytes(3).toString('hex')}`;

const createGroup = (form: { group_name: string; description: string; stream_names: string[] }, as: Person = 'iago') =>
  env.raw('/default_stream_groups/create', { method: 'POST', as, body: new URLSearchParams({ ...form, stream_names: JSON.stringify(form.stream_names) }) });

async function createOk(name: string, channels: Array<{ name: string }>, description = ''): Promise<number> {
  const res = await createGroup({ group_name: name, description, stream_names: channels.map((c) => c.name) });
  if (res.status !== 200) throw new Error(`create group failed: ${JSON.stringify(res.body)}`);
  return (await db().defaultChannelGroup.findFirstOrThrow({ where: { realmId: env.realmId, name } })).id;
}

const updateInfo = (id: number, form: Record<string, string>, as: Person = 'iago') => env.raw(`/default_stream_groups/${id}`, { method: 'PATCH', as, body: new URLSearchParams(form) });
const updateChannels = (id: number, op: string, channels: Array<{ name: string }>, as: Person = 'iago') =>
  env.raw(`/default_stream_groups/${id}/streams`, { method: 'PATCH', as, body: new URLSearchParams({ op, stream_names: JSON.stringify(channels.map((c) => c.name)) }) });
const removeGroup = (id: number, as: Person = 'iago') => env.raw(`/default_stream_groups/${id}`, { method: 'DELETE', as });

/** The groups as a user who is not a guest sees them in /register. */
async function groups(as: Person = 'hamlet') {
  const state = await registerQueue(env.client(as), { fetch_event_types: ['default_stream_groups'] });
  return state.realm_default_stream_groups!;
}

/** The default_stream_groups events since `mark`: each the current list, to every active user who is not a guest. */
async function expectGroupsEvents(mark: bigint, count = 1): Promise<void> {
  const nonGuests = (await activeUsers(env, env.realmId)).filter((u) => u.role !== 600).map((u) => u.id);
  const events = await eventsSince(env, mark);
  expect(events).toHaveLength(count);
  expect(events.at(-1)).toEqual({ userIds: nonGuests, payload: { type: 'default_stream_groups', default_stream_groups: await groups() } });
  for (const e of events) expect(e.userIds).toEqual(nonGuests);
}

async function expectUnchanged(before: unknown, mark: bigint): Promise<void> {
  expect(await groups()).toEqual(before);
  expect(await eventsSince(env, mark)).toEqual([]);
}

describe('POST /default_stream_groups/create', () => {
  it.each(['desdemona', 'iago'] as const)('creates a group, as %s: channels by name order, groups by name', async (person) => {
    await createOk('b group', [apple]);
    const mark = await markEvents(env);
    const res = await createGroup({ group_name: 'a group', description: 'Channels for engineers', stream_names: [zebra.name, apple.name.toUpperCase(), mango.name] }, person);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    const listed = await groups();
    expect(listed.map((g) => g.name)).toEqual(['a group', 'b group']);
    expect(listed[0]).toEqual({ id: expect.any(Number), name: 'a group', description: 'Channels for engineers', streams: [apple.id, mango.id, zebra.id] });
    await expectGroupsEvents(mark);
    // Guests are told nothing of groups.
    expect(await groups('polonius')).toEqual([]);
  });

  describe('refusals, in Zulip’s order (nothing created, no event)', () => {
    async function expectRefused(form: { group_name: string; description: string; stream_names: string[] }, msg: string, as: Person = 'iago', code = 'BAD_REQUEST') {
      if (!(await db().defaultChannelGroup.findFirst({ where: { realmId: env.realmId, name: 'existing' } }))) await createOk('existing', [apple]);
      const before = await groups();
      const mark = await markEvents(env);
      expectJsonError(await createGroup(form, as), 400, msg, code);
      await expectUnchanged(before, mark);
    }

    it.each(['shiva', 'hamlet', 'polonius'] as const)('%s is not an administrator', async (person) => {
      await expectRefused({ group_name: 'new', description: '', stream_names: [apple.name] }, 'Must be an organization administrator', person, 'UNAUTHORIZED_PRINCIPAL');
    });

    it('an unknown, unreadable or archived channel comes first', async () => {
      await expectRefused({ group_name: ' ', description: '', stream_names: [apple.name, 'nowhere'] }, "Invalid channel name 'nowhere'");
      await expectRefused({ group_name: 'new', description: '', stream_names: [hidden.name] }, `Invalid channel name '${hidden.name}'`);
    });

    it('then a default channel', async () => {
      await expectRefused({ group_name: ' ', description: '', stream_names: [defaultOne.name] }, `'${defaultOne.name}' is a default channel and cannot be added to ' '`);
    });

    it('then a blank or too long name, then a taken one (case-sensitively)', async () => {
      await expectRefused({ group_name: '   ', description: '', stream_names: [] }, "Invalid default channel group name '   '");
      await expectRefused({ group_name: 'g'.repeat(61), description: '', stream_names: [] }, 'Default channel group name too long (limit: 60 characters)');
      await expectRefused({ group_name: 'existing', description: 'other', stream_names: [mango.name] }, "Default channel group 'existing' already exists");
      expect((await createGroup({ group_name: 'Existing', description: '', stream_names: [] })).status).toBe(200);
    });

    it('missing parameters', async () => {
      const res = await env.raw('/default_stream_groups/create', { method: 'POST', as: 'iago', body: new URLSearchParams({ group_name: 'x', description: '' }) });
      expectJsonError(res, 400, "Missing 'stream_names' argument", 'REQUEST_VARIABLE_MISSING');
    });
  });
});

describe('PATCH /default_stream_groups/{group_id}', () => {
  it('renames and describes a group, one event per change', async () => {
    const id = await createOk('engineering', [apple]);
    const mark = await markEvents(env);
    expect((await updateInfo(id, { new_group_name: 'developers', new_description: 'For developers' })).body).toEqual({ result: 'success', msg: '' });
    expect(await groups()).toEqual([{ id, name: 'developers', description: 'For developers', streams: [apple.id] }]);
    await expectGroupsEvents(mark, 2);
  });

  it('changes only the description when only it is given', async () => {
    const id = await createOk('solo', [], 'old');
    expect((await updateInfo(id, { new_description: 'new' }, 'desdemona')).status).toBe(200);
    expect(await groups()).toEqual([{ id, name: 'solo', description: 'new', streams: [] }]);
  });

  it.each<[label: string, form: Record<string, string>, msg: string]>([
    ['nothing to change', {}, 'You must pass "new_description" or "new_group_name".'],
    ['empty values count as nothing', { new_group_name: '', new_description: '' }, 'You must pass "new_description" or "new_group_name".'],
    ['the same name', { new_group_name: 'engineering' }, "This default channel group is already named 'engineering'"],
    ['a taken name', { new_group_name: 'taken' }, "Default channel group 'taken' already exists"],
    ['a name too long', { new_group_name: 'n'.repeat(61) }, 'Default channel group name too long (limit: 60 characters)'],
    ['a taken name with a description: neither applies', { new_group_name: 'taken', new_description: 'lost' }, "Default channel group 'taken' already exists"],
  ])('refuses %s, changing nothing', async (_label, form, msg) => {
    const id = await createOk('engineering', [apple], 'kept');
    await createOk('taken', []);
    const before = await groups();
    const mark = await markEvents(env);
    expectJsonError(await updateInfo(id, form), 400, msg, 'BAD_REQUEST');
    await expectUnchanged(before, mark);
  });

  it('refuses an unknown group and non-administrators', async () => {
    const id = await createOk('engineering', []);
    expectJsonError(await updateInfo(999_999, { new_description: 'x' }), 400, "Default channel group with id '999999' does not exist.", 'BAD_REQUEST');
    for (const person of ['shiva', 'hamlet', 'polonius'] as const) {
      expectJsonError(await updateInfo(id, { new_description: 'x' }, person), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    }
    expect((await groups())[0]!.description).toBe('');
  });
});

describe('PATCH /default_stream_groups/{group_id}/streams', () => {
  it('adds and removes channels', async () => {
    const id = await createOk(uniqueName('group'), [mango]);
    let mark = await markEvents(env);
    expect((await updateChannels(id, 'add', [zebra, apple])).body).toEqual({ result: 'success', msg: '' });
    expect((await groups())[0]!.streams).toEqual([apple.id, mango.id, zebra.id]);
    await expectGroupsEvents(mark);
    mark = await markEvents(env);
    expect((await updateChannels(id, 'remove', [mango, zebra], 'desdemona')).status).toBe(200);
    expect((await groups())[0]!.streams).toEqual([apple.id]);
    await expectGroupsEvents(mark);
  });

  type ChannelsCase = [label: string, op: string, channels: () => Array<{ name: string }>, msg: (group: string) => string];
  it.each<ChannelsCase>([
    ['a channel already in the group (the whole request fails)', 'add', () => [zebra, mango], (g: string) => `Channel '${mango.name}' is already present in default channel group '${g}'`],
    ['a channel twice', 'add', () => [zebra, zebra], (g: string) => `Channel '${zebra.name}' is already present in default channel group '${g}'`],
    ['a default channel', 'add', () => [apple, defaultOne], (g: string) => `'${defaultOne.name}' is a default channel and cannot be added to '${g}'`],
    ['removing a channel not in the group', 'remove', () => [mango, apple], (g: string) => `Channel '${apple.name}' is not present in default channel group '${g}'`],
    ['an unknown channel (before the operation)', 'drop', () => [{ name: 'nowhere' }], () => "Invalid channel name 'nowhere'"],
    ['an unknown operation', 'drop', () => [mango], () => 'Invalid value for "op". Specify one of "add" or "remove".'],
  ])('refuses %s, changing nothing', async (_label, op, channels, msg) => {
    const name = uniqueName('group');
    const id = await createOk(name, [mango]);
    const before = await groups();
    const mark = await markEvents(env);
    expectJsonError(await updateChannels(id, op, channels()), 400, msg(name), 'BAD_REQUEST');
    await expectUnchanged(before, mark);
  });

  it('refuses an unknown group (before the channels) and non-administrators', async () => {
    const id = await createOk(uniqueName('group'), []);
    expectJsonError(await updateChannels(999_999, 'add', [{ name: 'nowhere' }]), 400, "Default channel group with id '999999' does not exist.", 'BAD_REQUEST');
    for (const person of ['shiva', 'hamlet', 'polonius'] as const) {
      expectJsonError(await updateChannels(id, 'add', [apple], person), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    }
    expect((await groups())[0]!.streams).toEqual([]);
  });

  it('archiving a channel takes it out of every group, with an event', async () => {
    const doomed = await createChannel(env, 'iago', { name: 'doomed' }, ['iago']);
    const one = await createOk('one', [doomed, apple]);
    const two = await createOk('two', [doomed]);
    const mark = await markEvents(env);
    const { error } = await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: doomed.id } } });
    expect(error).toBeUndefined();
    expect(await groups()).toEqual([
      { id: one, name: 'one', description: '', streams: [apple.id] },
      { id: two, name: 'two', description: '', streams: [] },
    ]);
    const groupEvents = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'default_stream_groups');
    expect(groupEvents.map((e) => e.payload.default_stream_groups)).toEqual([await groups()]);
  });
});

describe('DELETE /default_stream_groups/{group_id}', () => {
  it.each(['desdemona', 'iago'] as const)('deletes a group, as %s, leaving its channels alone', async (person) => {
    const id = await createOk('doomed group', [apple]);
    const kept = await createOk('kept group', [mango]);
    const mark = await markEvents(env);
    expect((await removeGroup(id, person)).body).toEqual({ result: 'success', msg: '' });
    expect((await groups()).map((g) => g.id)).toEqual([kept]);
    expect(await db().channel.count({ where: { id: apple.id, isArchived: false } })).toBe(1);
    await expectGroupsEvents(mark);
  });

  it('refuses an unknown group and non-administrators', async () => {
    const id = await createOk('stays', []);
    const mark = await markEvents(env);
    expectJsonError(await removeGroup(999_999), 400, "Default channel group with id '999999' does not exist.", 'BAD_REQUEST');
    for (const person of ['shiva', 'hamlet', 'polonius'] as const) {
      expectJsonError(await removeGroup(id, person), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    }
    expect((await groups()).map((g) => g.id)).toEqual([id]);
    expect(await eventsSince(env, mark)).toEqual([]);
  });
});
