// GET /streams/{stream_id}/email_address (Zulip's get_stream_email_address, Zulip 11): the channel's
// address at the e-mail gateway for the caller, who needs access to the channel's messages; the
// token belongs to (channel, caller, sender) and is kept; `sender_id` picks the Email Gateway bot
// (default), the caller, or a bot the caller may administer.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { useChannel } from '../../helpers/channels.ts';
import { createBot } from '../../helpers/presence.ts';

const DOMAIN = 'mail.parley.test';
const env = useTestServer({ config: { emailGateway: { port: null, host: '127.0.0.1', domain: DOMAIN, maxMessageBytes: 1024 * 1024 } } });
// hamlet and polonius (a guest) are subscribed to the public channel; cordelia is not.
const open = useChannel(env, 'iago', { name: 'Dänemark news!' }, ['hamlet', 'polonius']);
// A private channel hamlet created; cordelia is subscribed, iago (an administrator) is not.
const secret = useChannel(env, 'hamlet', { invite_only: true, name: 'secret plans' }, ['cordelia']);
// A public channel polonius is not subscribed to.
const elsewhere = useChannel(env, 'iago', { name: '日本' }, ['hamlet']);

const ADDRESS = new RegExp(`^([a-z0-9_-]+)\\.([0-9a-f]{32})\\.show-sender@${DOMAIN.replace(/\./g, '\\.')}$`);

const get = (as: Person, streamId: number, senderId?: number) =>
  env.client(as).GET('/streams/{stream_id}/email_address', { params: { path: { stream_id: streamId }, query: senderId === undefined ? {} : { sender_id: senderId } } });

async function addressOf(as: Person, streamId: number, senderId?: number): Promise<{ email: string; name: string; token: string }> {
  const { data, error } = await get(as, streamId, senderId);
  if (!data) throw new Error(`${as}: ${JSON.stringify(error)}`);
  const m = ADDRESS.exec(data.email);
  if (!m) throw new Error(`not a gateway address: ${data.email}`);
  return { email: data.email, name: m[1]!, token: m[2]! };
}

async function storedToken(token: string) {
  return env.running.deps.db.channelEmailAddress.findUnique({ where: { emailToken: token } });
}

describe('GET /streams/{stream_id}/email_address', () => {
  it("gives a member the channel's address: name part, a token of their own that is kept, show-sender", async () => {
    const first = await addressOf('hamlet', open.id);
    // "Dänemark news! 1" → "Dänemark-news-1" → "danemark-news-1" (accents folded to ASCII).
    expect(first.name).toMatch(/^danemark-news-\d+$/);
    expect((await addressOf('hamlet', open.id)).email).toBe(first.email);
    const row = await storedToken(first.token);
    expect(row).toMatchObject({ channelId: open.id, creatorId: env.users.hamlet.id, deactivated: false });
    const bot = await env.running.deps.db.user.findUniqueOrThrow({ where: { id: row!.senderId } });
    expect(bot).toMatchObject({ isBot: true, systemBot: 'emailgateway', fullName: 'Email Gateway' });
    // Another member gets another token for the same channel.
    const cordelia = await addressOf('cordelia', open.id);
    expect(cordelia.token).not.toBe(first.token);
    expect((await addressOf('hamlet', secret.id)).name).toMatch(/^secret-plans-\d+$/);
    // A name that does not reduce to ASCII without losing characters gives `channel`: letters with no
    // ASCII form, or punctuation at an end (its dash is trimmed).
    expect((await addressOf('hamlet', elsewhere.id)).name).toBe('channel');
    expect((await env.client('hamlet').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: 'help!' }] } })).error).toBeUndefined();
    const help = await env.running.deps.db.channel.findFirstOrThrow({ where: { realmId: env.realmId, name: 'help!' } });
    expect((await addressOf('hamlet', help.id)).name).toBe('channel');
  });

  it('gives an administrator the address of channels whose messages they can read, not of a private channel they are not in', async () => {
    expect((await addressOf('iago', open.id)).token).toMatch(/^[0-9a-f]{32}$/);
    expectJsonError(await get('iago', secret.id), 400, 'Invalid channel ID');
    expectJsonError(await get('desdemona', secret.id), 400, 'Invalid channel ID');
  });

  it("refuses a private channel to a member who is not subscribed, and gives it to its subscribers", async () => {
    expectJsonError(await get('othello', secret.id), 400, 'Invalid channel ID');
    expect((await addressOf('cordelia', secret.id)).name).toMatch(/^secret-plans-\d+$/);
  });

  it('gives a guest only the channels they are subscribed to', async () => {
    expect((await addressOf('polonius', open.id)).token).toMatch(/^[0-9a-f]{32}$/);
    expectJsonError(await get('polonius', elsewhere.id), 400, 'Invalid channel ID');
    expectJsonError(await get('polonius', secret.id), 400, 'Invalid channel ID');
  });

  it('refuses unknown and archived channels', async () => {
    expectJsonError(await get('hamlet', 999_999), 400, 'Invalid channel ID');
    const archived = await env.client('iago').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: 'to archive' }] } });
    expect(archived.error).toBeUndefined();
    const row = await env.running.deps.db.channel.findFirstOrThrow({ where: { realmId: env.realmId, name: 'to archive' } });
    expect((await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: row.id } } })).error).toBeUndefined();
    expectJsonError(await get('iago', row.id), 400, 'Invalid channel ID');
  });

  it('takes sender_id: the Email Gateway bot (the default), the caller, or a bot the caller may administer', async () => {
    const byDefault = await addressOf('othello', open.id);
    const gatewayBotId = (await storedToken(byDefault.token))!.senderId;
    expect((await addressOf('othello', open.id, gatewayBotId)).token).toBe(byDefault.token);

    const asSelf = await addressOf('othello', open.id, env.users.othello.id);
    expect(asSelf.token).not.toBe(byDefault.token);
    expect(await storedToken(asSelf.token)).toMatchObject({ creatorId: env.users.othello.id, senderId: env.users.othello.id });

    const ownBot = await createBot(env, env.users.othello.id, 'mailer');
    const asBot = await addressOf('othello', open.id, ownBot.id);
    expect(await storedToken(asBot.token)).toMatchObject({ creatorId: env.users.othello.id, senderId: ownBot.id });
    // An administrator may pick anyone's bot; a member another person's bot is refused.
    expect(await storedToken((await addressOf('iago', open.id, ownBot.id)).token)).toMatchObject({ creatorId: env.users.iago.id, senderId: ownBot.id });
    expectJsonError(await get('hamlet', open.id, ownBot.id), 400, 'Insufficient permission');
    // A person (not the caller) or an unknown id is not a bot.
    expectJsonError(await get('hamlet', open.id, env.users.cordelia.id), 400, 'No such bot');
    expectJsonError(await get('hamlet', open.id, 999_999), 400, 'No such bot');
    // The channel is checked first.
    expectJsonError(await get('othello', secret.id, ownBot.id), 400, 'Invalid channel ID');
  });
});
