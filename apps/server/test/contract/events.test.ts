// Event payloads are part of the contract: every event schema file is reachable from the spec (GET
// /events), every event the server code can emit has a schema, and after a representative run of API
// calls every row of the `event` table matches the spec (apart from the known divergences listed in
// test/helpers/events.ts, which must still diverge: fixing one fails here until it is unlisted).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createChannel, fresh } from '../helpers/channels.ts';
import { createGroup, systemGroupIds } from '../helpers/groups.ts';
import { createUser, uniqueEmail } from '../helpers/people.ts';
import type { Person } from '../helpers/fixtures.ts';
import { EVENT_SCHEMAS, KNOWN_EVENT_DIVERGENCES, checkStoredEvent, eventSchemaNameFor } from '../helpers/events.ts';
import { useTestServer } from '../helpers/test-server.ts';
import { multipart, postUpload } from '../helpers/uploads.ts';
import { pngImage } from '../helpers/images.ts';
import { waitFor } from '../helpers/wait.ts';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../../../..');
const spec = JSON.parse(readFileSync(path.join(root, 'spec/dist/openapi.json'), 'utf8'));
const eventsDir = path.join(root, 'spec/components/schemas/events');
const srcDir = path.join(here, '../../src');

/** The component schema names reachable from a node of the bundled spec through $ref. */
function reachableSchemas(node: unknown, seen = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const item of node) reachableSchemas(item, seen);
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
        const name = value.slice('#/components/schemas/'.length);
        if (!seen.has(name)) {
          seen.add(name);
          reachableSchemas(spec.components.schemas[name], seen);
        }
      } else reachableSchemas(value, seen);
    }
  }
  return seen;
}

function sources(dir: string): Array<{ file: string; text: string }> {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sources(full);
    return name.endsWith('.ts') ? [{ file: path.relative(srcDir, full), text: readFileSync(full, 'utf8') }] : [];
  });
}

/** Object literals `{ type: 'x', op: 'y' …` in the server's code (the op may follow on the next line). */
function emittedTypeOps(): Array<{ type: string; op: string; file: string }> {
  const found: Array<{ type: string; op: string; file: string }> = [];
  for (const { file, text } of sources(srcDir)) {
    for (const m of text.matchAll(/\btype: '([a-z_]+)',\s*op: '([a-z_]+)'/g)) found.push({ type: m[1]!, op: m[2]!, file });
  }
  return found;
}

/** Object literals `{ type: 'x', key: …` (key other than op) in the server's code: events without `op`, and other things. */
function typeLiteralsWithoutOp(): Array<{ type: string; key: string; file: string }> {
  const found: Array<{ type: string; key: string; file: string }> = [];
  for (const { file, text } of sources(srcDir)) {
    for (const m of text.matchAll(/\{\s*type: '([a-z_]+)',\s*(?!op:)([a-z_]+):/g)) found.push({ type: m[1]!, key: m[2]!, file });
  }
  return found;
}

// `{ type: …, key: … }` literals of the server that are not events (group-deactivation objections, message send requests).
const NOT_EVENTS = new Set(['subgroup supergroup_ids', 'channel channel_id', 'user_group group_id', 'realm settings', 'stream stream_id', 'private user_ids', 'private to', 'direct user_ids']);
// Events that are delivered but never stored: heartbeats are made by the long-poll itself, typing is
// ephemeral. Both are checked as delivered, against the spec, in test/api/event-queues/ and test/api/typing/ (responses are
// validated in tests).
const NEVER_STORED = new Set(['heartbeat/undefined']);

describe('event schemas in the spec', () => {
  it('every schema file of components/schemas/events is reachable from GET /events', () => {
    const reachable = reachableSchemas(spec.paths['/events'].get.responses['200']);
    const files = readdirSync(eventsDir).filter((f) => f.endsWith('.yaml')).map((f) => f.replace(/\.yaml$/, ''));
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((name) => !reachable.has(name))).toEqual([]);
  });

  it('every leaf event schema is a branch of the Event union, and its example matches it', () => {
    expect(EVENT_SCHEMAS.size).toBeGreaterThan(0);
    for (const name of EVENT_SCHEMAS.keys()) {
      const { id, ...payload } = spec.components.schemas[name].example;
      expect(eventSchemaNameFor(payload), name).toBe(name);
      expect(checkStoredEvent(payload, id).problem, name).toBeNull();
    }
  });

  it('each type/op has exactly one schema', () => {
    const keys = [...EVENT_SCHEMAS.values()].flatMap((s) => (s.ops ?? ['']).map((op) => `${s.type}/${op}/${s.messageType ?? ''}`));
    expect(keys.length).toBe(new Set(keys).size);
  });

  it('every type/op the server code emits has a schema', () => {
    const emitted = emittedTypeOps();
    expect(emitted.length).toBeGreaterThan(10);
    const missing = emitted.filter(({ type, op }) => eventSchemaNameFor({ type, op, message_type: 'direct' }) === null);
    expect(missing).toEqual([]);
    const others = typeLiteralsWithoutOp().filter(({ type, key }) => !NOT_EVENTS.has(`${type} ${key}`));
    expect(others.filter(({ type }) => eventSchemaNameFor({ type }) === null)).toEqual([]);
  });
});

