// Mobile push: POST/DELETE /users/me/apns_device_token and /users/me/android_gcm_reg_id, POST
// /mobile_push/test_notification (notes §17–19), the pushes messages cause and the removals reading
// causes (push outbox rows, written with the change), and real delivery over HTTP/2 to a local APNs
// stand-in (a node:http2 server with a self-signed certificate): headers, JWT, payloads, a 410 removing
// the token, a 500 retried without a duplicate, a timeout retried.
import { spawn } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { TEST_SECRET, type Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly } from '../../helpers/channels.ts';
import { createAccount, type Account } from '../../helpers/people.ts';
import { registerQueue, sendMessage } from '../../helpers/queues.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { loadConfig, type ApnsConfig } from '../../../src/config.ts';
import { closePushDelivery } from '../../../src/push/jobs.ts';
import { deliverPush, MAX_PUSH_ATTEMPTS } from '../../../src/actions/push.ts';
import { createApnsSenders } from '../../../src/push/apns.ts';
import { waitFor } from '../../helpers/wait.ts';

const serverDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

const env = useTestServer();
let realm: { name: string; url: string };
let channel: { id: number; name: string };
beforeAll(async () => {
  realm = await db().realm.findUniqueOrThrow({ where: { id: env.realmId } });
  channel = await createChannel(env, 'iago', {}, ['iago', 'hamlet', 'othello']);
});
afterAll(async () => {
  await closePushDelivery(env.running.deps);
});

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const hexToken = () => randomBytes(32).toString('hex');

/** A new member with their own API key: fresh users have no event queue (no active client). */
const someone = (label: string): Promise<Account> => createAccount(env, { label, fullName: `Push ${label} ${randomBytes(3).toString('hex')}` });

async function addApns(client: ParleyClient, token: string, appid = 'org.zulip.Zulip') {
  const res = await client.POST('/users/me/apns_device_token', { body: { token, appid } });
  if (res.error) throw new Error(`setup: ${JSON.stringify(res.error)}`);
}

/** A push's payload as stored (the APNs or FCM body; tests read the fields of the kind they expect). */
const payloadOf = (push: { payload: unknown }) => push.payload as Record<string, any>;

const devicesOf = (userId: number) => db().pushDevice.findMany({ where: { userId }, orderBy: { id: 'asc' } });
const pushesOf = (userId: number) => db().pushOutbox.findMany({ where: { userId }, orderBy: { id: 'asc' } });

/** The user's pushes once none is pending any more (and there are `count`). */
async function settledPushes(userId: number, count: number) {
  return waitFor(async () => {
    const rows = await pushesOf(userId);
    return rows.length === count && rows.every((r) => r.status !== 'pending') && rows;
  });
}

/** The pg-boss job of a push, once it is done for good. */
async function jobState(pushId: number): Promise<string> {
  return waitFor(async () => {
    const [row] = await db().$queryRawUnsafe<{ state: string }[]>(`SELECT state::text AS state FROM pgboss.job WHERE name = 'send-push' AND (data->>'pushId')::int = $1`, pushId);
    return row && ['completed', 'failed', 'cancelled'].includes(row.state) ? row.state : null;
  });
}

