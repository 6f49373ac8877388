// PATCH /users/me/subscriptions: subscribing the caller to `add` and unsubscribing them from `delete` in
// one transaction (subscriptions first), the two answers merged, Zulip's errors, and an error in either
// part undoing both.
import { describe, expect, it } from 'vitest';
import { expectJsonError } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { activeSubscribers, createChannel, fresh, useChannelTestServer } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { setRealmGroupSetting } from '../../helpers/groups.ts';

const { env, sys } = useChannelTestServer();

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

type AddItem = { name: string; color?: string; description?: string };
const update = (as: Person, body: { add?: AddItem[]; delete?: string[] }) => env.client(as).PATCH('/users/me/subscriptions', { body });

const channelNamed = (name: string) => db().channel.findFirst({ where: { realmId: env.realmId, name } });

describe('PATCH /users/me/subscriptions', () => {
  it('subscribes and unsubscribes the caller in one request, answering both results merged', async () => {
    const join = await createChannel(env, 'iago', {}, ['othello']);
    const leave = await createChannel(env, 'iago', {}, ['hamlet']);
    const already = await createChannel(env, 'iago', {}, ['hamlet']);
    const notMine = await createChannel(env, 'iago', {}, []);
    const created = fresh('patched');
    const mark = await markEvents(env);
    const { data, response } = await update('hamlet', {
      add: [{ name: join.name }, { name: already.name }, { name: created, description: 'made by PATCH' }],
      delete: [leave.name, ` ${notMine.name} `],
    });
    expect(response.status).toBe(200);
    expect(data).toEqual({
      result: 'success',
      msg: '',
      subscribed: { [uid('hamlet')]: [join.name, created] },
      already_subscribed: { [uid('hamlet')]: [already.name] },
      new_subscription_messages_sent: false,
      removed: [leave.name],
      not_removed: [notMine.name],
    });
    expect(await activeSubscribers(env, join.id)).toContain(uid('hamlet'));
    expect(await activeSubscribers(env, leave.id)).not.toContain(uid('hamlet'));
    const made = await channelNamed(created);
    expect(made).toMatchObject({ description: 'made by PATCH', creatorId: uid('hamlet'), inviteOnly: false });
    expect(await activeSubscribers(env, made!.id)).toEqual([uid('hamlet')]);

    // The events of both parts, subscriptions first.
    const kinds = (await eventsSince(env, mark)).map((e) => `${e.payload.type}:${e.payload.op}`);
    expect(kinds.filter((k) => k.startsWith('subscription:'))).toEqual(['subscription:add', 'subscription:peer_add', 'subscription:peer_add', 'subscription:remove', 'subscription:peer_remove']);
    expect(kinds.indexOf('stream:create')).toBeLessThan(kinds.indexOf('subscription:add'));
  });

  it('runs the subscriptions first: a channel in both lists is joined, then left', async () => {
    const both = await createChannel(env, 'iago', {}, []);
    const { data } = await update('cordelia', { add: [{ name: both.name }], delete: [both.name] });
    expect(data).toMatchObject({ subscribed: { [uid('cordelia')]: [both.name] }, already_subscribed: {}, removed: [both.name], not_removed: [] });
    expect(await activeSubscribers(env, both.id)).not.toContain(uid('cordelia'));
  });

  it('answers with empty results for the part that has nothing to do', async () => {
    const join = await createChannel(env, 'iago', {}, []);
    expect((await update('othello', { add: [{ name: join.name }] })).data).toEqual({
      result: 'success',
      msg: '',
      subscribed: { [uid('othello')]: [join.name] },
      already_subscribed: {},
      new_subscription_messages_sent: false,
      removed: [],
      not_removed: [],
    });
    expect((await update('othello', { delete: [join.name] })).data).toEqual({
      result: 'success',
      msg: '',
      subscribed: {},
      already_subscribed: {},
      new_subscription_messages_sent: false,
      removed: [join.name],
      not_removed: [],
    });
  });

  it('undoes both parts when either fails', async () => {
    const join = await createChannel(env, 'iago', {}, []);
    const leave = await createChannel(env, 'iago', {}, ['hamlet']);
    const created = fresh('never made');
    const mark = await markEvents(env);
    const res = await update('hamlet', { add: [{ name: join.name }, { name: created }], delete: [leave.name, 'no such place', 'nowhere either'] });
    expectJsonError(res, 400, 'Channel(s) (no such place, nowhere either) do not exist', 'BAD_REQUEST');
    expect(await channelNamed(created)).toBeNull();
    expect(await activeSubscribers(env, join.id)).not.toContain(uid('hamlet'));
    expect(await activeSubscribers(env, leave.id)).toContain(uid('hamlet'));
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it("answers Zulip's errors", async () => {
    const secret = await createChannel(env, 'iago', { invite_only: true }, []);
    const pub = await createChannel(env, 'iago', {}, ['polonius']);
    const nothing = 'Nothing to do. Specify at least one of "add" or "delete".';
    expectJsonError(await update('hamlet', {}), 400, nothing, 'BAD_REQUEST');
    expectJsonError(await update('hamlet', { add: [], delete: [] }), 400, nothing, 'BAD_REQUEST');
    expectJsonError(await update('hamlet', { add: [{ name: secret.name }] }), 400, `Unable to access channel (${secret.name}).`, 'BAD_REQUEST');
    expectJsonError(await update('hamlet', { add: [{ name: '  ' }] }), 400, "Channel name can't be empty.", 'BAD_REQUEST');
    expectJsonError(await update('hamlet', { delete: [' '] }), 400, "Channel name can't be empty.", 'BAD_REQUEST');
    // Guests are refused by the subscribing part, even when only leaving channels.
    expectJsonError(await update('polonius', { delete: [pub.name] }), 400, 'Not allowed for guest users', 'BAD_REQUEST');
    expect(await activeSubscribers(env, pub.id)).toContain(uid('polonius'));

    await setRealmGroupSetting(env, 'can_create_public_channel_group', sys['role:administrators']);
    try {
      const name = fresh('forbidden');
      expectJsonError(await update('hamlet', { add: [{ name }] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expect(await channelNamed(name)).toBeNull();
    } finally {
      await setRealmGroupSetting(env, 'can_create_public_channel_group', sys['role:members']);
    }
  });

  it('answers a form-encoded PATCH as the Python client sends it', async () => {
    const join = await createChannel(env, 'iago', {}, []);
    const leave = await createChannel(env, 'iago', {}, ['othello']);
    const form = new URLSearchParams({ add: JSON.stringify([{ name: join.name }]), delete: JSON.stringify([leave.name]) });
    const res = await env.raw('/users/me/subscriptions', {
      method: 'PATCH',
      as: 'othello',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': 'ZulipPython/0.9.0' },
      body: form.toString(),
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ result: 'success', subscribed: { [uid('othello')]: [join.name] }, removed: [leave.name] });
  });
});
