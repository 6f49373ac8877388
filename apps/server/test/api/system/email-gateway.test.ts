// The incoming e-mail gateway (src/email-gateway, actions/email-gateway.ts): mail delivered over real
// SMTP (nodemailer) to the gateway listening on a free port of the test server becomes a channel
// message through the send path of POST /messages (topic from the subject, plain text or HTML as
// Markdown, quotes and signature removed, the address's sender, attachments stored as uploads), once
// per mail; addresses that are unknown, of an archived channel or of someone who lost access, and
// mail over the size limit, are refused in the SMTP conversation.
import { describe, expect, it } from 'vitest';
import { createTransport } from 'nodemailer';
import { useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel, subscribeDirectly, useChannel } from '../../helpers/channels.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';

const DOMAIN = 'mail.parley.test';
const MAX_BYTES = 64 * 1024;
const env = useTestServer({ config: { emailGateway: { port: 0, host: '127.0.0.1', domain: DOMAIN, maxMessageBytes: MAX_BYTES } } });
// hamlet and cordelia are subscribed (iago created it).
const channel = useChannel(env, 'iago', { name: 'mailbox' }, ['hamlet', 'cordelia']);

const addressFor = async (as: Person, streamId: number, senderId?: number): Promise<string> => {
  const { data, error } = await env.client(as).GET('/streams/{stream_id}/email_address', { params: { path: { stream_id: streamId }, query: senderId === undefined ? {} : { sender_id: senderId } } });
  if (!data) throw new Error(JSON.stringify(error));
  return data.email;
};

type Mail = { to: string; subject?: string; text?: string; html?: string; messageId?: string; attachments?: { filename: string; content: string }[] };

/** Sends over SMTP; resolves with the id of the message the gateway answered, rejects with the SMTP error. */
async function send(mail: Mail): Promise<number> {
  const transport = createTransport({ host: '127.0.0.1', port: env.running.emailGateway!.port, secure: false, ignoreTLS: true });
  try {
    const info = await transport.sendMail({ from: 'Ann Example <ann@example.com>', ...mail });
    const id = /posted as message (\d+)/.exec(info.response)?.[1];
    if (!id) throw new Error(`unexpected answer: ${info.response}`);
    return Number(id);
  } finally {
    transport.close();
  }
}

/** The SMTP error a sending fails with: its reply code and text. */
async function refusal(mail: Mail): Promise<{ code: number; text: string }> {
  try {
    await send(mail);
  } catch (error) {
    const e = error as { responseCode?: number; response?: string };
    return { code: e.responseCode ?? 0, text: e.response ?? String(error) };
  }
  throw new Error('the mail was accepted');
}

/** The message as hamlet reads it (raw Markdown). */
async function readMessage(id: number) {
  const { data, error } = await env.client('hamlet').GET('/messages', { params: { query: { anchor: String(id), num_before: 0, num_after: 0, apply_markdown: false } } });
  if (!data) throw new Error(JSON.stringify(error));
  const message = data.messages.find((m) => m.id === id);
  if (!message) throw new Error(`message ${id} is not readable by hamlet`);
  return message;
}

const messagesOfChannel = (channelId: number) => env.running.deps.db.message.count({ where: { channelId } });

