// The organization's default channels: POST and DELETE /default_streams for owners and administrators
// only, Zulip's checks (readable, active, public) with nothing changed on a refusal, the
// `default_streams` event (channel IDs) for users who are not guests, `realm_default_streams` in
// /register (IDs since feature level 330, empty for guests), and their use: new users join them when
// created by an administrator, and when an invitation includes them.
import { beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers, createUser, uniqueEmail } from '../../helpers/people.ts';
import { registerQueue } from '../../helpers/queues.ts';
import { TEST_PASSWORD } from '../../helpers/fixtures.ts';

const env = useTestServer();

const db = () => env.running.deps.db;

let publicChannel: { id: number; name: string };
let otherPublic: { id: number; name: string };
let privateSubscribed: { id: number; name: string };
let privateHidden: { id: number; name: string };
let archived: { id: number; name: string };

beforeAll(async () => {
  publicChannel = await createChannel(env, 'iago', { name: 'default public' }, ['iago']);
  otherPublic = await createChannel(env, 'iago', { name: 'default other' }, ['iago']);
  privateSubscribed = await createChannel(env, 'iago', { name: 'default private', invite_only: true }, ['iago']);
  // Created by hamlet: iago (an administrator) is not subscribed and cannot read it.
  privateHidden = await createChannel(env, 'hamlet', { name: 'default hidden', invite_only: true }, ['hamlet']);
  archived = await createChannel(env, 'iago', { name: 'default archived' }, ['iago']);
  const { error } = await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archived.id } } });
  if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
});

const add = (streamId: string | number, as: Person = 'iago') => env.raw('/default_streams', { method: 'POST', as, body: new URLSearchParams({ stream_id: String(streamId) }) });
const remove = (streamId: string | number, as: Person = 'iago') => env.raw('/default_streams', { method: 'DELETE', as, body: new URLSearchParams({ stream_id: String(streamId) }) });

/** The organization's default channels as stored (active ones, ascending). */
async function defaults(): Promise<number[]> {
  const rows = await db().channel.findMany({ where: { realmId: env.realmId, isDefault: true, isArchived: false }, orderBy: { id: 'asc' } });
  return rows.map((c) => c.id);
}

async function setDefaults(ids: number[]): Promise<void> {
  await db().channel.updateMany({ where: { realmId: env.realmId }, data: { isDefault: false } });
  await db().channel.updateMany({ where: { id: { in: ids } }, data: { isDefault: true } });
}

/** The one default_streams event since `mark`: the new list, to every active user who is not a guest. */
async function expectDefaultsEvent(mark: bigint, ids: number[]): Promise<void> {
  const nonGuests = (await activeUsers(env, env.realmId)).filter((u) => u.role !== 600).map((u) => u.id);
  expect(await eventsSince(env, mark)).toEqual([{ userIds: nonGuests, payload: { type: 'default_streams', default_streams: ids } }]);
}

async function subscribedChannels(userId: number): Promise<number[]> {
  return (await db().subscription.findMany({ where: { userId, active: true } })).map((s) => s.channelId).sort((a, b) => a - b);
}

