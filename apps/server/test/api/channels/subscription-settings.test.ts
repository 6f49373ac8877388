// POST /users/me/subscriptions/properties: a subscriber's own settings for channels (color, mute, pin,
// per-channel notifications), their `subscription` update events, and what muting changes for reading.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, useChannel } from '../../helpers/channels.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';

const env = useTestServer();
const channel = useChannel(env, 'iago', {}, ['iago', 'hamlet']);
const other = useChannel(env, 'iago', {}, ['iago', 'hamlet']);
const secret = useChannel(env, 'iago', { invite_only: true }, ['iago']);

type Change = { stream_id: number; property: string; value: boolean | string };
const change = (as: Person, subscription_data: Change[]) => env.client(as).POST('/users/me/subscriptions/properties', { body: { subscription_data } });
async function changed(as: Person, data: Change[]): Promise<void> {
  const { error } = await change(as, data);
  if (error) throw new Error(JSON.stringify(error));
}
async function subscriptionOf(as: Person, channelId: number): Promise<Record<string, unknown>> {
  const { data } = await env.client(as).GET('/users/me/subscriptions');
  return (data!.subscriptions as unknown as Record<string, unknown>[]).find((s) => s['stream_id'] === channelId)!;
}

describe('POST /users/me/subscriptions/properties', () => {
  it('changes every kind of setting, reads back in GET /users/me/subscriptions, and tells the user\'s clients', async () => {
    const mark = await markEvents(env);
    await changed('hamlet', [
      { stream_id: channel.id, property: 'color', value: '#e79ab5' },
      { stream_id: channel.id, property: 'is_muted', value: true },
      { stream_id: channel.id, property: 'pin_to_top', value: true },
      { stream_id: channel.id, property: 'desktop_notifications', value: false },
      { stream_id: channel.id, property: 'audible_notifications', value: true },
      { stream_id: channel.id, property: 'push_notifications', value: true },
      { stream_id: channel.id, property: 'email_notifications', value: false },
      { stream_id: channel.id, property: 'wildcard_mentions_notify', value: false },
    ]);
    expect(await subscriptionOf('hamlet', channel.id)).toMatchObject({
      color: '#e79ab5',
      is_muted: true,
      in_home_view: false,
      pin_to_top: true,
      desktop_notifications: false,
      audible_notifications: true,
      push_notifications: true,
      email_notifications: false,
      wildcard_mentions_notify: false,
    });
    // Another subscriber's settings are theirs.
    expect(await subscriptionOf('iago', channel.id)).toMatchObject({ is_muted: false, pin_to_top: false, push_notifications: null });

    const events = (await eventPayloadsSince(env, mark)).filter((e) => e.type === 'subscription');
    const update = (property: string, value: unknown) => ({ type: 'subscription', op: 'update', stream_id: channel.id, property, value });
    expect(events).toEqual([
      update('color', '#e79ab5'),
      update('in_home_view', false),
      update('is_muted', true),
      update('pin_to_top', true),
      update('desktop_notifications', false),
      update('audible_notifications', true),
      update('push_notifications', true),
      update('email_notifications', false),
      update('wildcard_mentions_notify', false),
    ]);
    const rows = await env.running.deps.db.event.findMany({ where: { id: { gt: mark } } });
    for (const row of rows) expect(row.userIds).toEqual([env.users.hamlet.id]);

    // The older in_home_view is the opposite of is_muted.
    await changed('hamlet', [{ stream_id: channel.id, property: 'in_home_view', value: true }]);
    expect(await subscriptionOf('hamlet', channel.id)).toMatchObject({ is_muted: false, in_home_view: true });
  });

  it("refuses bad changes with Zulip's messages, and makes none of a request with one", async () => {
    const before = await subscriptionOf('hamlet', other.id);
    const tryAll = async (bad: Change, msg: string) => {
      expectJsonError(await change('hamlet', [{ stream_id: other.id, property: 'pin_to_top', value: !before['pin_to_top'] }, bad]), 400, msg);
    };
    await tryAll({ stream_id: other.id, property: 'loudness', value: true }, 'Unknown subscription property: loudness');
    await tryAll({ stream_id: other.id, property: 'is_muted', value: 'yes' }, 'is_muted is not a boolean');
    await tryAll({ stream_id: other.id, property: 'color', value: 'red' }, 'color is not a valid hex color code');
    await tryAll({ stream_id: other.id, property: 'color', value: true }, 'color is not a string');
    await tryAll({ stream_id: secret.id, property: 'is_muted', value: true }, 'Invalid channel ID');
    await tryAll({ stream_id: 987654, property: 'is_muted', value: true }, 'Invalid channel ID');
    const unsubscribed = await createChannel(env, 'iago', {}, ['iago']);
    await tryAll({ stream_id: unsubscribed.id, property: 'is_muted', value: true }, `Not subscribed to channel ID ${unsubscribed.id}`);
    expect(await subscriptionOf('hamlet', other.id)).toEqual(before);
    expectJsonError(await env.raw('/users/me/subscriptions/properties', { method: 'POST', as: 'hamlet', body: new URLSearchParams({}) }), 400, "Missing 'subscription_data' argument");
    // Three-digit colors are hex color codes too.
    await changed('hamlet', [{ stream_id: other.id, property: 'color', value: '#abc' }]);
    expect((await subscriptionOf('hamlet', other.id))['color']).toBe('#abc');
  });

  it('muting a channel takes its topics out of in:home, except those the user unmuted', async () => {
    const ch = await createChannel(env, 'iago', {}, ['iago', 'hamlet']);
    const send = async (topic: string) => {
      const res = await env.raw('/messages', { method: 'POST', as: 'iago', body: new URLSearchParams({ type: 'stream', to: ch.name, topic, content: 'x' }) });
      return res.body.id as number;
    };
    const plain = await send('plain');
    const kept = await send('kept');
    await changed('hamlet', [{ stream_id: ch.id, property: 'is_muted', value: true }]);
    const { error } = await env.client('hamlet').POST('/user_topics', { body: { stream_id: ch.id, topic: 'kept', visibility_policy: 2 } });
    expect(error).toBeUndefined();
    const query = new URLSearchParams({ anchor: 'newest', num_before: '100', num_after: '0', narrow: JSON.stringify([{ operator: 'in', operand: 'home' }]) });
    const home = (await env.raw(`/messages?${query}`, { as: 'hamlet' })).body.messages.map((m: { id: number }) => m.id);
    expect(home).toContain(kept);
    expect(home).not.toContain(plain);
  });
});