describe('the e-mail gateway', () => {
  it('posts a plain-text mail as the Email Gateway bot: subject as topic, quoted reply and signature removed, From line first', async () => {
    const to = await addressFor('hamlet', channel.id);
    const mark = await markEvents(env);
    const id = await send({
      to,
      subject: 'Re: [Fwd: Build failed]',
      text: 'The build is red again.\n\n    indented, not code\n\n--\nAnn, release team\n\nOn Mon, 1 Jan 2024, Bob <bob@example.com> wrote:\n> Is the build green?\n> Thanks\n',
    });
    const message = await readMessage(id);
    expect(message.subject).toBe('Build failed');
    expect(message.content).toBe('From: Ann Example <ann@example.com>\nThe build is red again.\n\n    indented, not code');
    expect(message.sender_full_name).toBe('Email Gateway');
    expect(message.client).toBe('Internal');
    // Rendered as Zulip renders gateway mail: indented lines are no code block.
    const rendered = await env.client('hamlet').GET('/messages', { params: { query: { anchor: String(id), num_before: 0, num_after: 0 } } });
    expect(rendered.data!.messages[0]!.content).not.toContain('codehilite');
    // The usual `message` event went to the subscribers (validated against the spec).
    const events = (await eventPayloadsSince(env, mark)).filter((p) => p.type === 'message' && p.message.id === id);
    expect(events).toHaveLength(1);
  });

  it('converts an HTML mail to Markdown, without the quoted message', async () => {
    const to = await addressFor('cordelia', channel.id);
    const id = await send({
      to,
      subject: 'Weekly report',
      html: '<html><head><style>p { color: red }</style></head><body><h2>Status</h2><p>All <b>good</b>, see <a href="https://example.com/r">the report</a>.</p><ul><li>one</li><li>two</li></ul><div class="gmail_quote">On Monday someone wrote:<blockquote>old text</blockquote></div></body></html>',
    });
    const message = await readMessage(id);
    expect(message.subject).toBe('Weekly report');
    expect(message.content).toBe('From: Ann Example <ann@example.com>\n## Status\n\nAll **good**, see [the report](https://example.com/r).\n\n*   one\n*   two');
  });

  it('stores attachments as uploads and links them; a mail without a subject gets "Email with no subject"', async () => {
    const to = await addressFor('hamlet', channel.id);
    const id = await send({ to, text: 'See attached.', attachments: [{ filename: 'notes [v1].txt', content: 'line one\n' }] });
    const message = await readMessage(id);
    expect(message.subject).toBe('Email with no subject');
    const link = /^From: Ann Example <ann@example\.com>\nSee attached\.\n\n\[(.+)\]\((\/user_uploads\/[^)]+)\)$/.exec(message.content);
    expect(link, message.content).not.toBeNull();
    expect(link![1]).not.toMatch(/[[\]]/);
    const attachment = await env.running.deps.db.attachment.findFirstOrThrow({ where: { pathId: link![2]!.replace('/user_uploads/', '') } });
    expect(attachment.ownerId).toBe(message.sender_id);
    expect(await env.running.deps.db.attachmentMessage.count({ where: { attachmentId: attachment.id, messageId: id } })).toBe(1);
  });

  it('posts as the address creator when they chose themselves as sender', async () => {
    const to = await addressFor('hamlet', channel.id, env.users.hamlet.id);
    const id = await send({ to, subject: 'From me', text: 'Posted as hamlet.' });
    const message = await readMessage(id);
    expect(message.sender_id).toBe(env.users.hamlet.id);
    expect(message.content).toBe('From: Ann Example <ann@example.com>\nPosted as hamlet.');
  });

  it('posts a mail delivered twice (same Message-ID) once', async () => {
    const to = await addressFor('hamlet', channel.id);
    const mail = { to, subject: 'Once', text: 'Only once.', messageId: '<retry-1@example.com>' };
    const before = await messagesOfChannel(channel.id);
    const first = await send(mail);
    expect(await send(mail)).toBe(first);
    expect(await messagesOfChannel(channel.id)).toBe(before + 1);
  });

  it('refuses mail over the size limit', async () => {
    const to = await addressFor('hamlet', channel.id);
    const before = await messagesOfChannel(channel.id);
    const refused = await refusal({ to, subject: 'Too big', text: 'x'.repeat(MAX_BYTES + 1024) });
    expect(refused.code).toBe(552);
    expect(await messagesOfChannel(channel.id)).toBe(before);
  });

  it('refuses unknown addresses, other domains and bad tokens at RCPT TO', async () => {
    const unknown = await refusal({ to: `mailbox.${'0'.repeat(32)}.show-sender@${DOMAIN}`, text: 'hello' });
    expect(unknown.code).toBe(550);
    expect(unknown.text).toContain('Bad stream token');
    const elsewhere = await refusal({ to: 'someone@example.org', text: 'hello' });
    expect(elsewhere.code).toBe(550);
    expect(elsewhere.text).toContain('Address not recognized by gateway.');
  });

  it('refuses the address of an archived channel, and of a creator who lost access to a private channel', async () => {
    const doomed = await createChannel(env, 'hamlet', { name: 'doomed' });
    const toDoomed = await addressFor('hamlet', doomed.id);
    expect((await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: doomed.id } } })).error).toBeUndefined();
    const archived = await refusal({ to: toDoomed, text: 'hello' });
    expect(archived.code).toBe(550);
    expect(archived.text).toContain(`Permission denied: Not authorized to send to channel '${doomed.name}'`);

    const secret = await createChannel(env, 'iago', { name: 'secret', invite_only: true }, ['cordelia']);
    const toSecret = await addressFor('cordelia', secret.id);
    expect(await send({ to: toSecret, subject: 'in', text: 'still allowed' })).toBeGreaterThan(0);
    await subscribeDirectly(env, env.users.cordelia.id, secret.id, false);
    const lost = await refusal({ to: toSecret, text: 'hello' });
    expect(lost.code).toBe(550);
    expect(lost.text).toContain('Permission denied');
    expect(await messagesOfChannel(secret.id)).toBe(1);
  });
});