describe('POST /default_streams', () => {
  it.each(['desdemona', 'iago'] as const)('makes a public channel a default one, as %s, telling users who are not guests', async (person) => {
    await setDefaults([otherPublic.id]);
    const mark = await markEvents(env);
    expect((await add(publicChannel.id, person)).body).toEqual({ result: 'success', msg: '' });
    const expected = [publicChannel.id, otherPublic.id].sort((a, b) => a - b);
    expect(await defaults()).toEqual(expected);
    await expectDefaultsEvent(mark, expected);
  });

  it('changes nothing and sends nothing for a channel that is a default one already', async () => {
    await setDefaults([publicChannel.id]);
    const mark = await markEvents(env);
    expect((await add(publicChannel.id)).body).toEqual({ result: 'success', msg: '' });
    expect(await defaults()).toEqual([publicChannel.id]);
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('shows in /register as channel IDs, and as nothing to guests', async () => {
    await setDefaults([publicChannel.id, otherPublic.id]);
    const member = await registerQueue(env.client('hamlet'), { fetch_event_types: ['default_streams'] });
    expect(member.realm_default_streams).toEqual([publicChannel.id, otherPublic.id].sort((a, b) => a - b));
    const guest = await registerQueue(env.client('polonius'), { fetch_event_types: ['default_streams'] });
    expect(guest.realm_default_streams).toEqual([]);
  });

  describe('refusals (nothing changes, no event)', () => {
    async function expectRefused(res: Promise<{ status: number; body: any }>, msg: string, code = 'BAD_REQUEST') {
      await setDefaults([otherPublic.id]);
      const mark = await markEvents(env);
      expectJsonError(await res, 400, msg, code);
      expect(await defaults()).toEqual([otherPublic.id]);
      expect(await eventsSince(env, mark)).toEqual([]);
    }

    it.each(['shiva', 'hamlet', 'polonius'] as const)('%s is not an administrator', async (person) => {
      await expectRefused(add(publicChannel.id, person), 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    });

    it('a private channel', async () => {
      await expectRefused(add(privateSubscribed.id), 'Private channels cannot be made default.');
    });

    it('a private channel the caller cannot read, an archived one, an unknown one', async () => {
      await expectRefused(add(privateHidden.id), 'Invalid channel ID');
      await expectRefused(add(archived.id), 'Invalid channel ID');
      await expectRefused(add(999_999), 'Invalid channel ID');
    });

    it('a missing or malformed stream_id', async () => {
      await expectRefused(env.raw('/default_streams', { method: 'POST', as: 'iago' }), "Missing 'stream_id' argument", 'REQUEST_VARIABLE_MISSING');
      await expectRefused(add('"7"'), 'stream_id is not an integer');
      await expectRefused(add('seven'), 'stream_id is not valid JSON');
    });
  });
});

describe('DELETE /default_streams', () => {
  it.each(['desdemona', 'iago'] as const)('removes a default channel, as %s, telling users who are not guests', async (person) => {
    await setDefaults([publicChannel.id, otherPublic.id]);
    const mark = await markEvents(env);
    expect((await remove(publicChannel.id, person)).body).toEqual({ result: 'success', msg: '' });
    expect(await defaults()).toEqual([otherPublic.id]);
    await expectDefaultsEvent(mark, [otherPublic.id]);
  });

  it('sends the list even when the channel was not a default one (as Zulip does)', async () => {
    await setDefaults([otherPublic.id]);
    const mark = await markEvents(env);
    expect((await remove(publicChannel.id)).status).toBe(200);
    await expectDefaultsEvent(mark, [otherPublic.id]);
  });

  it('needs only to see the channel: an administrator may name a private channel they are not subscribed to', async () => {
    await setDefaults([]);
    const mark = await markEvents(env);
    expect((await remove(privateHidden.id)).status).toBe(200);
    await expectDefaultsEvent(mark, []);
  });

  type RemoveCase = [person: Person, channel: () => number, msg: string, code: string];
  it.each<RemoveCase>([
    ['shiva', () => publicChannel.id, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL'],
    ['hamlet', () => publicChannel.id, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL'],
    ['polonius', () => publicChannel.id, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL'],
    ['iago', () => archived.id, 'Invalid channel ID', 'BAD_REQUEST'],
    ['iago', () => 999_999, 'Invalid channel ID', 'BAD_REQUEST'],
  ])('refuses %s on channel %#, changing nothing', async (person, channel, msg, code) => {
    await setDefaults([publicChannel.id]);
    const mark = await markEvents(env);
    expectJsonError(await remove(channel(), person), 400, msg, code);
    expect(await defaults()).toEqual([publicChannel.id]);
    expect(await eventsSince(env, mark)).toEqual([]);
  });
});

describe('POST /default_streams: new users join the default channels', () => {
  /** The newest outbox e-mail to the address, and the path of its sign-up link. */
  async function signUpPath(email: string): Promise<string> {
    const mail = await db().emailOutbox.findFirstOrThrow({ where: { to: email }, orderBy: { id: 'desc' } });
    const m = /https?:\/\/[^\s/]+(\/accounts\/do_confirm\/[0-9a-f]{40})/.exec(mail.text);
    if (!m) throw new Error(`no sign-up link in: ${mail.text}`);
    return m[1]!;
  }

  async function signUp(email: string, fullName: string): Promise<number> {
    const res = await fetch(`${env.url}${await signUpPath(email)}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ full_name: fullName, password: TEST_PASSWORD }).toString(),
    });
    expect(res.status).toBe(200);
    return (await db().user.findFirstOrThrow({ where: { realmId: env.realmId, deliveryEmail: email } })).id;
  }

  it('an account an administrator creates (POST /users) joins the channels added through the API', async () => {
    await setDefaults([]);
    expect((await add(publicChannel.id)).status).toBe(200);
    expect((await add(otherPublic.id)).status).toBe(200);
    expect((await remove(otherPublic.id)).status).toBe(200);
    const { id } = await createUser(env, { label: 'default-joiner', fullName: 'Default Joiner' });
    expect(await subscribedChannels(id)).toEqual([publicChannel.id]);
  });

  it('an invited user joins them when the invitation includes them, and only then', async () => {
    await setDefaults([]);
    expect((await add(otherPublic.id)).status).toBe(200);
    const withDefaults = uniqueEmail('with-defaults');
    const without = uniqueEmail('without-defaults');
    for (const [email, include] of [[withDefaults, true], [without, false]] as const) {
      const { error } = await env.client('iago').POST('/invites', { body: { invitee_emails: email, stream_ids: [publicChannel.id], include_realm_default_subscriptions: include } });
      if (error) throw new Error(`invite failed: ${JSON.stringify(error)}`);
    }
    // Made a default channel after the invitations were sent: what counts is the list at sign-up.
    expect((await remove(otherPublic.id)).status).toBe(200);
    expect((await add(otherPublic.id)).status).toBe(200);
    const joined = await signUp(withDefaults, 'With Defaults');
    const plain = await signUp(without, 'Without Defaults');
    expect(await subscribedChannels(joined)).toEqual([publicChannel.id, otherPublic.id].sort((a, b) => a - b));
    expect(await subscribedChannels(plain)).toEqual([publicChannel.id]);
  });
});
