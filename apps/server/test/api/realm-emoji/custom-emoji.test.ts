// GET /realm/emoji and /register's realm_emoji (every role reads them, deactivated emoji included),
// DELETE /realm/emoji/{emoji_name} (the author or an administrator; deactivation, the event), and the
// custom emoji in use: `:name:` rendered as Zulip's <img>, reactions with reaction_type realm_emoji
// (Zulip's checks of code, name and deactivation), and user statuses naming one.
import { beforeAll, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer, type TestServer } from '../../helpers/test-server.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { multipart } from '../../helpers/uploads.ts';
import { pngImage } from '../../helpers/images.ts';
import type { Person } from '../../helpers/fixtures.ts';

const env = useTestServer();

async function addEmoji(env: TestServer, as: Person, name: string): Promise<{ id: string; source_url: string }> {
  const { body, contentType } = multipart([{ name: 'f', filename: 'e.png', contentType: 'image/png', data: await pngImage(16, 16) }]);
  const res = await env.raw(`/realm/emoji/${name}`, { method: 'POST', body, headers: { 'Content-Type': contentType }, as });
  if (res.status !== 200) throw new Error(`setup: emoji upload failed: ${JSON.stringify(res.body)}`);
  const list = (await env.raw('/realm/emoji', { as })).body.emoji as Record<string, { id: string; name: string; source_url: string; deactivated: boolean }>;
  return Object.values(list).find((e) => e.name === name && !e.deactivated)!;
}

const sendToOthello = async (as: Person, content: string, others: Person[] = []) => {
  const to = [env.users.othello.id, ...others.map((p) => env.users[p].id)];
  const res = await env.raw('/messages', { method: 'POST', body: new URLSearchParams({ type: 'private', to: JSON.stringify(to), content }), as });
  if (res.status !== 200) throw new Error(`setup: send failed: ${JSON.stringify(res.body)}`);
  return res.body.id as number;
};

let octopus: { id: string; source_url: string };
beforeAll(async () => {
  octopus = await addEmoji(env, 'hamlet', 'octo_pus');
});

describe('GET /realm/emoji', () => {
  it('lists the emoji to every role, and /register holds the same', async () => {
    for (const who of ['desdemona', 'iago', 'shiva', 'hamlet', 'polonius'] as const) {
      const { data } = await env.client(who).GET('/realm/emoji');
      expect(data!.emoji[octopus.id]).toMatchObject({ name: 'octo_pus', deactivated: false, author_id: env.users.hamlet.id });
    }
    const registered = await env.raw('/register', { method: 'POST', body: new URLSearchParams({ fetch_event_types: JSON.stringify(['realm_emoji']) }), as: 'polonius' });
    expect(registered.body.realm_emoji).toEqual((await env.raw('/realm/emoji', { as: 'polonius' })).body.emoji);
  });
});

describe('DELETE /realm/emoji/{emoji_name}', () => {
  it('lets the author and administrators deactivate, refuses others, and keeps the emoji listed', async () => {
    const mine = await addEmoji(env, 'othello', 'temp-one');
    expectJsonError(await env.raw('/realm/emoji/temp-one', { method: 'DELETE', as: 'hamlet' }), 400, 'Must be an organization administrator or emoji author');
    expectJsonError(await env.raw('/realm/emoji/temp-one', { method: 'DELETE', as: 'shiva' }), 400, 'Must be an organization administrator or emoji author');
    const mark = await markEvents(env);
    expect((await env.raw('/realm/emoji/temp-one', { method: 'DELETE', as: 'othello' })).status).toBe(200);
    const list = (await env.raw('/realm/emoji', { as: 'hamlet' })).body.emoji;
    expect(list[mine.id]).toMatchObject({ name: 'temp-one', deactivated: true });
    expect(await eventPayloadsSince(env, mark)).toEqual([{ type: 'realm_emoji', op: 'update', realm_emoji: list }]);
    expectJsonError(await env.raw('/realm/emoji/temp-one', { method: 'DELETE', as: 'othello' }), 400, "Emoji 'temp-one' does not exist");
    // The name is free again; an administrator removes someone else's.
    await addEmoji(env, 'cordelia', 'temp-one');
    expect((await env.raw('/realm/emoji/temp-one', { method: 'DELETE', as: 'iago' })).status).toBe(200);
  });
});