describe('POST /users/me/apns_device_token', () => {
  it('registers a token once: adding it again changes nothing', async () => {
    const u = await someone('add');
    const token = hexToken();
    const res = await u.client.POST('/users/me/apns_device_token', { body: { token, appid: 'org.zulip.Zulip' } });
    expect(res.data).toEqual({ result: 'success', msg: '' });
    expect((await u.client.POST('/users/me/apns_device_token', { body: { token, appid: 'org.zulip.Zulip' } })).data).toEqual({ result: 'success', msg: '' });
    // Another app id for the same token keeps the first registration (Zulip ignores the conflict).
    expect((await u.client.POST('/users/me/apns_device_token', { body: { token, appid: 'com.example.Other' } })).response.status).toBe(200);
    expect((await devicesOf(u.id)).map((d) => [d.kind, d.token, d.appId])).toEqual([['apns', token, 'org.zulip.Zulip']]);
    // Uppercase hex, the shortest token and 4096 characters are all fine; guests may register too.
    const upper = 'C0FFEE';
    await addApns(u.client, upper);
    await addApns(u.client, 'c0ffee'.repeat(682) + 'c0ff');
    expect((await env.client('polonius').POST('/users/me/apns_device_token', { body: { token: hexToken(), appid: 'org.zulip.Zulip' } })).response.status).toBe(200);
    expect((await devicesOf(u.id)).length).toBe(3);
  });

  it("answers Zulip's errors for tokens and app ids", async () => {
    const post = (body: Record<string, string>) => env.raw('/users/me/apns_device_token', { method: 'POST', as: 'hamlet', body: new URLSearchParams(body) });
    const before = await devicesOf(uid('hamlet'));
    const missing = await post({ token: 'c0ffee' });
    expectJsonError(missing, 400, "Missing 'appid' argument", 'REQUEST_VARIABLE_MISSING');
    expect(missing.body.var_name).toBe('appid');
    expectJsonError(await post({ appid: 'org.zulip.Zulip' }), 400, "Missing 'token' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await post({ token: 'c0ffee', appid: 'org.zulip/Zulip' }), 400, 'appid has invalid format', 'BAD_REQUEST');
    expectJsonError(await post({ token: 'c0ffee', appid: '' }), 400, 'appid has invalid format', 'BAD_REQUEST');
    expectJsonError(await post({ token: '', appid: 'org.zulip.Zulip' }), 400, 'Empty or invalid length token', 'BAD_REQUEST');
    expectJsonError(await post({ token: 'c0'.repeat(2049), appid: 'org.zulip.Zulip' }), 400, 'Empty or invalid length token', 'BAD_REQUEST');
    expectJsonError(await post({ token: 'zz', appid: 'org.zulip.Zulip' }), 400, 'Invalid APNS token', 'BAD_REQUEST');
    expectJsonError(await post({ token: 'c0ffe', appid: 'org.zulip.Zulip' }), 400, 'Invalid APNS token', 'BAD_REQUEST');
    expectJsonError(await post({ token: 'apple-tokenbb', appid: 'org.zulip.Zulip' }), 400, 'Invalid APNS token', 'BAD_REQUEST');
    expect(await devicesOf(uid('hamlet'))).toEqual(before);
  });

  it('refuses bots on every push endpoint', async () => {
    const email = `push-bot-${randomBytes(3).toString('hex')}@parley.test`;
    const bot = await db().user.create({
      data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Push Bot', isBot: true, botType: 1, botOwnerId: uid('hamlet'), settings: { create: {} } },
    });
    const key = randomBytes(16).toString('hex');
    await db().apiKey.create({ data: { userId: bot.id, lookupHash: env.running.deps.cipher.lookupHash(key), ciphertext: env.running.deps.cipher.encrypt(key) } });
    const headers = { Authorization: basicAuth(email, key) };
    const call = (method: string, p: string, body: Record<string, string>) => env.raw(p, { method, headers, body: new URLSearchParams(body) });
    const refused = 'This endpoint does not accept bot requests.';
    expectJsonError(await call('POST', '/users/me/apns_device_token', { token: 'c0ffee', appid: 'org.zulip.Zulip' }), 400, refused, 'BAD_REQUEST');
    expectJsonError(await call('DELETE', '/users/me/apns_device_token', { token: 'c0ffee' }), 400, refused, 'BAD_REQUEST');
    expectJsonError(await call('POST', '/users/me/android_gcm_reg_id', { token: 'android-token' }), 400, refused, 'BAD_REQUEST');
    expectJsonError(await call('DELETE', '/users/me/android_gcm_reg_id', { token: 'android-token' }), 400, refused, 'BAD_REQUEST');
    expectJsonError(await call('POST', '/mobile_push/test_notification', {}), 400, refused, 'BAD_REQUEST');
    expect(await devicesOf(bot.id)).toEqual([]);
  });
});

describe('DELETE /users/me/apns_device_token', () => {
  it("removes the caller's own token, and never another user's", async () => {
    const a = await someone('remove-a');
    const b = await someone('remove-b');
    const mine = hexToken();
    const theirs = hexToken();
    const shared = hexToken();
    await addApns(a.client, mine);
    await addApns(b.client, theirs);
    await addApns(a.client, shared);
    await addApns(b.client, shared);
    expectJsonError(await a.client.DELETE('/users/me/apns_device_token', { body: { token: theirs } }), 400, 'Token does not exist', 'BAD_REQUEST');
    expect((await a.client.DELETE('/users/me/apns_device_token', { body: { token: shared } })).data).toEqual({ result: 'success', msg: '' });
    expect((await devicesOf(a.id)).map((d) => d.token)).toEqual([mine]);
    expect((await devicesOf(b.id)).map((d) => d.token).sort()).toEqual([theirs, shared].sort());
    expect((await a.client.DELETE('/users/me/apns_device_token', { body: { token: mine } })).response.status).toBe(200);
    expectJsonError(await a.client.DELETE('/users/me/apns_device_token', { body: { token: mine } }), 400, 'Token does not exist', 'BAD_REQUEST');
    expect(await devicesOf(a.id)).toEqual([]);
  });

  it('checks the token as when adding it', async () => {
    const del = (body: Record<string, string>) => env.raw('/users/me/apns_device_token', { method: 'DELETE', as: 'hamlet', body: new URLSearchParams(body) });
    expectJsonError(await del({}), 400, "Missing 'token' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await del({ token: '' }), 400, 'Empty or invalid length token', 'BAD_REQUEST');
    expectJsonError(await del({ token: 'ab'.repeat(2049) }), 400, 'Empty or invalid length token', 'BAD_REQUEST');
    expectJsonError(await del({ token: 'not hex' }), 400, 'Invalid APNS token', 'BAD_REQUEST');
    expectJsonError(await del({ token: 'c0ffee' }), 400, 'Token does not exist', 'BAD_REQUEST');
  });
});

describe('POST /users/me/android_gcm_reg_id', () => {
  it('registers FCM tokens (any text), once, apart from APNs tokens', async () => {
    const u = await someone('fcm');
    const res = await u.client.POST('/users/me/android_gcm_reg_id', { body: { token: 'android-token:with/any_text' } });
    expect(res.data).toEqual({ result: 'success', msg: '' });
    expect((await u.client.POST('/users/me/android_gcm_reg_id', { body: { token: 'android-token:with/any_text' } })).response.status).toBe(200);
    await u.client.POST('/users/me/android_gcm_reg_id', { body: { token: 'c0ffee' } });
    await addApns(u.client, 'c0ffee');
    expect((await devicesOf(u.id)).map((d) => [d.kind, d.token, d.appId])).toEqual([
      ['fcm', 'android-token:with/any_text', null],
      ['fcm', 'c0ffee', null],
      ['apns', 'c0ffee', 'org.zulip.Zulip'],
    ]);
    const raw = (body: Record<string, string>) => env.raw('/users/me/android_gcm_reg_id', { method: 'POST', as: 'hamlet', body: new URLSearchParams(body) });
    expectJsonError(await raw({ token: '' }), 400, 'Empty or invalid length token', 'BAD_REQUEST');
    expectJsonError(await raw({ token: 'x'.repeat(4097) }), 400, 'Empty or invalid length token', 'BAD_REQUEST');
    expectJsonError(await raw({}), 400, "Missing 'token' argument", 'REQUEST_VARIABLE_MISSING');
  });
});

describe('DELETE /users/me/android_gcm_reg_id', () => {
  it('removes FCM tokens only, leaving an APNs token of the same text to its own endpoint', async () => {
    const u = await someone('fcm-remove');
    await u.client.POST('/users/me/android_gcm_reg_id', { body: { token: 'android-token:with/any_text' } });
    await u.client.POST('/users/me/android_gcm_reg_id', { body: { token: 'c0ffee' } });
    await addApns(u.client, 'c0ffee');
    expect((await devicesOf(u.id)).map((d) => d.kind)).toEqual(['fcm', 'fcm', 'apns']);
    // Each endpoint removes its own kind only.
    expect((await u.client.DELETE('/users/me/apns_device_token', { body: { token: 'c0ffee' } })).response.status).toBe(200);
    expect((await devicesOf(u.id)).map((d) => d.kind)).toEqual(['fcm', 'fcm']);
    expectJsonError(await u.client.DELETE('/users/me/apns_device_token', { body: { token: 'c0ffee' } }), 400, 'Token does not exist', 'BAD_REQUEST');
    expect((await u.client.DELETE('/users/me/android_gcm_reg_id', { body: { token: 'c0ffee' } })).data).toEqual({ result: 'success', msg: '' });
    expectJsonError(await u.client.DELETE('/users/me/android_gcm_reg_id', { body: { token: 'c0ffee' } }), 400, 'Token does not exist', 'BAD_REQUEST');
    expect((await devicesOf(u.id)).map((d) => [d.kind, d.token])).toEqual([['fcm', 'android-token:with/any_text']]);
    const raw = (body: Record<string, string>) => env.raw('/users/me/android_gcm_reg_id', { method: 'DELETE', as: 'hamlet', body: new URLSearchParams(body) });
    expectJsonError(await raw({ token: 'x'.repeat(4097) }), 400, 'Empty or invalid length token', 'BAD_REQUEST');
  });
});

describe('POST /mobile_push/test_notification', () => {
  // Without APNs configuration (this file's server), pushes are recorded in the push outbox; delivered
  // through APNs: "delivery through APNs" below.
  it("records the test notification in Zulip's `test` payload for the device named, or all of them", async () => {
    const u = await someone('test');
    const one = hexToken();
    const two = hexToken();
    await addApns(u.client, one, 'org.zulip.Zulip');
    await addApns(u.client, two, 'com.example.Beta');
    await u.client.POST('/users/me/android_gcm_reg_id', { body: { token: 'android-test' } });
    const res = await u.client.POST('/mobile_push/test_notification', { body: { token: one } });
    expect(res.data).toEqual({ result: 'success', msg: '' });
    const [first] = await settledPushes(u.id, 1);
    const base = {
      server: new URL(realm.url).host,
      realm_id: env.realmId,
      realm_uri: realm.url,
      realm_url: realm.url,
      realm_name: realm.name,
      user_id: u.id,
    };
    expect(first).toMatchObject({ status: 'recorded', event: 'test', kind: 'apns', token: one, appId: 'org.zulip.Zulip', attempts: 0, messageId: null });
    expect(first!.payload).toEqual({
      zulip: { ...base, event: 'test' },
      aps: { alert: { title: 'Test notification', body: `This is a test notification from ${realm.name} (${realm.url}).` }, sound: 'default' },
    });
    // No token: every device of the user, iOS and Android.
    expect((await u.client.POST('/mobile_push/test_notification', {})).response.status).toBe(200);
    const all = await settledPushes(u.id, 4);
    expect(all.slice(1).map((p) => [p.kind, p.token, p.status])).toEqual([
      ['apns', one, 'recorded'],
      ['apns', two, 'recorded'],
      ['fcm', 'android-test', 'recorded'],
    ]);
    expect(all[3]!.payload).toEqual({ ...base, event: 'test', time: expect.any(Number) });
  });

  it('refuses tokens that are not among the caller’s devices, and succeeds with no device at all', async () => {
    const a = await someone('test-a');
    const b = await someone('test-b');
    const theirs = hexToken();
    await addApns(b.client, theirs);
    expectJsonError(await a.client.POST('/mobile_push/test_notification', { body: { token: theirs } }), 400, 'Device not recognized', 'INVALID_PUSH_DEVICE_TOKEN');
    expectJsonError(await a.client.POST('/mobile_push/test_notification', { body: { token: 'c0ffee' } }), 400, 'Device not recognized', 'INVALID_PUSH_DEVICE_TOKEN');
    expectJsonError(await a.client.POST('/mobile_push/test_notification', { body: { token: '' } }), 400, 'Device not recognized', 'INVALID_PUSH_DEVICE_TOKEN');
    expect((await a.client.POST('/mobile_push/test_notification', {})).data).toEqual({ result: 'success', msg: '' });
    expect(await pushesOf(a.id)).toEqual([]);
    expect(await pushesOf(b.id)).toEqual([]);
  });
});

describe('without APNs configuration (the push outbox)', () => {
  it('server settings say push notifications are not enabled', async () => {
    const res = await env.raw('/server_settings');
    expect(res.body.push_notifications_enabled).toBe(false);
  });

  it('pushes a direct message to a recipient without an active client, in Zulip’s payload shape', async () => {
    const r = await someone('dm');
    const token = hexToken();
    await addApns(r.client, token);
    await env.client('hamlet').POST('/users/me/android_gcm_reg_id', { body: { token: `hamlet-${token}` } });
    const id = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'Hello **there** :octopus: :thumbs_up: <b> & bye' });
    const [push] = await settledPushes(r.id, 1);
    const message = await db().message.findUniqueOrThrow({ where: { id } });
    expect(push).toMatchObject({ event: 'message', messageId: id, status: 'recorded', token });
    expect(push!.payload).toEqual({
      zulip: {
        server: new URL(realm.url).host,
        realm_id: env.realmId,
        realm_uri: realm.url,
        realm_url: realm.url,
        realm_name: realm.name,
        user_id: r.id,
        sender_id: uid('hamlet'),
        sender_email: env.users.hamlet.email,
        time: Math.floor(message.dateSent.getTime() / 1000),
        recipient_type: 'private',
        message_ids: [id],
      },
      aps: { alert: { title: 'King Hamlet', subtitle: '', body: 'Hello there 🐙 👍 <b> & bye' }, sound: 'default', badge: 0 },
    });
    // The sender is never pushed their own message.
    expect(await pushesOf(uid('hamlet'))).toEqual([]);
    // A recorded push counts as shown: the message is marked as having one.
    const [um] = await db().$queryRaw<{ flags: number }[]>`SELECT flags::int AS flags FROM user_message WHERE user_id = ${r.id} AND message_id = ${id}`;
    expect(um!.flags & 4096).toBe(4096);
  });

  it('pushes group direct messages with pm_users and the participants as title', async () => {
    const r = await someone('group');
    await addApns(r.client, hexToken());
    const id = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id, uid('othello')]), content: 'to all of us' });
    const [push] = await settledPushes(r.id, 1);
    const ids = [r.id, uid('othello'), uid('hamlet')].sort((x, y) => x - y);
    expect(payloadOf(push!).zulip).toMatchObject({ recipient_type: 'private', pm_users: ids.join(','), message_ids: [id] });
    expect(payloadOf(push!).aps.alert).toEqual({
      title: [r.fullName, 'Othello, the Moor of Venice', 'King Hamlet'].sort().join(', '),
      subtitle: 'King Hamlet:',
      body: 'to all of us',
    });
  });

  it('pushes mentions and wildcard mentions in channels, and nothing else by default', async () => {
    const r = await someone('mention');
    await addApns(r.client, hexToken());
    await subscribeDirectly(env, r.id, channel.id);
    await sendMessage(env.client('hamlet'), { type: 'stream', to: channel.name, topic: 'plain', content: 'nothing for you' });
    expect(await pushesOf(r.id)).toEqual([]);
    const mention = await sendMessage(env.client('hamlet'), { type: 'stream', to: channel.name, topic: 'plans', content: `hi @**${r.fullName}**, look` });
    const wildcard = await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: '', content: '@**all** meeting now' });
    const [m, w] = await settledPushes(r.id, 2);
    expect(m).toMatchObject({ messageId: mention, status: 'recorded' });
    expect(payloadOf(m!).zulip).toMatchObject({ recipient_type: 'stream', stream: channel.name, stream_id: channel.id, topic: 'plans', message_ids: [mention] });
    expect(payloadOf(m!).aps.alert).toEqual({ title: `#${channel.name} > plans`, subtitle: 'King Hamlet mentioned you:', body: `hi @${r.fullName}, look` });
    expect(w).toMatchObject({ messageId: wildcard });
    expect(payloadOf(w!).zulip.topic).toBe('general chat');
    expect(payloadOf(w!).aps.alert).toEqual({ title: `#${channel.name} > general chat`, subtitle: 'Othello, the Moor of Venice mentioned everyone:', body: '@all meeting now' });
    // A muted channel silences wildcard mentions, not personal ones.
    await db().subscription.update({ where: { userId_channelId: { userId: r.id, channelId: channel.id } }, data: { isMuted: true } });
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'x', content: '@**all** again' });
    expect((await pushesOf(r.id)).length).toBe(2);
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'x', content: `@**${r.fullName}** still` });
    expect((await pushesOf(r.id)).length).toBe(3);
  });

  it("follows the channel's push setting (Zulip's stream_push_notify)", async () => {
    const r = await someone('stream-push');
    await addApns(r.client, hexToken());
    await subscribeDirectly(env, r.id, channel.id);
    await db().subscription.update({ where: { userId_channelId: { userId: r.id, channelId: channel.id } }, data: { pushNotifications: true } });
    const id = await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'news', content: 'everyone reads this' });
    const [push] = await settledPushes(r.id, 1);
    expect(push!.messageId).toBe(id);
    expect(payloadOf(push!).aps.alert).toEqual({ title: `#${channel.name} > news`, subtitle: 'Othello, the Moor of Venice:', body: 'everyone reads this' });
  });

  it('pushes every message of a followed topic, even in a muted channel, as the followed-topic settings say', async () => {
    const r = await someone('followed');
    await addApns(r.client, hexToken());
    await subscribeDirectly(env, r.id, channel.id);
    expect((await r.client.POST('/user_topics', { body: { stream_id: channel.id, topic: 'Followed News', visibility_policy: 3 } })).error).toBeUndefined();
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'other news', content: 'not followed' });
    const id = await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'followed news', content: 'in a followed topic' });
    const [push] = await settledPushes(r.id, 1);
    expect(push!.messageId).toBe(id);
    expect(payloadOf(push!).aps.alert).toEqual({ title: `#${channel.name} > followed news`, subtitle: 'Othello, the Moor of Venice:', body: 'in a followed topic' });
    // A muted channel does not silence a followed topic.
    await db().subscription.update({ where: { userId_channelId: { userId: r.id, channelId: channel.id } }, data: { isMuted: true } });
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'followed news', content: 'still followed' });
    await settledPushes(r.id, 2);
    // Followed-topic pushes turned off: only wildcard mentions, by the followed-topic wildcard setting.
    expect((await r.client.PATCH('/settings', { body: { enable_followed_topic_push_notifications: false } })).error).toBeUndefined();
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'followed news', content: 'quiet now' });
    expect((await pushesOf(r.id)).length).toBe(2);
    const wildcard = await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'followed news', content: '@**all** look' });
    const pushes = await settledPushes(r.id, 3);
    expect(pushes[2]!.messageId).toBe(wildcard);
    expect(payloadOf(pushes[2]!).aps.alert.subtitle).toBe('Othello, the Moor of Venice mentioned everyone:');
    // With that setting off too, the muted channel silences the wildcard mention.
    expect((await r.client.PATCH('/settings', { body: { enable_followed_topic_wildcard_mentions_notify: false } })).error).toBeUndefined();
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'followed news', content: '@**all** again' });
    expect((await pushesOf(r.id)).length).toBe(3);
  });

  it('silences a muted topic except for personal mentions, and pushes an unmuted topic of a muted channel', async () => {
    const r = await someone('topic-mute');
    await addApns(r.client, hexToken());
    await subscribeDirectly(env, r.id, channel.id);
    await db().subscription.update({ where: { userId_channelId: { userId: r.id, channelId: channel.id } }, data: { pushNotifications: true } });
    expect((await r.client.POST('/user_topics', { body: { stream_id: channel.id, topic: 'hush', visibility_policy: 1 } })).error).toBeUndefined();
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'hush', content: 'plain' });
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'Hush', content: '@**all** wildcard' });
    expect(await pushesOf(r.id)).toEqual([]);
    const mention = await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'hush', content: `@**${r.fullName}** personal` });
    const open = await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'open', content: 'channel-wide push' });
    expect((await settledPushes(r.id, 2)).map((p) => p.messageId)).toEqual([mention, open]);
    await db().subscription.update({ where: { userId_channelId: { userId: r.id, channelId: channel.id } }, data: { isMuted: true } });
    expect((await r.client.POST('/user_topics', { body: { stream_id: channel.id, topic: 'loud', visibility_policy: 2 } })).error).toBeUndefined();
    await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'open', content: 'muted channel' });
    const loud = await sendMessage(env.client('othello'), { type: 'stream', to: channel.name, topic: 'loud', content: 'unmuted topic' });
    expect((await settledPushes(r.id, 3)).map((p) => p.messageId)).toEqual([mention, open, loud]);
  });

  it('does not push to active users (a client polling for messages, presence active) unless they want pushes while online', async () => {
    const r = await someone('active');
    await addApns(r.client, hexToken());
    const queue = await registerQueue(r.client, { event_types: ['message'] });
    expect(queue.queue_id).toBeTruthy();
    // Active: a client polls for messages and the user's presence says active (written at once here).
    expect((await r.client.POST('/users/me/presence', { body: { status: 'active', ping_only: true } })).error).toBeUndefined();
    await env.running.deps.presence.flush();
    // Online push is on by default (as in Zulip): being active does not prevent the push.
    await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'while online' });
    expect((await pushesOf(r.id)).length).toBe(1);
    expect((await r.client.PATCH('/settings', { body: { enable_online_push_notifications: false } })).response.status).toBe(200);
    await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'still online' });
    expect((await pushesOf(r.id)).length).toBe(1);
    // A queue that only takes other events is no message client.
    await db().eventQueue.updateMany({ where: { userId: r.id }, data: { eventTypes: ['typing'] } });
    await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'typing only' });
    expect((await pushesOf(r.id)).length).toBe(2);
    // A client that stopped polling 10 minutes ago (Zulip's EVENT_QUEUE_OFFLINE_TIMEOUT_SECS) is not one any more.
    await db().eventQueue.updateMany({ where: { userId: r.id }, data: { eventTypes: ['message'] } });
    await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'still here?' });
    expect((await pushesOf(r.id)).length).toBe(2);
    const staleSince = new Date(Date.now() - (600 + 30) * 1000);
    await db().eventQueue.updateMany({ where: { userId: r.id }, data: { lastAccessedAt: staleSince } });
    const idle = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'gone idle' });
    expect((await pushesOf(r.id)).map((p) => p.messageId).at(-1)).toBe(idle);
    // enable_offline_push_notifications off: no push for direct messages or mentions at all.
    expect((await r.client.PATCH('/settings', { body: { enable_offline_push_notifications: false } })).response.status).toBe(200);
    await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'nobody home' });
    expect((await pushesOf(r.id)).length).toBe(3);
    await settledPushes(r.id, 3);
  });

  it('does not send a push whose message was read, or whose device was removed, before its turn', async () => {
    const r = await someone('late');
    const token = hexToken();
    await addApns(r.client, token);
    await r.client.POST('/users/me/android_gcm_reg_id', { body: { token: 'android-late' } });
    const id = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'too late' });
    const [apnsPush, fcmPush] = await settledPushes(r.id, 2);
    await r.client.POST('/messages/flags', { body: { messages: [id], op: 'add', flag: 'read' } });
    await settledPushes(r.id, 4);
    // The same pushes, as if their jobs ran only now (a queue backlog): nothing is sent any more.
    await db().pushOutbox.updateMany({ where: { id: { in: [apnsPush!.id, fcmPush!.id] } }, data: { status: 'pending' } });
    expect(await deliverPush(env.running.deps, apnsPush!.id, null)).toBe('skipped');
    await r.client.DELETE('/users/me/android_gcm_reg_id', { body: { token: 'android-late' } });
    expect(await deliverPush(env.running.deps, fcmPush!.id, null)).toBe('dropped');
    expect((await pushesOf(r.id)).slice(0, 2).map((p) => [p.status, p.deviceId === null])).toEqual([
      ['skipped', false],
      ['dropped', true],
    ]);
    expect(await deliverPush(env.running.deps, 999_999_999, null)).toBe('gone');
  });

  it('sends a removal when a pushed message is read, once', async () => {
    const r = await someone('read');
    await addApns(r.client, hexToken());
    await r.client.POST('/users/me/android_gcm_reg_id', { body: { token: 'android-read' } });
    const pushed = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([r.id]), content: 'read me' });
    await settledPushes(r.id, 2);
    const res = await r.client.POST('/messages/flags', { body: { messages: [pushed], op: 'add', flag: 'read' } });
    expect(res.response.status).toBe(200);
    const rows = await settledPushes(r.id, 4);
    const removals = rows.filter((p) => p.event === 'remove');
    expect(removals.map((p) => p.kind)).toEqual(['apns', 'fcm']);
    const base = { server: new URL(realm.url).host, realm_id: env.realmId, realm_uri: realm.url, realm_url: realm.url, realm_name: realm.name, user_id: r.id };
    expect(removals[0]!.payload).toEqual({ zulip: { ...base, event: 'remove', zulip_message_ids: String(pushed) }, aps: { badge: 0 } });
    expect(removals[1]!.payload).toEqual({ ...base, event: 'remove', zulip_message_ids: String(pushed), zulip_message_id: pushed });
    // Unread and read again: nothing is showing any more, so no second removal.
    await r.client.POST('/messages/flags', { body: { messages: [pushed], op: 'remove', flag: 'read' } });
    await r.client.POST('/messages/flags', { body: { messages: [pushed], op: 'add', flag: 'read' } });
    expect((await pushesOf(r.id)).length).toBe(4);
    // A message that was never pushed causes no removal; mark_all_as_read removes the pushed ones.
    await subscribeDirectly(env, r.id, channel.id);
    await sendMessage(env.client('hamlet'), { type: 'stream', to: channel.name, topic: 'quiet', content: 'not pushed' });
    const second = await sendMessage(env.client('othello'), { type: 'direct', to: JSON.stringify([r.id]), content: 'and me' });
    await settledPushes(r.id, 6);
    expect((await r.client.POST('/mark_all_as_read', {})).response.status).toBe(200);
    const after = await settledPushes(r.id, 8);
    expect(after.slice(6).map((p) => [p.event, payloadOf(p).zulip_message_ids ?? payloadOf(p).zulip.zulip_message_ids])).toEqual([
      ['remove', String(second)],
      ['remove', String(second)],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------
// Delivery to a local APNs stand-in

type Answer = { status: number; reason?: string } | 'hang';

interface Received {
  token: string;
  headers: http2.IncomingHttpHeaders;
  body: any;
}

/** An HTTP/2 server speaking APNs' provider API on loopback, with a self-signed certificate. */
async function startApnsStandIn() {
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
  });
  const received: Received[] = [];
  const plans = new Map<string, Answer[]>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createSecureServer({ key: pems.private, cert: pems.cert });
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => (text += chunk));
    stream.on('end', () => {
      const token = String(headers[':path']).replace('/3/device/', '');
      received.push({ token, headers, body: JSON.parse(text) });
      const answer = plans.get(token)?.shift() ?? { status: 200 };
      if (answer === 'hang') return;
      if (answer.status === 200) {
        stream.respond({ ':status': 200, 'apns-id': String(headers['apns-id']) });
        stream.end();
      } else {
        stream.respond({ ':status': answer.status, 'content-type': 'application/json', 'apns-id': String(headers['apns-id']) });
        stream.end(JSON.stringify({ reason: answer.reason, ...(answer.status === 410 ? { timestamp: Date.now() } : {}) }));
      }
    });
    stream.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    cert: pems.cert,
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    plan: (token: string, answers: Answer[]) => plans.set(token, [...answers]),
    to: (token: string) => received.filter((r) => r.token === token),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Checks an APNs provider token: ES256 over header.claims, with the key id and team id. */
