// Small exports in Zulip's layout (zerver/lib/export.py), built by tests: a minimal organization shaped
// like Zulip's real exports, and tarballs with hostile entries.
import { createWriteStream, mkdtempSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { pack as tarPack } from 'tar-stream';
import sharp from 'sharp';

export interface TarEntry {
  name: string;
  body?: string | Buffer;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device';
  linkname?: string;
}

/** The temporary folders of the archives written so far (removeTestExports removes them). */
const folders = new Set<string>();

/** Removes every archive writeTarGz wrote (a test file's afterAll). */
export async function removeTestExports(): Promise<void> {
  const written = [...folders];
  folders.clear();
  await Promise.all(written.map((dir) => rm(dir, { recursive: true, force: true })));
}

/**
 * Writes the entries, as given (hostile names included), into a new .tar.gz and returns its path: in a
 * temporary folder of its own, removed by removeTestExports (call it in the file's afterAll).
 */
export async function writeTarGz(entries: TarEntry[]): Promise<string> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-test-export-'));
  folders.add(dir);
  const file = path.join(dir, 'export.tar.gz');
  const pack = tarPack();
  const done = pipeline(pack, createGzip(), createWriteStream(file));
  for (const e of entries) {
    const body = e.body === undefined ? undefined : Buffer.isBuffer(e.body) ? e.body : Buffer.from(e.body);
    await new Promise<void>((resolve, reject) => {
      const header = { name: e.name, type: e.type ?? 'file', ...(e.linkname ? { linkname: e.linkname } : {}), ...(body && (e.type ?? 'file') === 'file' ? { size: body.length } : { size: 0 }) };
      const cb = (error?: Error | null) => (error ? reject(error) : resolve());
      pack.entry(header, body && (e.type ?? 'file') === 'file' ? body : Buffer.alloc(0), cb);
    });
  }
  pack.finalize();
  await done;
  return file;
}

/** The export's files as tar entries under Zulip's top-level folder. */
export function exportEntries(files: Record<string, unknown>, folder = 'zulip-export-test'): TarEntry[] {
  return Object.entries(files).map(([name, value]) => ({
    name: `${folder}/${name}`,
    body: Buffer.isBuffer(value) ? value : typeof value === 'string' ? value : JSON.stringify(value, null, 2),
  }));
}

export const tinyPng = () => sharp({ create: { width: 8, height: 8, channels: 4, background: { r: 200, g: 40, b: 40, alpha: 1 } } }).png().toBuffer();

const T0 = 1_700_000_000; // Zulip writes dates as float UNIX seconds

/**
 * A minimal organization in Zulip's export layout (old realm id 2): iago (owner) 10, hamlet (member)
 * 11, polonius (guest) 12, a bot of hamlet's 13, a mirror dummy 14, and Zulip's notification bot
 * (cross-realm, id 1); channels Denmark (public, 1) and secret (private, 2, whose senders are a named
 * group); a group DM; messages with flags, an edit history, a mention, a custom emoji reaction and a
 * linked file.
 */