describe('stored events, after a representative run of API calls', () => {
  const env = useTestServer();

  /** Fails the run on an error answer. */
  async function ok<T extends { error?: unknown; response: Response }>(call: Promise<T>, what: string): Promise<T> {
    const res = await call;
    if (res.error !== undefined || !res.response.ok) throw new Error(`${what}: ${res.response.status} ${JSON.stringify(res.error)}`);
    return res;
  }
  const as = (p: Person) => env.client(p);

  async function representativeRun(): Promise<void> {
    const db = env.running.deps.db;
    const sys = await systemGroupIds(env);

    // Users: creation, name, role, custom profile fields, e-mail, deactivation and reactivation.
    const user = await createUser(env, { label: 'ev-user', fullName: 'Event User' });
    const userPath = { params: { path: { user_id: user.id } } };
    await ok(as('iago').PATCH('/users/{user_id}', { ...userPath, body: { full_name: 'Event User Renamed' } }), 'rename user');
    await ok(as('desdemona').PATCH('/users/{user_id}', { ...userPath, body: { role: 300 } }), 'change role');
    const field = await ok(as('iago').POST('/realm/profile_fields', { body: { name: fresh('Event field'), field_type: 1, hint: '' } }), 'create field');
    const fieldId = field.data!.id;
    await ok(as('iago').PATCH('/users/{user_id}', { ...userPath, body: { profile_data: [{ id: fieldId, value: 'Bartender' }] } }), 'set profile field');
    await ok(as('iago').PATCH('/users/{user_id}', { ...userPath, body: { profile_data: [{ id: fieldId, value: null }] } }), 'clear profile field');
    await db.user.update({ where: { id: env.users.desdemona.id }, data: { canChangeUserEmails: true } });
    await env.running.deps.listener.barrier();
    await ok(as('desdemona').PATCH('/users/{user_id}', { ...userPath, body: { new_email: uniqueEmail('ev-renamed') } }), 'change e-mail');
    await ok(as('iago').DELETE('/users/{user_id}', userPath), 'deactivate user');
    await ok(as('iago').POST('/users/{user_id}/reactivate', userPath), 'reactivate user');

    // Organization settings: plain properties and a group setting.
    await ok(as('desdemona').PATCH('/realm', { body: { name: fresh('Event realm'), description: 'Events **everywhere**', invite_required: true } }), 'update realm');
    await ok(as('desdemona').PATCH('/realm', { body: { can_create_groups: { new: sys['role:administrators'] } } }), 'realm group setting');
    await ok(as('desdemona').PATCH('/realm', { body: { can_create_groups: { new: sys['role:members'] } } }), 'realm group setting back');
    await ok(as('desdemona').PATCH('/realm', { body: { topics_policy: 'disable_empty_topic', waiting_period_threshold: 1, message_retention_days: 30 } }), 'realm settings');
    await ok(as('desdemona').PATCH('/realm', { body: { topics_policy: 'allow_empty_topic', waiting_period_threshold: 0, message_retention_days: 'unlimited' } }), 'realm settings back');
    await ok(as('iago').PATCH('/realm/user_settings_defaults', { body: { enter_sends: true, resolved_topic_notice_auto_read_policy: 'never' } }), 'new users\' defaults');
    await ok(as('iago').PATCH('/realm/user_settings_defaults', { body: { enter_sends: false, resolved_topic_notice_auto_read_policy: 'except_followed' } }), 'new users\' defaults back');

    // User groups: creation, update, members, subgroups, deactivation and reactivation.
    const group = await createGroup(env, 'hamlet', { members: [env.users.hamlet.id] });
    const sub = await createGroup(env, 'hamlet');
    const groupPath = { params: { path: { user_group_id: group } } };
    await ok(as('hamlet').PATCH('/user_groups/{user_group_id}', { ...groupPath, body: { name: fresh('Event group'), description: 'changed' } }), 'update group');
    await ok(as('hamlet').PATCH('/user_groups/{user_group_id}', { ...groupPath, body: { can_mention_group: { new: sys['role:members'] } } }), 'group setting');
    await ok(as('hamlet').POST('/user_groups/{user_group_id}/members', { ...groupPath, body: { add: [env.users.othello.id] } }), 'add members');
    await ok(as('hamlet').POST('/user_groups/{user_group_id}/members', { ...groupPath, body: { delete: [env.users.othello.id] } }), 'remove members');
    await ok(as('hamlet').POST('/user_groups/{user_group_id}/subgroups', { ...groupPath, body: { add: [sub] } }), 'add subgroups');
    await ok(as('hamlet').POST('/user_groups/{user_group_id}/subgroups', { ...groupPath, body: { delete: [sub] } }), 'remove subgroups');
    await ok(as('hamlet').POST('/user_groups/{user_group_id}/deactivate', groupPath), 'deactivate group');
    await ok(as('hamlet').PATCH('/user_groups/{user_group_id}', { ...groupPath, body: { deactivated: false } }), 'reactivate group');

    // Channels: creation (public and private), subscriptions, every kind of update, unsubscribing,
    // archiving (also as the moderation-request channel) and unarchiving.
    const pub = await createChannel(env, 'iago', {}, []);
    const priv = await createChannel(env, 'iago', { invite_only: true });
    const pubName = fresh('Event channel');
    const chanPath = (id: number) => ({ params: { path: { stream_id: id } } });
    await ok(as('iago').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: pub.name }, { name: priv.name }], principals: [env.users.hamlet.id, env.users.polonius.id] } }), 'subscribe others');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { description: 'A *described* channel', new_name: pubName } }), 'describe and rename');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { is_default_stream: true } }), 'make default');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { is_default_stream: false } }), 'no longer default');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { topics_policy: 'disable_empty_topic' } }), 'topics policy');
    await ok(as('desdemona').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { message_retention_days: 30 } }), 'retention');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { can_send_message_group: { new: sys['role:administrators'] } } }), 'posting permission');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { can_remove_subscribers_group: { new: { direct_members: [env.users.iago.id], direct_subgroups: [] } } } }), 'anonymous group setting');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { is_private: true } }), 'make private');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { is_private: false } }), 'make public');
    await ok(as('hamlet').DELETE('/users/me/subscriptions', { body: { subscriptions: [priv.name] } }), 'leave private channel');
    await ok(as('iago').DELETE('/users/me/subscriptions', { body: { subscriptions: [pubName], principals: [env.users.polonius.id] } }), 'unsubscribe another');
    await db.realm.update({ where: { id: env.realmId }, data: { moderationRequestChannelId: priv.id } });
    await ok(as('iago').DELETE('/streams/{stream_id}', chanPath(priv.id)), 'archive moderation channel');
    await ok(as('iago').DELETE('/streams/{stream_id}', chanPath(pub.id)), 'archive');
    await ok(as('iago').PATCH('/streams/{stream_id}', { ...chanPath(pub.id), body: { is_archived: false } }), 'unarchive');

    // Messages: a channel message and a direct message.
    await ok(as('iago').POST('/messages', { body: { type: 'stream', to: pubName, topic: 'events', content: 'hello @**all**' } }), 'send to channel');
    const direct = await ok(as('iago').POST('/messages', { body: { type: 'direct', to: JSON.stringify([env.users.hamlet.id]), content: 'hello' } }), 'send direct');
    // Reactions: one added and removed (reaction add, remove).
    const reacted = { params: { path: { message_id: direct.data!.id } } };
    await ok(as('hamlet').POST('/messages/{message_id}/reactions', { ...reacted, body: { emoji_name: 'octopus' } }), 'add reaction');
    await ok(as('hamlet').DELETE('/messages/{message_id}/reactions', { ...reacted, body: { emoji_name: 'octopus' } }), 'remove reaction');
    // Editing and moving (update_message), and the history it leaves.
    await ok(as('iago').PATCH('/messages/{message_id}', { ...reacted, body: { content: 'hello again' } }), 'edit content');
    const moved = await ok(as('iago').POST('/messages', { body: { type: 'stream', to: pubName, topic: 'to move', content: 'moving' } }), 'send to move');
    await ok(as('iago').PATCH('/messages/{message_id}', { params: { path: { message_id: moved.data!.id } }, body: { topic: 'moved', propagate_mode: 'change_all' } }), 'move topic');
    await ok(as('hamlet').GET('/messages/{message_id}/history', { params: { path: { message_id: moved.data!.id } } }), 'edit history');
    // Deletion: one message, and a topic (delete_message).
    const doomed = await ok(as('iago').POST('/messages', { body: { type: 'stream', to: pubName, topic: 'doomed', content: 'short-lived' } }), 'send to delete');
    await ok(as('iago').DELETE('/messages/{message_id}', { params: { path: { message_id: doomed.data!.id } } }), 'delete message');
    await ok(as('iago').POST('/messages', { body: { type: 'stream', to: pubName, topic: 'doomed topic', content: 'short-lived too' } }), 'send to a topic to delete');
    await ok(as('iago').POST('/streams/{stream_id}/delete_topic', { params: { path: { stream_id: pub.id } }, body: { topic_name: 'doomed topic' } }), 'delete topic');
    // Scheduled messages: schedule, edit, delete, and one delivered (its removal event).
    const inAnHour = Math.floor(Date.now() / 1000) + 3600;
    const scheduledId = (await ok(as('iago').POST('/scheduled_messages', { body: { type: 'stream', to: pub.id, topic: 't', content: 'later', scheduled_delivery_timestamp: inAnHour } }), 'schedule')).data!.scheduled_message_id;
    await ok(as('iago').PATCH('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: scheduledId } }, body: { content: 'later still' } }), 'edit scheduled');
    await ok(as('iago').DELETE('/scheduled_messages/{scheduled_message_id}', { params: { path: { scheduled_message_id: scheduledId } } }), 'delete scheduled');
    const soonId = (await ok(as('iago').POST('/scheduled_messages', { body: { type: 'stream', to: pub.id, topic: 't', content: 'soon', scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) + 1 } }), 'schedule soon')).data!.scheduled_message_id;
    await waitFor(() => db.scheduledMessage.findFirst({ where: { id: soonId, delivered: true } }), { what: 'the delivery of the scheduled message' });
    // Reminders: one set and deleted (add, remove).
    const directId = direct.data!.id;
    const reminderId = (await ok(as('hamlet').POST('/reminders', { body: { message_id: directId, scheduled_delivery_timestamp: inAnHour, note: 'n' } }), 'set reminder')).data!.reminder_id;
    await ok(as('hamlet').DELETE('/reminders/{reminder_id}', { params: { path: { reminder_id: reminderId } } }), 'delete reminder');

    // Settings: one display setting.
    await ok(as('hamlet').PATCH('/settings', { body: { twenty_four_hour_time: true, enable_sounds: false } }), 'change settings');
    // Consent to private data exports (realm_export_consent, to the administrators); an export request (realm_export).
    await ok(as('hamlet').PATCH('/settings', { body: { allow_private_data_export: true } }), 'consent to exports');
    await ok(as('iago').POST('/export/realm', { body: { export_type: 1 } }), 'request an export');

    // Drafts: create, edit, delete.
    const draftIds = (await ok(as('hamlet').POST('/drafts', { body: { drafts: [{ type: 'stream', to: [pub.id], topic: 'd', content: 'draft', timestamp: 1700000000 }] } }), 'create draft')).data!.ids;
    await ok(as('hamlet').PATCH('/drafts/{draft_id}', { params: { path: { draft_id: draftIds[0]! } }, body: { draft: { type: '', to: [], topic: '', content: 'edited', timestamp: 1700000001 } } }), 'edit draft');
    await ok(as('hamlet').DELETE('/drafts/{draft_id}', { params: { path: { draft_id: draftIds[0]! } } }), 'delete draft');

    // Saved snippets: create, edit, delete. Default channels and groups. Custom profile fields and values.
    const snippetId = (await ok(as('hamlet').POST('/saved_snippets', { body: { title: 'Greeting', content: 'Hello' } }), 'create snippet')).data!.saved_snippet_id;
    await ok(as('hamlet').PATCH('/saved_snippets/{saved_snippet_id}', { params: { path: { saved_snippet_id: snippetId } }, body: { title: 'Greeting!' } }), 'edit snippet');
    await ok(as('hamlet').DELETE('/saved_snippets/{saved_snippet_id}', { params: { path: { saved_snippet_id: snippetId } } }), 'delete snippet');
    await ok(as('iago').POST('/default_streams', { body: { stream_id: pub.id } }), 'add default channel');
    await ok(as('iago').DELETE('/default_streams', { body: { stream_id: pub.id } }), 'remove default channel');
    await ok(as('iago').POST('/default_stream_groups/create', { body: { group_name: fresh('Event group'), description: 'd', stream_names: [pubName] } }), 'create default channel group');
    await ok(as('iago').PATCH('/realm/profile_fields/{field_id}', { params: { path: { field_id: fieldId } }, body: { hint: 'A hint' } }), 'update field');
    await ok(as('hamlet').PATCH('/users/me/profile_data', { body: { data: [{ id: fieldId, value: 'Poet' }] } }), 'set own profile value');
    await ok(as('hamlet').DELETE('/users/me/profile_data', { body: { data: [fieldId] } }), 'clear own profile value');
    await ok(as('hamlet').POST('/user_topics', { body: { stream_id: pub.id, topic: 'events', visibility_policy: 3 } }), 'follow topic');
    await ok(as('hamlet').PATCH('/users/me/subscriptions/muted_topics', { body: { stream_id: pub.id, topic: 'events', op: 'add' } }), 'mute topic');
    await ok(as('hamlet').POST('/users/me/subscriptions/properties', { body: { subscription_data: [{ stream_id: pub.id, property: 'is_muted', value: false }] } }), 'subscription settings');
    // Muted users and alert words.
    const cordelia = { params: { path: { muted_user_id: env.users.cordelia.id } } };
    await ok(as('hamlet').POST('/users/me/muted_users/{muted_user_id}', cordelia), 'mute user');
    await ok(as('hamlet').DELETE('/users/me/muted_users/{muted_user_id}', cordelia), 'unmute user');
    await ok(as('hamlet').POST('/users/me/alert_words', { body: { alert_words: ['events'] } }), 'add alert words');
    // User status: the user's own, and an administrator's for them.
    await ok(as('hamlet').POST('/users/me/status', { body: { status_text: 'testing events', emoji_name: 'octopus' } }), 'set status');
    await ok(as('iago').POST('/users/{user_id}/status', { params: { path: { user_id: env.users.hamlet.id } }, body: { status_text: '', emoji_name: '' } }), 'clear status for user');

    // Uploaded files: an upload (attachment add), a message linking it (update), its deletion (remove).
    const upload = await postUpload(env, 'hamlet', [{ name: 'file', filename: 'event.txt', contentType: 'text/plain', data: 'events' }]);
    if (upload.status !== 200) throw new Error(`upload: ${upload.status} ${JSON.stringify(upload.body)}`);
    await ok(as('hamlet').POST('/messages', { body: { type: 'direct', to: JSON.stringify([env.users.iago.id]), content: `[event.txt](${upload.body.url})` } }), 'send with a file');
    const attachmentId = (await ok(as('hamlet').GET('/attachments'), 'list attachments')).data!.attachments[0]!.id;
    await ok(as('hamlet').DELETE('/attachments/{attachment_id}', { params: { path: { attachment_id: attachmentId } } }), 'delete attachment');

    // Custom emoji (realm_emoji): added, then deactivated.
    const { body: emojiBody, contentType: emojiType } = multipart([{ name: 'file', filename: 'e.png', contentType: 'image/png', data: await pngImage(8, 8) }]);
    const emoji = await env.raw('/realm/emoji/event_emoji', { method: 'POST', body: emojiBody, headers: { 'Content-Type': emojiType }, as: 'hamlet' });
    if (emoji.status !== 200) throw new Error(`emoji: ${emoji.status} ${JSON.stringify(emoji.body)}`);
    await ok(as('hamlet').DELETE('/realm/emoji/{emoji_name}', { params: { path: { emoji_name: 'event_emoji' } } }), 'deactivate emoji');

    // Linkifiers (realm_linkifiers) and code playgrounds (realm_playgrounds): added, changed, removed.
    const linkifierId = (await ok(as('iago').POST('/realm/filters', { body: { pattern: '#(?P<id>[0-9]+)', url_template: 'https://example.com/{id}' } }), 'add linkifier')).data!.id;
    await ok(as('iago').PATCH('/realm/filters/{filter_id}', { params: { path: { filter_id: linkifierId } }, body: { pattern: 'T(?P<id>[0-9]+)', url_template: 'https://example.com/{id}' } }), 'update linkifier');
    await ok(as('iago').DELETE('/realm/filters/{filter_id}', { params: { path: { filter_id: linkifierId } } }), 'remove linkifier');
    const playgroundId = (await ok(as('iago').POST('/realm/playgrounds', { body: { name: 'Python', pygments_language: 'Python', url_template: 'https://python.example.com?code={code}' } }), 'add playground')).data!.id;
    await ok(as('iago').DELETE('/realm/playgrounds/{playground_id}', { params: { path: { playground_id: playgroundId } } }), 'remove playground');

    // Bots (realm_bot add, update, delete): created, renamed, given to another member, key regenerated,
    // deactivated and reactivated.
    const botId = (await ok(as('hamlet').POST('/bots', { body: { full_name: fresh('Event Bot'), short_name: `eventbot${Date.now()}` } }), 'create bot')).data!.user_id;
    const botPath = { params: { path: { bot_id: botId } } };
    await ok(as('hamlet').PATCH('/bots/{bot_id}', { ...botPath, body: { full_name: fresh('Event Bot Renamed') } }), 'rename bot');
    await ok(as('hamlet').PATCH('/bots/{bot_id}', { ...botPath, body: { bot_owner_id: env.users.othello.id } }), 'new bot owner');
    await ok(as('othello').POST('/bots/{bot_id}/api_key/regenerate', botPath), 'regenerate bot key');
    await ok(as('othello').DELETE('/bots/{bot_id}', botPath), 'deactivate bot');
    await ok(as('othello').POST('/users/{user_id}/reactivate', { params: { path: { user_id: botId } } }), 'reactivate bot');

    // Read state: mark all read, then unread again.
    await ok(as('hamlet').POST('/mark_all_as_read', {}), 'mark all as read');
    await ok(as('hamlet').POST('/messages/flags', { body: { messages: [directId], op: 'remove', flag: 'read' } }), 'mark unread');

    // Presence: a first report (announced), written at once rather than with the next batch.
    await ok(as('hamlet').POST('/users/me/presence', { body: { status: 'active' } }), 'report presence');
    await env.running.deps.presence.flush();
  }

  it('every row of the event table matches the spec, and every emitted type/op occurs', async () => {
    await representativeRun();
    const rows = await env.running.deps.db.event.findMany({ orderBy: { id: 'asc' } });
    const checks = rows.map((r) => ({ id: r.id, payload: r.payload, ...checkStoredEvent(r.payload, Number(r.id)) }));

    // Every row matches, apart from the known divergences.
    const failures = checks.filter((c) => c.problem !== null && KNOWN_EVENT_DIVERGENCES[c.kind] === undefined);
    expect(failures.map((c) => `event ${c.id} (${c.kind}) ${c.problem}: ${JSON.stringify(c.payload)}`)).toEqual([]);

    // Every known divergence occurred, and still diverges (once fixed, unlist it).
    for (const kind of Object.keys(KNOWN_EVENT_DIVERGENCES)) {
      const ofKind = checks.filter((c) => c.kind === kind);
      expect(ofKind.length, `no ${kind} event in the run`).toBeGreaterThan(0);
      expect(ofKind.some((c) => c.problem !== null), `${kind} now matches the spec: remove it from KNOWN_EVENT_DIVERGENCES`).toBe(true);
    }

    // The run exercised every type/op literal of the server code.
    const seen = new Set(checks.map((c) => `${(c.payload as { type?: string }).type}/${(c.payload as { op?: string }).op}`));
    const emitted = [...new Set(emittedTypeOps().map(({ type, op }) => `${type}/${op}`))];
    expect(emitted.filter((k) => !seen.has(k))).toEqual([]);
    const withoutOp = [
      ...new Set(
        typeLiteralsWithoutOp()
          .filter(({ type, key }) => !NOT_EVENTS.has(`${type} ${key}`))
          .map(({ type }) => `${type}/undefined`)
          .filter((k) => !NEVER_STORED.has(k)),
      ),
    ];
    expect(withoutOp.filter((k) => !seen.has(k))).toEqual([]);
  });
});