describe('custom emoji in messages, reactions and statuses', () => {
  it("renders :name: as Zulip's image, over a Unicode emoji of the same name, and leaves unknown names as text", async () => {
    const smile = await addEmoji(env, 'iago', 'smile');
    const id = await sendToOthello('hamlet', 'hi :octo_pus: and :smile: and :no_such_one:');
    const got = await env.raw(`/messages/${id}`, { as: 'othello' });
    expect(got.body.message.content).toBe(
      `<p>hi <img alt=":octo_pus:" class="emoji" src="${octopus.source_url}" title="octo pus"> and ` +
        `<img alt=":smile:" class="emoji" src="${smile.source_url}" title="smile"> and :no_such_one:</p>`,
    );
    expect((await env.raw('/realm/emoji/smile', { method: 'DELETE', as: 'iago' })).status).toBe(200);
    const after = await sendToOthello('hamlet', ':smile:');
    expect((await env.raw(`/messages/${after}`, { as: 'othello' })).body.message.content).toContain('class="emoji emoji-1f642"');
  });

  it('accepts reactions with reaction_type realm_emoji, by code or by name, with Zulip\'s checks', async () => {
    const id = await sendToOthello('hamlet', 'react to me', ['cordelia']);
    const react = (as: Person, fields: Record<string, string>) => env.raw(`/messages/${id}/reactions`, { method: 'POST', body: new URLSearchParams(fields), as });
    // Checked while nobody has reacted with it (later, the same code and type is a vote, as in Zulip).
    expectJsonError(await react('cordelia', { emoji_name: 'octo_pus', emoji_code: '999999', reaction_type: 'realm_emoji' }), 400, 'Invalid custom emoji.');
    expectJsonError(await react('cordelia', { emoji_name: 'other', emoji_code: octopus.id, reaction_type: 'realm_emoji' }), 400, 'Invalid custom emoji name.');
    expect((await react('othello', { emoji_name: 'octo_pus', emoji_code: octopus.id, reaction_type: 'realm_emoji' })).status).toBe(200);
    expect((await react('hamlet', { emoji_name: 'octo_pus' })).status).toBe(200); // looked up by name
    const message = (await env.raw(`/messages/${id}`, { as: 'othello' })).body.message;
    expect(message.reactions.map((r: Record<string, unknown>) => [r.emoji_name, r.emoji_code, r.reaction_type, r.user_id])).toEqual([
      ['octo_pus', octopus.id, 'realm_emoji', env.users.othello.id],
      ['octo_pus', octopus.id, 'realm_emoji', env.users.hamlet.id],
    ]);
    const gone = await addEmoji(env, 'hamlet', 'gone');
    expect((await env.raw('/realm/emoji/gone', { method: 'DELETE', as: 'hamlet' })).status).toBe(200);
    expectJsonError(await react('cordelia', { emoji_name: 'gone', emoji_code: gone.id, reaction_type: 'realm_emoji' }), 400, 'This custom emoji has been deactivated.');
  });

  it('lets a status name a custom emoji', async () => {
    const res = await env.raw('/users/me/status', { method: 'POST', body: new URLSearchParams({ status_text: 'busy', emoji_name: 'octo_pus' }), as: 'cordelia' });
    expect(res.status).toBe(200);
    const status = await env.raw(`/users/${env.users.cordelia.id}/status`, { as: 'hamlet' });
    expect(status.body.status).toMatchObject({ emoji_name: 'octo_pus', emoji_code: octopus.id, reaction_type: 'realm_emoji' });
  });
});