function verifyJwt(authorization: string | undefined, publicKey: KeyObject, keyId: string, teamId: string): void {
  expect(authorization).toMatch(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/);
  const [header, claims, signature] = authorization!.slice('bearer '.length).split('.') as [string, string, string];
  expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toMatchObject({ alg: 'ES256', kid: keyId });
  const body = JSON.parse(Buffer.from(claims, 'base64url').toString());
  expect(body.iss).toBe(teamId);
  expect(Math.abs(body.iat - Date.now() / 1000)).toBeLessThan(3600);
  expect(verify('sha256', Buffer.from(`${header}.${claims}`), { key: publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'))).toBe(true);
}

describe('delivery through APNs (HTTP/2 stand-in)', () => {
  let standIn: Awaited<ReturnType<typeof startApnsStandIn>>;
  let publicKey: KeyObject;
  let apns: ApnsConfig;
  const keyId = 'ABC123DEFG';
  const teamId = 'TEAM456XYZ';

  beforeAll(async () => {
    standIn = await startApnsStandIn();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-apns-'));
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    publicKey = createPublicKey(privateKey);
    const keyFile = path.join(dir, `AuthKey_${keyId}.p8`);
    writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    apns = { keyFile, keyId, teamId, topic: 'org.zulip.Zulip', url: standIn.url, requestTimeoutMs: 1_500, ca: standIn.cert };
    env.running.deps.config.apns = apns;
    env.running.deps.config.pushNotificationsEnabled = true;
  });
  afterAll(async () => {
    env.running.deps.config.apns = null;
    env.running.deps.config.pushNotificationsEnabled = false;
    await closePushDelivery(env.running.deps);
    await standIn?.close();
  });

  it('server settings say push notifications are enabled', async () => {
    expect((await env.raw('/server_settings')).body.push_notifications_enabled).toBe(true);
  });

  it('delivers the test notification with APNs headers, a valid provider JWT and the payload', async () => {
    const u = await someone('apns-test');
    const token = hexToken();
    await addApns(u.client, token, 'com.example.ZulipBeta');
    expect((await u.client.POST('/mobile_push/test_notification', { body: { token } })).data).toEqual({ result: 'success', msg: '' });
    const [push] = await settledPushes(u.id, 1);
    expect(push).toMatchObject({ status: 'sent', attempts: 1, lastError: null });
    const [req] = standIn.to(token);
    expect(standIn.to(token)).toHaveLength(1);
    expect(req!.headers[':method']).toBe('POST');
    expect(req!.headers[':path']).toBe(`/3/device/${token}`);
    expect(req!.headers['apns-topic']).toBe('com.example.ZulipBeta');
    expect(req!.headers['apns-push-type']).toBe('alert');
    expect(req!.headers['apns-priority']).toBe('10');
    expect(req!.headers['apns-id']).toBe(push!.apnsId);
    expect(Number(req!.headers['apns-expiration']) - Date.now() / 1000).toBeGreaterThan(23 * 3600);
    verifyJwt(req!.headers['authorization'], publicKey, keyId, teamId);
    expect(req!.body).toEqual(push!.payload);
    expect(req!.body.zulip).toMatchObject({ event: 'test', realm_name: realm.name, realm_url: realm.url, user_id: u.id, server: new URL(realm.url).host });
  });

  it('delivers message pushes and their removal', async () => {
    const r = await someone('apns-msg');
    const token = hexToken();
    await addApns(r.client, token);
    const id = await sendMessage(env.client('othello'), { type: 'direct', to: JSON.stringify([r.id]), content: 'over **HTTP/2**' });
    await settledPushes(r.id, 1);
    const [req] = standIn.to(token);
    expect(req!.headers['apns-topic']).toBe('org.zulip.Zulip');
    verifyJwt(req!.headers['authorization'], publicKey, keyId, teamId);
    expect(req!.body.zulip).toMatchObject({ sender_id: uid('othello'), recipient_type: 'private', message_ids: [id], user_id: r.id });
    expect(req!.body.aps).toEqual({ alert: { title: 'Othello, the Moor of Venice', subtitle: '', body: 'over HTTP/2' }, sound: 'default', badge: 0 });
    await r.client.POST('/messages/flags', { body: { messages: [id], op: 'add', flag: 'read' } });
    const rows = await settledPushes(r.id, 2);
    expect(rows.map((p) => [p.event, p.status])).toEqual([
      ['message', 'sent'],
      ['remove', 'sent'],
    ]);
    expect(standIn.to(token)[1]!.body).toEqual({ zulip: expect.objectContaining({ event: 'remove', zulip_message_ids: String(id) }), aps: { badge: 0 } });
  });

  it('removes a token APNs calls Unregistered (410) or bad, from every user, and keeps it on other refusals', async () => {
    const a = await someone('apns-410');
    const b = await someone('apns-410b');
    const gone = hexToken();
    const bad = hexToken();
    const refused = hexToken();
    await addApns(a.client, gone);
    await addApns(b.client, gone);
    await addApns(a.client, bad);
    await addApns(a.client, refused);
    standIn.plan(gone, [{ status: 410, reason: 'Unregistered' }]);
    standIn.plan(bad, [{ status: 400, reason: 'BadDeviceToken' }]);
    standIn.plan(refused, [{ status: 400, reason: 'TopicDisallowed' }]);
    expect((await a.client.POST('/mobile_push/test_notification', {})).data).toEqual({ result: 'success', msg: '' });
    const rows = await settledPushes(a.id, 3);
    expect(rows.map((p) => [p.token, p.status, p.lastError, p.attempts])).toEqual([
      [gone, 'rejected', '410 Unregistered', 1],
      [bad, 'rejected', '400 BadDeviceToken', 1],
      [refused, 'rejected', '400 TopicDisallowed', 1],
    ]);
    expect((await devicesOf(a.id)).map((d) => d.token)).toEqual([refused]);
    expect(await devicesOf(b.id)).toEqual([]);
    expect(standIn.to(gone)).toHaveLength(1);
    expectJsonError(await a.client.POST('/mobile_push/test_notification', { body: { token: gone } }), 400, 'Device not recognized', 'INVALID_PUSH_DEVICE_TOKEN');
    // Nothing more goes to the removed token: a new message reaches only the device left.
    await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([a.id]), content: 'still there?' });
    await settledPushes(a.id, 4);
    expect(standIn.to(gone)).toHaveLength(1);
    expect(standIn.to(refused)).toHaveLength(2);
  });

  it('retries a 500 with backoff, without sending twice what APNs accepted', async () => {
    const u = await someone('apns-500');
    const flaky = hexToken();
    const fine = hexToken();
    await addApns(u.client, flaky);
    await addApns(u.client, fine);
    standIn.plan(flaky, [{ status: 500, reason: 'InternalServerError' }, { status: 503, reason: 'ServiceUnavailable' }]);
    // APNs failing is not the caller's problem.
    expect((await u.client.POST('/mobile_push/test_notification', {})).data).toEqual({ result: 'success', msg: '' });
    const rows = await settledPushes(u.id, 2);
    expect(rows.map((p) => [p.token, p.status, p.attempts])).toEqual([
      [flaky, 'sent', 3],
      [fine, 'sent', 1],
    ]);
    expect(await jobState(rows[0]!.id)).toBe('completed');
    expect(await jobState(rows[1]!.id)).toBe('completed');
    // Three attempts for the flaky device (one push: the same apns-id), exactly one for the other.
    expect(standIn.to(flaky).map((r) => r.headers['apns-id'])).toEqual([rows[0]!.apnsId, rows[0]!.apnsId, rows[0]!.apnsId]);
    expect(standIn.to(fine)).toHaveLength(1);
    // A job run again (pg-boss retries whole batches, and jobs of a process that died) sends nothing.
    const senders = createApnsSenders();
    for (const row of rows) expect(await deliverPush(env.running.deps, row.id, senders.forConfig(apns))).toBe('sent');
    await senders.close();
    expect(standIn.to(flaky)).toHaveLength(3);
    expect(standIn.to(fine)).toHaveLength(1);
  });

  it('retries after a timeout', async () => {
    const u = await someone('apns-timeout');
    const slow = hexToken();
    await addApns(u.client, slow);
    standIn.plan(slow, ['hang']);
    expect((await u.client.POST('/mobile_push/test_notification', { body: { token: slow } })).response.status).toBe(200);
    const [push] = await settledPushes(u.id, 1);
    expect(push).toMatchObject({ status: 'sent', attempts: 2 });
    expect(await jobState(push!.id)).toBe('completed');
    expect(standIn.to(slow)).toHaveLength(2);
  });

  it('keeps a push pending with its error while APNs fails, and gives up after the last attempt', async () => {
    const u = await someone('apns-down');
    const token = hexToken();
    await addApns(u.client, token);
    standIn.plan(token, Array.from({ length: 20 }, () => ({ status: 503, reason: 'ServiceUnavailable' })));
    await u.client.POST('/mobile_push/test_notification', { body: { token } });
    const pending = await waitFor(async () => {
      const [row] = await pushesOf(u.id);
      return row && row.attempts >= 2 && row;
    });
    expect(pending).toMatchObject({ status: 'pending', lastError: '503 ServiceUnavailable' });
    // Skip ahead to the last attempt (the retry is seconds away): it fails, and the push is given up.
    await db().pushOutbox.update({ where: { id: pending.id }, data: { attempts: MAX_PUSH_ATTEMPTS - 1 } });
    const [failed] = await settledPushes(u.id, 1);
    expect(failed).toMatchObject({ status: 'failed', attempts: MAX_PUSH_ATTEMPTS, lastError: '503 ServiceUnavailable' });
    expect(await jobState(failed!.id)).toBe('completed');
    const requests = standIn.to(token).length;
    expect(requests).toBeGreaterThanOrEqual(3);
    expect(await devicesOf(u.id)).toHaveLength(1);
  });

  it('trusts a stand-in through NODE_EXTRA_CA_CERTS (a child process, no CA option)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-apns-ca-'));
    const caFile = path.join(dir, 'stand-in.pem');
    writeFileSync(caFile, standIn.cert);
    const token = hexToken();
    const script = `
      import { createApnsSender } from './src/push/apns.ts';
      const sender = createApnsSender(${JSON.stringify({ ...apns, ca: undefined })});
      const outcome = await sender.send({ token: ${JSON.stringify(token)}, topic: 'org.zulip.Zulip', payload: { aps: { badge: 0 } }, apnsId: crypto.randomUUID() });
      await sender.close();
      console.log(JSON.stringify(outcome));`;
    const run = (extraEnv: Record<string, string>) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: serverDir, env: { ...process.env, ...extraEnv } });
        let out = '';
        child.stdout.on('data', (c) => (out += c));
        child.stderr.on('data', () => {});
        child.on('error', reject);
        child.on('exit', () => resolve(out.trim().split('\n').at(-1) ?? ''));
      });
    expect(JSON.parse(await run({ NODE_EXTRA_CA_CERTS: caFile }))).toEqual({ result: 'sent' });
    expect(standIn.to(token)).toHaveLength(1);
    // Without it the self-signed certificate is refused (and that is a retry, not a crash).
    expect(JSON.parse(await run({}))).toMatchObject({ result: 'retry', status: null });
    expect(standIn.to(token)).toHaveLength(1);
  });
});