export async function zulipFixture(): Promise<Record<string, unknown>> {
  const png = await tinyPng();
  const settings = { twenty_four_hour_time: true, color_scheme: 2, emojiset: 'text', enter_sends: true, default_language: 'de' };
  const user = (id: number, name: string, role: number, extra: Record<string, unknown> = {}) => ({
    id,
    email: `${name}@zulip.example`,
    delivery_email: `${name}@zulip.example`,
    full_name: name[0]!.toUpperCase() + name.slice(1),
    role,
    is_active: true,
    is_bot: false,
    bot_type: null,
    bot_owner: null,
    is_mirror_dummy: false,
    date_joined: T0,
    last_login: T0,
    timezone: 'Europe/Copenhagen',
    avatar_source: 'G',
    avatar_version: 1,
    realm: 2,
    recipient: 100 + id,
    default_sending_stream: null,
    default_events_register_stream: null,
    default_all_public_streams: false,
    ...settings,
    ...extra,
  });
  const systemGroups = ['role:internet', 'role:everyone', 'role:members', 'role:fullmembers', 'role:moderators', 'role:administrators', 'role:owners', 'role:nobody'];
  const named = (id: number, name: string, system: boolean, extra: Record<string, unknown> = {}) => ({
    usergroup_ptr: id,
    name,
    description: system ? '' : 'Characters of Hamlet',
    is_system_group: system,
    realm_for_sharding: 2,
    deactivated: false,
    creator: system ? null : 11,
    date_created: T0,
    can_add_members_group: 47,
    can_join_group: 47,
    can_leave_group: 47,
    can_manage_group: 47,
    can_mention_group: 41,
    can_remove_members_group: 47,
    ...extra,
  });
  const stream = (id: number, name: string, inviteOnly: boolean, extra: Record<string, unknown> = {}) => ({
    id,
    name,
    description: `About ${name}`,
    rendered_description: `<p>About ${name}</p>`,
    invite_only: inviteOnly,
    is_web_public: false,
    history_public_to_subscribers: !inviteOnly,
    deactivated: false,
    date_created: T0,
    creator: 10,
    realm: 2,
    recipient: 200 + id - 1,
    message_retention_days: null,
    can_add_subscribers_group: 47,
    can_administer_channel_group: 45,
    can_delete_any_message_group: 47,
    can_delete_own_message_group: 47,
    can_move_messages_out_of_channel_group: 47,
    can_move_messages_within_channel_group: 47,
    can_remove_subscribers_group: 45,
    can_resolve_topics_group: 47,
    can_send_message_group: 41,
    can_subscribe_group: 47,
    ...extra,
  });
  const sub = (id: number, userProfile: number, recipient: number, extra: Record<string, unknown> = {}) => ({
    id, user_profile: userProfile, recipient, active: true, is_user_active: true, color: '#76ce90', is_muted: false, pin_to_top: false,
    desktop_notifications: null, audible_notifications: null, push_notifications: null, email_notifications: null, wildcard_mentions_notify: null, ...extra,
  });
  const message = (id: number, sender: number, recipient: number, content: string, rendered: string | null, extra: Record<string, unknown> = {}) => ({
    id, sender, recipient, realm: 2, subject: '', content, rendered_content: rendered, rendered_content_version: 1, date_sent: T0 + id, last_edit_time: null,
    edit_history: null, sending_client: 1, has_attachment: false, has_image: false, has_link: false, type: 1, ...extra,
  });
  return {
    'realm.json': {
      zerver_realm: [{ id: 2, name: 'Zulip Fixture', string_id: 'fixture', description: 'A fixture', invite_required: false, waiting_period_threshold: 0, default_language: 'en', allow_message_editing: true, message_content_edit_limit_seconds: 3600, date_created: T0, deactivated: false, can_create_groups: 42, can_create_public_channel_group: 42, can_add_custom_emoji_group: 45 }],
      zerver_client: [{ id: 1, name: 'website' }],
      zerver_userprofile: [
        user(10, 'iago', 100),
        user(11, 'hamlet', 400),
        user(12, 'polonius', 600),
        user(13, 'helper-bot', 400, { is_bot: true, bot_type: 1, bot_owner: 11, full_name: 'Helper', default_sending_stream: 1 }),
      ],
      zerver_userprofile_mirrordummy: [user(14, 'ghost', 400, { is_mirror_dummy: true, is_active: false })],
      zerver_userprofile_crossrealm: [{ id: 1, email: 'notification-bot@zulip.com', recipient_id: 99 }],
      zerver_usergroup: [...systemGroups.map((_n, i) => ({ id: 40 + i, realm: 2 })), { id: 50, realm: 2 }, { id: 51, realm: 2 }],
      zerver_namedusergroup: [...systemGroups.map((n, i) => named(40 + i, n, true)), named(50, 'hamletcharacters', false)],
      zerver_usergroupmembership: [
        { id: 1, user_group: 46, user_profile: 10 },
        { id: 2, user_group: 42, user_profile: 11 },
        { id: 3, user_group: 50, user_profile: 11 },
        { id: 4, user_group: 50, user_profile: 12 },
        { id: 5, user_group: 51, user_profile: 10 },
      ],
      zerver_groupgroupmembership: [{ id: 1, supergroup: 51, subgroup: 50 }],
      zerver_recipient: [
        ...[10, 11, 12, 13, 14].map((id) => ({ id: 100 + id, type: 1, type_id: id })),
        { id: 99, type: 1, type_id: 1 },
        { id: 200, type: 2, type_id: 1 },
        { id: 201, type: 2, type_id: 2 },
        { id: 300, type: 3, type_id: 1 },
      ],
      zerver_stream: [stream(1, 'Denmark', false), stream(2, 'secret', true, { can_send_message_group: 50, can_administer_channel_group: 51 })],
      zerver_huddle: [{ id: 1, huddle_hash: 'x', group_size: 3, recipient: 300 }],
      zerver_subscription: [
        ...[10, 11, 12, 13, 14].map((id) => sub(id, id, 100 + id)),
        sub(20, 10, 200),
        sub(21, 11, 200, { color: '#ff0000', pin_to_top: true, desktop_notifications: true }),
        sub(22, 12, 200),
        sub(23, 11, 201, { is_muted: true }),
        sub(24, 10, 201),
        sub(30, 10, 300),
        sub(31, 11, 300),
        sub(32, 12, 300),
      ],
      zerver_defaultstream: [{ id: 1, realm: 2, stream: 1 }],
      zerver_realmemoji: [{ id: 1, realm: 2, name: 'partyparrot', author: 11, file_name: '1.png', is_animated: false, deactivated: false }],
      zerver_reaction: [
        { id: 1, message: 1000, user_profile: 10, emoji_name: '+1', emoji_code: '1f44d', reaction_type: 'unicode_emoji' },
        { id: 2, message: 1000, user_profile: 11, emoji_name: 'partyparrot', emoji_code: '1', reaction_type: 'realm_emoji' },
      ],
      zerver_usertopic: [{ id: 1, user_profile: 11, stream: 1, recipient: 200, topic_name: 'Greetings', last_updated: T0, visibility_policy: 3 }],
      zerver_muteduser: [{ id: 1, user_profile: 11, muted_user: 12, date_muted: T0 }],
      zerver_alertword: [{ id: 1, user_profile: 11, realm: 2, word: 'Elsinore' }],
      zerver_realmfilter: [{ id: 1, realm: 2, pattern: '#(?P<id>[0-9]+)', url_template: 'https://tracker.example/{id}', order: 0 }],
      zerver_customprofilefield: [{ id: 1, realm: 2, name: 'Pronouns', hint: '', field_type: 8, field_data: '', order: 0, display_in_profile_summary: false, required: false, editable_by_user: true }],
      zerver_customprofilefieldvalue: [{ id: 1, user_profile: 11, field: 1, value: 'he/him', rendered_value: null }],
    },
    'messages-000001.json': {
      zerver_message: [
        message(1000, 11, 200, 'Hello @**Iago|10**!', '<p>Hello <span class="user-mention" data-user-id="10">@Iago</span>!</p>', { subject: 'Greetings' }),
        message(1001, 10, 111, 'Hi hamlet, **privately**.', '<p>Hi hamlet, <strong>privately</strong>.</p>'),
        message(1002, 12, 300, 'A group message', '<p>A group message</p>'),
        message(1003, 1, 110, 'Welcome to Zulip Fixture', '<p>Welcome to Zulip Fixture</p>'),
        message(1004, 11, 201, 'To be, or not to be', '<p>To be, or not to be</p>', {
          subject: 'soliloquy',
          last_edit_time: T0 + 2000,
          edit_history: JSON.stringify([{ user_id: 11, timestamp: T0 + 2000, prev_content: 'To be', prev_rendered_content: '<p>To be</p>', prev_rendered_content_version: 1 }]),
        }),
        message(1005, 11, 200, 'See [notes.txt](/user_uploads/2/ab/xyz123/notes.txt) and *this*', null, { subject: 'Greetings', has_attachment: true }),
      ],
      zerver_usermessage: [
        { id: 1, message: 1000, user_profile: 11, flags_mask: 1 | 2 },
        { id: 2, message: 1000, user_profile: 10, flags_mask: 8 },
        { id: 3, message: 1000, user_profile: 12, flags_mask: 0 },
        { id: 4, message: 1001, user_profile: 10, flags_mask: 1 | 2048 },
        { id: 5, message: 1001, user_profile: 11, flags_mask: 2048 },
        { id: 6, message: 1002, user_profile: 10, flags_mask: 2048 },
        { id: 7, message: 1002, user_profile: 11, flags_mask: 2048 | 2 },
        { id: 8, message: 1002, user_profile: 12, flags_mask: 2048 | 1 },
        { id: 9, message: 1003, user_profile: 10, flags_mask: 2048 },
        { id: 10, message: 1004, user_profile: 11, flags_mask: 1 },
        { id: 11, message: 1004, user_profile: 10, flags_mask: 0 },
        { id: 12, message: 1005, user_profile: 11, flags_mask: 1 },
        { id: 13, message: 1005, user_profile: 10, flags_mask: 0 },
      ],
    },
    'attachment.json': {
      zerver_attachment: [{ id: 1, file_name: 'notes.txt', path_id: '2/ab/xyz123/notes.txt', owner: 11, realm: 2, create_time: T0, size: 13, is_realm_public: true, is_web_public: false, content_type: 'text/plain', messages: [1005], scheduled_messages: [] }],
    },
    'analytics.json': { analytics_realmcount: [], analytics_streamcount: [], analytics_usercount: [] },
    'uploads/records.json': [{ realm_id: 2, user_profile_id: 11, user_profile_email: 'hamlet@zulip.example', s3_path: '2/ab/xyz123/notes.txt', path: '2/ab/xyz123/notes.txt', size: 13, last_modified: T0, content_type: null }],
    'uploads/2/ab/xyz123/notes.txt': 'Act 1, scene 2',
    'emoji/records.json': [{ realm_id: 2, author: 11, path: '2/emoji/images/1.png', s3_path: '2/emoji/images/1.png', file_name: '1.png', name: 'partyparrot', deactivated: false }],
    'emoji/2/emoji/images/1.png': png,
    'avatars/records.json': [{ realm_id: 2, user_profile_id: 11, user_profile_email: 'hamlet@zulip.example', s3_path: '2/abcdef.original', path: '2/abcdef.original', size: png.length, last_modified: T0, content_type: null }],
    'avatars/2/abcdef.original': png,
    'realm_icons/records.json': [],
    // Zulip's import requires this file and compares it with its own migrations; Parley's ignores it.
    'migration_status.json': { migrations_by_app: { auth: ['[X] 0001_initial'], zerver: ['[X] 0001_squashed_0569 (545 squashed migrations)', '[X] 0570_example'] }, zulip_version: '11.2' },
  };
}
