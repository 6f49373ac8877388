// GET /users/{user_id}/subscriptions/{stream_id} (Zulip's get_subscription_backend): whether a user is
// subscribed to a channel, for a requester who may see the channel's subscribers; the user checked
// first (an active human), then the channel (`Invalid channel ID` for unknown and hidden ones alike).
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { useChannel } from '../../helpers/channels.ts';
import { createDeactivatedUser, uniqueEmail } from '../../helpers/people.ts';

const env = useTestServer();
// hamlet is subscribed to both; cordelia to neither; polonius (a guest) to the public one only.
const open = useChannel(env, 'iago', {}, ['hamlet', 'polonius']);
const secret = useChannel(env, 'iago', { invite_only: true }, ['hamlet']);
// A public channel polonius is not subscribed to.
const elsewhere = useChannel(env, 'iago', {}, ['cordelia']);

const status = (as: Person, userId: number, streamId: number) =>
  env.client(as).GET('/users/{user_id}/subscriptions/{stream_id}', { params: { path: { user_id: userId, stream_id: streamId } } });
async function isSubscribed(as: Person, userId: number, streamId: number): Promise<boolean> {
  const { data, error } = await status(as, userId, streamId);
  if (!data) throw new Error(`${as}: ${JSON.stringify(error)}`);
  return data.is_subscribed;
}
const uid = (p: Person) => env.users[p].id;

describe('GET /users/{user_id}/subscriptions/{stream_id}', () => {
  it("answers for a public channel to every non-guest, and to guests subscribed to it", async () => {
    for (const as of ['desdemona', 'iago', 'shiva', 'hamlet', 'cordelia'] as Person[]) {
      expect(await isSubscribed(as, uid('hamlet'), open.id)).toBe(true);
      expect(await isSubscribed(as, uid('cordelia'), open.id)).toBe(false);
      // iago created the channel and is subscribed; the answer is about the user asked about.
      expect(await isSubscribed(as, uid('iago'), open.id)).toBe(true);
    }
    expect(await isSubscribed('polonius', uid('cordelia'), open.id)).toBe(false);
    expect(await isSubscribed('polonius', uid('polonius'), open.id)).toBe(true);
  });

  it('answers for a private channel only to those who may see its subscribers; to others it does not exist', async () => {
    expect(await isSubscribed('hamlet', uid('hamlet'), secret.id)).toBe(true);
    expect(await isSubscribed('hamlet', uid('cordelia'), secret.id)).toBe(false);
    // Administrators see every private channel's subscribers, subscribed or not.
    expect(await isSubscribed('desdemona', uid('hamlet'), secret.id)).toBe(true);
    for (const as of ['shiva', 'cordelia', 'polonius'] as Person[]) {
      const hidden = await status(as, uid('hamlet'), secret.id);
      expectJsonError(hidden, 400, 'Invalid channel ID', 'BAD_REQUEST');
      // Word for word what an unknown channel gets.
      expect(hidden.error).toEqual((await status(as, uid('hamlet'), 999_999)).error);
    }
    // A guest sees no public channel they are not subscribed to.
    expectJsonError(await status('polonius', uid('cordelia'), elsewhere.id), 400, 'Invalid channel ID', 'BAD_REQUEST');
    expect(await isSubscribed('hamlet', uid('cordelia'), elsewhere.id)).toBe(true);
  });

  it('refuses bots and unknown users (no such user) and deactivated users, checking the user before the channel', async () => {
    const email = uniqueEmail('sub-status-bot');
    const bot = await env.running.deps.db.user.create({
      data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Status Bot', isBot: true, botType: 1, botOwnerId: uid('hamlet'), settings: { create: {} } },
    });
    const gone = await createDeactivatedUser(env, 'sub-status-gone');
    expectJsonError(await status('iago', bot.id, open.id), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await status('iago', 999_999, open.id), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await status('iago', gone, open.id), 400, 'User is deactivated', 'BAD_REQUEST');
    expectJsonError(await status('cordelia', 999_999, secret.id), 400, 'No such user', 'BAD_REQUEST');
    expectJsonError(await status('cordelia', gone, 999_999), 400, 'User is deactivated', 'BAD_REQUEST');
  });

  it('answers bots that ask, and the Python client (get_subscription_status) as Zulip does', async () => {
    const email = uniqueEmail('sub-status-asker');
    const asker = await env.running.deps.db.user.create({
      data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Asking Bot', isBot: true, botType: 1, botOwnerId: uid('hamlet'), settings: { create: {} } },
    });
    const key = 'c'.repeat(24) + String(asker.id).padStart(8, '0');
    const cipher = env.running.deps.cipher;
    await env.running.deps.db.apiKey.create({ data: { userId: asker.id, lookupHash: cipher.lookupHash(key), ciphertext: cipher.encrypt(key) } });
    const res = await env.raw(`/users/${uid('hamlet')}/subscriptions/${open.id}`, { headers: { Authorization: basicAuth(email, key), 'User-Agent': 'ZulipPython/0.9.0' } });
    expect(res).toMatchObject({ status: 200, body: { result: 'success', msg: '', is_subscribed: true } });
    expect(Object.keys(res.body).sort()).toEqual(['is_subscribed', 'msg', 'result']);
  });
});

