// The round trip: an organization built through the API is exported (full export, every member
// consenting), imported as a new organization, and compared object by object through the API, as
// the same people (users, channels, subscriptions, groups, messages with their rendering and flags,
// reactions, topics, users' topics, files).
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { useTestServer } from '../helpers/test-server.ts';
import { PEOPLE, type Person } from '../helpers/fixtures.ts';
import { createChannel } from '../helpers/channels.ts';
import { createGroup } from '../helpers/groups.ts';
import { basicAuth } from '../helpers/auth.ts';
import { download, multipart, uploadFile } from '../helpers/uploads.ts';
import { pngImage } from '../helpers/images.ts';
import { exportRealm } from '../../src/export/realm-export.ts';
import { ExportType } from '../../src/data/exports.repo.ts';
import { importRealmFromArchive, type ImportResult } from '../../src/import/zulip-import.ts';

const env = useTestServer();
const people = Object.keys(PEOPLE) as Person[];

type Message = { id: number; sender_id: number; subject: string; content: string; timestamp: number; flags?: string[]; type: string; display_recipient: unknown; reactions: Array<{ emoji_name: string; emoji_code: string; reaction_type: string; user_id: number }> };

describe('manage import: the round trip of an export', () => {
  let imported: ImportResult;
  const after: Partial<Record<Person, ParleyClient>> = {};
  let fileUrl = '';
  let agendaUrl = '';
  const userMap = new Map<number, number>();
  const work = mkdtempSync(path.join(os.tmpdir(), 'parley-round-trip-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  beforeAll(async () => {
    const c = (p: Person) => env.client(p);
    const raw = (p: Person, url: string, body: Record<string, string>) => env.raw(url, { method: 'POST', as: p, body: new URLSearchParams(body) });
    // Users: a bot (besides the seeded owner, administrator, moderator, members and guest); everyone consents.
    expect((await raw('hamlet', '/bots', { full_name: 'Round Bot', short_name: 'round', bot_type: '1' })).status).toBe(200);
    for (const p of people) expect((await env.raw('/settings', { method: 'PATCH', as: p, body: new URLSearchParams({ allow_private_data_export: 'true' }) })).status).toBe(200);
    // Groups, channels (a private one only a group may post to), subscription properties.
    const group = await createGroup(env, 'iago', { name: 'round group', members: [env.users.hamlet.id, env.users.othello.id] });
    const open = await createChannel(env, 'iago', { name: 'round public' }, ['hamlet', 'othello', 'polonius']);
    const closed = await createChannel(env, 'iago', { name: 'round private', invite_only: true, can_send_message_group: group }, ['hamlet', 'othello']);
    expect((await c('hamlet').POST('/users/me/subscriptions/properties', { body: { subscription_data: [{ stream_id: open.id, property: 'color', value: '#123456' }, { stream_id: closed.id, property: 'pin_to_top', value: true }] } })).error).toBeUndefined();
    // A custom emoji and a file.
    const { body, contentType } = multipart([{ name: 'f', filename: 'e.png', contentType: 'image/png', data: await pngImage(16, 16) }]);
    expect((await env.raw('/realm/emoji/roundparrot', { method: 'POST', body, headers: { 'Content-Type': contentType }, as: 'hamlet' })).status).toBe(200);
    fileUrl = (await uploadFile(env, 'hamlet', 'minutes.txt', 'the minutes')).url;
    // A second file, so that the export's pages of attachments (a row per page) cross a boundary.
    agendaUrl = (await uploadFile(env, 'othello', 'agenda.txt', 'the agenda')).url;
    // Messages in channels and direct messages, with topics, mentions, flags and reactions.
    const send = async (p: Person, to: unknown, content: string, topic?: string) => {
      const res = await raw(p, '/messages', { type: topic ? 'stream' : 'private', to: typeof to === 'number' ? String(to) : JSON.stringify(to), content, ...(topic ? { topic } : {}) });
      expect(res.status).toBe(200);
      return res.body.id as number;
    };
    const hello = await send('hamlet', open.id, 'Hello @**Iago**, see [minutes](' + fileUrl + ')', 'plans');
    await send('polonius', open.id, 'A guest speaks', 'plans');
    await send('othello', open.id, `The [agenda](${agendaUrl})`, 'plans');
    await send('othello', closed.id, '**Secret** words', 'whispers');
    await send('iago', [env.users.hamlet.id], 'A direct message');
    await send('hamlet', [env.users.iago.id, env.users.othello.id], 'A group conversation');
    expect((await c('hamlet').POST('/messages/flags', { body: { messages: [hello], op: 'add', flag: 'starred' } })).error).toBeUndefined();
    expect((await raw('iago', `/messages/${hello}/reactions`, { emoji_name: 'thumbs_up' })).status).toBe(200);
    expect((await raw('hamlet', `/messages/${hello}/reactions`, { emoji_name: 'roundparrot' })).status).toBe(200);
    expect((await raw('hamlet', '/user_topics', { stream_id: String(open.id), topic: 'plans', visibility_policy: '3' })).status).toBe(200);

    // Export (a row per page of realm.json's paged tables, so every page boundary is crossed), then
    // import as a new organization.
    const file = path.join(work, 'export.tar.gz');
    const out = createWriteStream(file);
    const closedOut = once(out, 'close');
    await exportRealm(env.running.deps, env.realmId, ExportType.FULL_WITH_CONSENT, out, { rowsPerPage: 1 });
    await closedOut;
    imported = await importRealmFromArchive(env.running.deps, file, { url: 'http://round-trip.parley.test' });
    for (const p of people) {
      const u = imported.users.find((x) => x.email === PEOPLE[p].email)!;
      after[p] = createParleyClient({ site: env.url, email: u.email, apiKey: u.apiKey });
      userMap.set(env.users[p].id, u.id);
    }
    for (const u of imported.users) if (!userMap.has(u.oldId)) userMap.set(u.oldId, u.id);
  });

  const mapUser = (id: number) => userMap.get(id) ?? -id;

  it('users', async () => {
    const shape = (users: Array<{ user_id: number; email: string; full_name: string; role?: number; is_bot: boolean; is_active: boolean; bot_owner_id?: number | null }>, map: (id: number) => number) =>
      users
        .map((u) => ({ id: map(u.user_id), email: u.email, full_name: u.full_name, role: u.role, is_bot: u.is_bot, is_active: u.is_active, bot_owner_id: u.bot_owner_id ? map(u.bot_owner_id) : null }))
        .filter((u) => !u.email.startsWith('notification-bot@'))
        .sort((a, b) => a.id - b.id);
    const before = (await env.client('desdemona').GET('/users')).data!.members;
    const now = (await after.desdemona!.GET('/users')).data!.members;
    expect(shape(now, (id) => id)).toEqual(shape(before, mapUser));
  });

  it('channels, subscriptions and groups', async () => {
    const groupsBefore = (await env.client('hamlet').GET('/user_groups')).data!.user_groups.filter((g) => !g.is_system_group);
    const groupsNow = (await after.hamlet!.GET('/user_groups')).data!.user_groups.filter((g) => !g.is_system_group);
    const groupShape = (gs: typeof groupsBefore, map: (id: number) => number) => gs.map((g) => ({ name: g.name, description: g.description, members: g.members.map(map).sort() })).sort((a, b) => a.name.localeCompare(b.name));
    expect(groupShape(groupsNow, (id) => id)).toEqual(groupShape(groupsBefore, mapUser));
    const groupName = new Map([...groupsBefore, ...groupsNow].map((g) => [g.id, g.name]));
    const subShape = (subs: Array<Record<string, unknown>>) =>
      subs
        .map((s) => ({
          name: s.name, description: s.description, invite_only: s.invite_only, color: s.color, pin_to_top: s.pin_to_top, is_muted: s.is_muted,
          can_send_message_group: typeof s.can_send_message_group === 'number' ? (groupName.get(s.can_send_message_group) ?? 'system') : 'anonymous',
        }))
        .sort((a, b) => String(a.name).localeCompare(String(b.name)));
    const before = (await env.client('hamlet').GET('/users/me/subscriptions')).data!.subscriptions;
    const now = (await after.hamlet!.GET('/users/me/subscriptions')).data!.subscriptions;
    expect(subShape(now)).toEqual(subShape(before));
    expect(subShape(now).find((s) => String(s.name).startsWith('round private'))!.can_send_message_group).toBe('round group');
  });

  it('messages: rendering, topics, flags, reactions, files and followed topics', async () => {
    const emojiBefore = Object.values((await env.client('hamlet').GET('/realm/emoji')).data!.emoji);
    const emojiNow = Object.values((await after.hamlet!.GET('/realm/emoji')).data!.emoji);
    const emojiName = new Map([...emojiBefore, ...emojiNow].map((e) => [e.id, e.name]));
    for (const p of ['hamlet', 'iago', 'othello'] as const) {
      const read = async (client: ParleyClient) => (await client.GET('/messages', { params: { query: { anchor: 'oldest', num_before: 0, num_after: 200 } } })).data!.messages as unknown as Message[];
      const shape = (ms: Message[], map: (id: number) => number, realmId: number) =>
        ms.map((m) => ({
          sender: map(m.sender_id),
          topic: m.subject,
          type: m.type,
          timestamp: m.timestamp,
          flags: [...(m.flags ?? [])].sort(),
          content: m.content.replace(/data-user-id="(\d+)"/g, (_a, id: string) => `data-user-id="${map(Number(id))}"`).replaceAll(`/user_uploads/${realmId}/`, '/user_uploads/REALM/').replace(/\/user_avatars\/\d+\/emoji\/images\/[^"]+/g, 'EMOJI'),
          recipients: Array.isArray(m.display_recipient) ? (m.display_recipient as Array<{ id: number }>).map((r) => map(r.id)).sort() : m.display_recipient,
          reactions: m.reactions.map((r) => [r.reaction_type === 'realm_emoji' ? emojiName.get(r.emoji_code) : r.emoji_code, r.reaction_type, map(r.user_id)].join(' ')).sort(),
        }));
      const before = shape(await read(env.client(p)), mapUser, env.realmId);
      const now = shape(await read(after[p]!), (id) => id, imported.realmId);
      expect(now.length).toBeGreaterThan(0);
      expect(now).toEqual(before);
    }
    // The file is there, under the new organization, for the same people.
    const moved = (url: string) => url.replace(`/user_uploads/${env.realmId}/`, `/user_uploads/${imported.realmId}/`);
    const hamlet = imported.users.find((u) => u.email === PEOPLE.hamlet.email)!;
    expect((await download(env.url, moved(fileUrl), { auth: basicAuth(hamlet.email, hamlet.apiKey) })).text).toBe('the minutes');
    expect((await download(env.url, moved(agendaUrl), { auth: basicAuth(hamlet.email, hamlet.apiKey) })).text).toBe('the agenda');
    const topics = (await after.hamlet!.POST('/register', { body: { fetch_event_types: ['user_topic'] } })).data as unknown as { user_topics: Array<{ topic_name: string; visibility_policy: number }> };
    expect(topics.user_topics.map((t) => [t.topic_name, t.visibility_policy])).toEqual([['plans', 3]]);
  });
});