describe('configuration and pnpm manage pushes', () => {
  it('reads PARLEY_APNS_*', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-apns-cfg-'));
    const keyFile = path.join(dir, 'key.p8');
    writeFileSync(keyFile, 'not read at start');
    expect(loadConfig({})).toMatchObject({ apns: null, pushNotificationsEnabled: false });
    expect(loadConfig({ PARLEY_APNS_KEY_FILE: keyFile, PARLEY_APNS_KEY_ID: 'K', PARLEY_APNS_TEAM_ID: 'T' })).toMatchObject({
      pushNotificationsEnabled: true,
      apns: { keyFile, keyId: 'K', teamId: 'T', topic: 'org.zulip.Zulip', url: 'https://api.push.apple.com' },
    });
    expect(
      loadConfig({ PARLEY_APNS_KEY_FILE: keyFile, PARLEY_APNS_KEY_ID: 'K', PARLEY_APNS_TEAM_ID: 'T', PARLEY_APNS_TOPIC: 'com.example.App', PARLEY_APNS_URL: 'https://127.0.0.1:8443/' }).apns,
    ).toMatchObject({ topic: 'com.example.App', url: 'https://127.0.0.1:8443' });
    expect(() => loadConfig({ PARLEY_APNS_KEY_FILE: keyFile })).toThrow(/PARLEY_APNS_KEY_ID/);
    expect(() => loadConfig({ PARLEY_APNS_KEY_FILE: path.join(dir, 'missing.p8'), PARLEY_APNS_KEY_ID: 'K', PARLEY_APNS_TEAM_ID: 'T' })).toThrow(/no such file/);
    expect(() => loadConfig({ PARLEY_APNS_KEY_FILE: keyFile, PARLEY_APNS_KEY_ID: 'K', PARLEY_APNS_TEAM_ID: 'T', PARLEY_APNS_URL: 'http://insecure' })).toThrow(/PARLEY_APNS_URL/);
  });

  it('lists the push outbox', async () => {
    const u = await someone('manage');
    const token = hexToken();
    await addApns(u.client, token);
    await u.client.POST('/mobile_push/test_notification', { body: { token } });
    const [push] = await settledPushes(u.id, 1);
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/manage.ts', 'pushes', '--email', u.email], {
        cwd: serverDir,
        env: { ...process.env, DATABASE_URL: env.databaseUrl, PARLEY_SECRET_KEY: TEST_SECRET, PARLEY_DATA_DIR: os.tmpdir(), PARLEY_LOG_LEVEL: 'silent' },
      });
      let text = '';
      child.stdout.on('data', (c) => (text += c));
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`manage exited ${code}: ${text}`))));
    });
    const [head, payload] = out.trim().split('\n');
    expect(head!.split('\t').slice(0, 6)).toEqual([String(push!.id), push!.createdAt.toISOString(), push!.status, 'test', `user ${u.id}`, `apns:${token.slice(0, 12)}…`]);
    expect(JSON.parse(payload!)).toEqual(push!.payload);
  });
});
