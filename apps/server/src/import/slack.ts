// Slack workspace export (zip) → Zulip's export layout, as Zulip's Slack importer converts one
// (zerver/data_import/slack.py); the result is then imported by the Zulip-format importer.
//
// What is read from the archive (Slack's documented export format):
// - users.json: every member, bot and deactivated account. Roles: `is_owner`/`is_primary_owner` →
//   owner, `is_admin` → administrator, `is_restricted`/`is_ultra_restricted` → guest (guest wins, as in
//   Zulip); `deleted` → deactivated; `is_bot` (and Slackbot) → generic bot; `tz` → time zone
//   (America/New_York when missing or not a region/city name, Zulip's default). E-mail from
//   `profile.email`; a bot without one gets `<name>-bot@<domain>` (Slackbot `imported-slackbot-bot@`),
//   as in Zulip; a person without one gets a placeholder (Zulip asks Slack's API instead). Accounts
//   sharing an e-mail address become one user, as in Zulip.
// - channels.json (public) and groups.json (private: invite-only, history hidden from new
//   subscribers, as Zulip imports them): name, purpose → description, `is_archived` → archived,
//   `members` → subscribers; #general and #random become default channels, #general the
//   announcements channel.
// - mpims.json (group direct messages: a direct message group of the members) and dms.json (direct
//   messages between its two `members`).
// - <conversation>/<yyyy-mm-dd>.json: the messages, in the conversation's folder (channels and group
//   DMs by name, DMs by id). All days of all conversations are read day by day and sorted by `ts`, so
//   ids follow time. Join/leave/rename/pin notices, Slack "posts" and messages of user U00 are
//   skipped, as Zulip does; `me_message`, `bot_add` and `sh_room_created` become `/me` messages.
// - Threads (`thread_ts`), by Zulip's default (threads converted): each thread of a channel becomes
//   its own topic, named "<yyyy-mm-dd of the thread> <its first message>" cut to 60 characters with
//   "…", with " (2)", " (3)" … when names collide; all other channel messages go to the topic
//   "imported from Slack". `convertThreads: false` puts everything in that one topic.
// - Reactions: skin-tone variants merged (`clap::skin-tone-2` → clap), Slack's (iamcal's) names
//   looked up to their emoji code and named by Zulip's name for it; names Zulip cannot show are
//   dropped.
// - Files (`files`, or `file` in `file_share` messages): tombstoned, hidden and inaccessible ones are
//   skipped; files hosted by Slack whose bytes the archive carries (`__uploads/<file id>/<name>` or
//   `<conversation>/attachments/<file id>-<name>`, the layouts of slackdump and
//   slack-advanced-exporter) become uploads linked from the message; the others are linked at their
//   Slack URL (nothing is downloaded: no network is used).
// - Markup: see slack-markup.ts.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomInt } from 'node:crypto';
import { convertSlackMarkup, type MarkupContext } from './slack-markup.ts';
import { renderBlocksAndAttachments } from './slack-blocks.ts';
import { extractSlackZip, SlackImportError, type ZipLimits } from './slack-zip.ts';
import { pathFileName } from '../lib/uploads.ts';
import { emojiCodeForName, isUnicodeEmojiCode } from '../lib/emoji.ts';
import { importRealmFromDirectory, type ImportDeps, type ImportOptions, type ImportResult } from './zulip-import.ts';

export { SlackImportError } from './slack-zip.ts';

type Obj = Record<string, unknown>;

export interface SlackConvertOptions {
  /** Host name used for e-mail addresses the export does not give (bots, placeholders). */
  domain: string;
  /** The organization's name (realm.json's zerver_realm name and, slugged, its string_id). */
  name: string;
  /** Each Slack thread in its own topic (Zulip's default); false: all in "imported from Slack". */
  convertThreads?: boolean;
  limits?: ZipLimits;
  /** Messages per messages-NNNNNN.json file (Zulip writes 1000). */
  chunkSize?: number;
}

export interface SlackConversionSummary {
  users: number;
  channels: number;
  directMessageGroups: number;
  messages: number;
  reactions: number;
  uploads: number;
  /** Files linked at their Slack URL because the archive did not carry them. */
  filesLeftAsLinks: number;
}

const REALM_ID = 1;
const DEFAULT_TOPIC = 'imported from Slack';
const MAX_TOPIC_LENGTH = 60;
const DEFAULT_TIMEZONE = 'America/New_York';
const STREAM_COLORS = ['#76ce90', '#fae589', '#a6c7e5', '#e79ab5', '#bfd56f', '#f4ae55', '#b0a5fd', '#addfe5', '#f5ce6e', '#c2726a', '#94c849', '#bd86e5'];
// Zulip's clients of imported data; messages are sent by ZulipDataImport.
const DATA_IMPORT_CLIENTS: Array<[string, number]> = [['Internal', 1], ['website', 2], ['ZulipMobile', 3], ['ZulipElectron', 4], ['ZulipDataImport', 5]];
const SENDING_CLIENT = 5;
const RECIPIENT_PERSONAL = 1;
const RECIPIENT_STREAM = 2;
const RECIPIENT_GROUP = 3;
const ROLE_OWNER = 100;
const ROLE_ADMIN = 200;
const ROLE_MEMBER = 400;
const ROLE_GUEST = 600;
const FLAG_READ = 1;
const FLAG_MENTIONED = 8;
const FLAG_PRIVATE = 2048;
const SKIPPED_SUBTYPES = new Set(['pinned_item', 'unpinned_item', 'channel_join', 'channel_leave', 'channel_name']);
const ME_SUBTYPES = new Set(['bot_add', 'sh_room_created', 'me_message']);

// ---- reading JSON entries ------------------------------------------------------------------------

function readEntry(root: string, entry: string): unknown {
  const file = path.join(root, ...entry.split('/'));
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new SlackImportError(`zip entry "${entry}" cannot be read`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new SlackImportError(`zip entry "${entry}" is not valid JSON (${error instanceof Error ? error.message : String(error)}); nothing was imported`);
  }
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const strs = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** A JSON entry that must be a list of objects, each with a string `id` (users, channels …). */
function readList(root: string, entry: string, required: boolean): Obj[] {
  if (!existsSync(path.join(root, ...entry.split('/')))) {
    if (required) throw new SlackImportError(`the archive has no ${entry}: it is not a Slack export; nothing was imported`);
    return [];
  }
  const value = readEntry(root, entry);
  if (!Array.isArray(value)) throw new SlackImportError(`zip entry "${entry}" is not a JSON list; nothing was imported`);
  value.forEach((item, i) => {
    if (!isObj(item) || typeof item.id !== 'string') throw new SlackImportError(`zip entry "${entry}": item ${i} has no string "id"; nothing was imported`);
  });
  return value as Obj[];
}

// ---- names ---------------------------------------------------------------------------------------

function profileOf(user: Obj): Obj {
  return isObj(user.profile) ? user.profile : {};
}

/** Zulip's get_user_full_name: active users by real name, others by their Slack handle. */
function fullNameOf(user: Obj): string {
  const name = str(user.name) ?? str(user.id) ?? 'Slack user';
  if (user.deleted === false) return str(user.real_name) || name;
  return name;
}

/** Zulip's truncate_content, counting characters (code points) as Python does. */
function truncate(text: string, max: number, ellipsis = '…'): string {
  const chars = [...text];
  return chars.length > max ? chars.slice(0, max - ellipsis.length).join('') + ellipsis : text;
}

// ---- emoji ---------------------------------------------------------------------------------------

let slackEmoji: Map<string, string> | undefined;
let zulipNames: Map<string, string> | undefined;

function emojiTables(): { slack: Map<string, string>; zulip: Map<string, string> } {
  if (!slackEmoji || !zulipNames) {
    const slack = JSON.parse(readFileSync(new URL('./slack-emoji.json', import.meta.url), 'utf8')) as { codes: Record<string, string[]> };
    slackEmoji = new Map(Object.entries(slack.codes).flatMap(([code, names]) => names.map((n): [string, string] => [n, code])));
    const zulip = JSON.parse(readFileSync(new URL('../lib/zulip-emoji.json', import.meta.url), 'utf8')) as { codes: Record<string, string[]> };
    zulipNames = new Map(Object.entries(zulip.codes).map(([code, names]): [string, string] => [code, names[0] ?? code]));
  }
  return { slack: slackEmoji, zulip: zulipNames };
}

/** Slack reaction name → Zulip's (name, code) of that emoji, or undefined when Zulip cannot show it. */
export function zulipEmojiForSlackName(slackName: string): { name: string; code: string } | undefined {
  const { slack, zulip } = emojiTables();
  const code = slack.get(slackName) ?? emojiCodeForName(slackName);
  if (code === undefined || !isUnicodeEmojiCode(code)) return undefined;
  return { name: zulip.get(code) ?? slackName, code };
}

// ---- conversion ----------------------------------------------------------------------------------

interface Conversation {
  kind: 'channel' | 'mpim' | 'dm';
  folder: string;
  recipientId: number;
  /** For DMs: the two Slack member ids. */
  members?: [string, string];
}

class Converter {
  readonly users: Obj[] = [];
  readonly recipients: Obj[] = [];
  readonly subscriptions: Obj[] = [];
  readonly streams: Obj[] = [];
  readonly huddles: Obj[] = [];
  readonly defaultStreams: Obj[] = [];
  readonly reactions: Obj[] = [];
  readonly attachments: Obj[] = [];
  readonly uploadRecords: Obj[] = [];
  readonly conversations: Conversation[] = [];
  /** Slack user or bot id → Zulip user id. */
  readonly userIds = new Map<string, number>();
  readonly fullNames = new Map<string, string>();
  readonly emails = new Map<string, number>();
  readonly personalRecipient = new Map<number, number>();
  readonly subscribers = new Map<number, Set<number>>();
  /** Subscribers of a recipient in id order (cached; dropped when one is added). */
  readonly sortedSubscribers = new Map<number, number[]>();
  readonly channelNames = new Map<string, string>();
  readonly botEmails = new Map<string, number>();
  readonly threadTopics = new Map<string, string>();
  readonly topicCounts = new Map<string, number>();
  readonly fileEntries = new Map<string, string>();
  realm: Obj = {};
  nextUserId = 1;
  nextRecipientId = 1;
  nextSubscriptionId = 1;
  nextMessageId = 1;
  nextUserMessageId = 1;
  nextReactionId = 1;
  nextAttachmentId = 1;
  filesLeftAsLinks = 0;

  constructor(
    readonly root: string,
    readonly outDir: string,
    readonly options: SlackConvertOptions,
    readonly now: number,
  ) {}

  subscribe(recipientId: number, userId: number): void {
    const set = this.subscribers.get(recipientId) ?? new Set<number>();
    if (set.has(userId)) return;
    set.add(userId);
    this.subscribers.set(recipientId, set);
    this.sortedSubscribers.delete(recipientId);
    this.subscriptions.push({
      id: this.nextSubscriptionId++,
      user_profile: userId,
      recipient: recipientId,
      color: STREAM_COLORS[randomInt(STREAM_COLORS.length)],
      active: true,
      is_user_active: true,
      is_muted: false,
      pin_to_top: false,
      desktop_notifications: null,
      audible_notifications: null,
      push_notifications: null,
      email_notifications: null,
      wildcard_mentions_notify: null,
    });
  }

  botEmail(name: string): string {
    const base = `${name.replace(/Bot/g, '').replace(/ /g, '').toLowerCase() || 'slack'}-bot`;
    const count = (this.botEmails.get(base) ?? 0) + 1;
    this.botEmails.set(base, count);
    return count === 1 ? `${base}@${this.options.domain}` : `${base}-${count}@${this.options.domain}`;
  }

  /** Adds a user row (or, for an e-mail already taken, maps `slackId` onto that user) and returns its id. */
  addUser(slackId: string, row: { email: string; fullName: string; isActive: boolean; isBot: boolean; role: number; timezone: string; isMirrorDummy?: boolean }): number {
    const key = row.email.toLowerCase();
    const existing = this.emails.get(key);
    if (existing !== undefined) {
      this.userIds.set(slackId, existing);
      const merged = this.users.find((u) => u.id === existing);
      if (merged) this.fullNames.set(slackId, String(merged.full_name));
      return existing;
    }
    const id = this.nextUserId++;
    this.emails.set(key, id);
    this.userIds.set(slackId, id);
    this.fullNames.set(slackId, row.fullName);
    this.users.push({
      id,
      realm: REALM_ID,
      email: row.email,
      delivery_email: row.email,
      full_name: row.fullName,
      is_active: row.isActive,
      is_bot: row.isBot,
      bot_type: row.isBot ? 1 : null,
      bot_owner: null,
      role: row.role,
      timezone: row.timezone,
      avatar_source: 'G',
      avatar_version: 1,
      is_mirror_dummy: row.isMirrorDummy ?? false,
      date_joined: this.now,
      last_login: this.now,
      tos_version: null,
    });
    const recipientId = this.nextRecipientId++;
    this.recipients.push({ id: recipientId, type: RECIPIENT_PERSONAL, type_id: id });
    this.personalRecipient.set(id, recipientId);
    this.subscribe(recipientId, id);
    return id;
  }

  convertUsers(list: Obj[]): void {
    // The primary owner first, as Zulip does.
    const ordered = [...list.filter((u) => u.is_primary_owner === true), ...list.filter((u) => u.is_primary_owner !== true)];
    for (const user of ordered) {
      const slackId = str(user.id)!;
      const profile = profileOf(user);
      const fullName = fullNameOf(user);
      const isSlackbot = fullName.toLowerCase() === 'slackbot';
      const isBot = isSlackbot || user.is_bot === true;
      let email = str(profile.email);
      if (!email) {
        if (typeof profile.bot_id === 'string') email = this.botEmail(str(profile.real_name_normalized) ?? str(profile.first_name) ?? str(user.name) ?? slackId);
        else if (isSlackbot) email = `imported-slackbot-bot@${this.options.domain}`;
        else if (isBot) email = this.botEmail(str(user.name) ?? slackId);
        else email = `slack-${slackId.toLowerCase()}@${this.options.domain}`;
      }
      let role = ROLE_MEMBER;
      if (user.is_owner === true || user.is_primary_owner === true) role = ROLE_OWNER;
      else if (user.is_admin === true) role = ROLE_ADMIN;
      if (user.is_restricted === true || user.is_ultra_restricted === true) role = ROLE_GUEST;
      const tz = str(user.tz);
      this.addUser(slackId, {
        email,
        fullName,
        isActive: user.deleted !== true,
        isBot,
        role,
        timezone: tz && tz.includes('/') ? tz : DEFAULT_TIMEZONE,
      });
    }
  }

  /** A sender the users list does not have: an integration bot (by bot_id) or a user of another workspace. */
  placeholderUser(slackId: string, message: Obj): number {
    const known = this.userIds.get(slackId);
    if (known !== undefined) return known;
    const botProfile = isObj(message.bot_profile) ? message.bot_profile : {};
    const userProfile = isObj(message.user_profile) ? message.user_profile : {};
    if (message.subtype === 'bot_message' && typeof message.user !== 'string') {
      const name = str(botProfile.name) ?? str(message.username) ?? `Slack bot ${slackId}`;
      return this.addUser(slackId, { email: this.botEmail(name), fullName: name, isActive: botProfile.deleted !== true, isBot: true, role: ROLE_MEMBER, timezone: DEFAULT_TIMEZONE });
    }
    const name = str(userProfile.real_name) || str(userProfile.name) || slackId;
    return this.addUser(slackId, {
      email: `slack-${slackId.toLowerCase()}@${this.options.domain}`,
      fullName: name,
      isActive: false,
      isBot: false,
      role: ROLE_MEMBER,
      timezone: DEFAULT_TIMEZONE,
      isMirrorDummy: true,
    });
  }

  memberIds(members: string[]): number[] {
    return members.map((m) => this.userIds.get(m) ?? this.placeholderUser(m, {}));
  }

  convertChannels(list: Obj[], inviteOnly: boolean, entry: string): void {
    for (const channel of list) {
      const name = str(channel.name);
      if (!name) throw new SlackImportError(`zip entry "${entry}": channel ${String(channel.id)} has no name; nothing was imported`);
      const streamId = this.streams.length + 1;
      const recipientId = this.nextRecipientId++;
      const purpose = isObj(channel.purpose) ? (str(channel.purpose.value) ?? '') : '';
      const archived = channel.is_archived === true;
      this.streams.push({
        id: streamId,
        realm: REALM_ID,
        name,
        description: purpose.replace(/\n/g, ' '),
        invite_only: inviteOnly,
        history_public_to_subscribers: !inviteOnly,
        deactivated: archived,
        date_created: typeof channel.created === 'number' ? channel.created : Number(channel.created ?? this.now) || this.now,
        recipient: recipientId,
        stream_post_policy: 1,
        is_web_public: false,
      });
      this.recipients.push({ id: recipientId, type: RECIPIENT_STREAM, type_id: streamId });
      for (const userId of this.memberIds(strs(channel.members))) this.subscribe(recipientId, userId);
      this.channelNames.set(str(channel.id)!, name);
      this.conversations.push({ kind: 'channel', folder: name, recipientId });
      if ((name === 'general' || name === 'random') && !archived) this.defaultStreams.push({ id: this.defaultStreams.length + 1, realm: REALM_ID, stream: streamId });
      if (name === 'general') {
        const realm = (this.realm.zerver_realm as Obj[])[0]!;
        realm.new_stream_announcements_stream = streamId;
        realm.zulip_update_announcements_stream = streamId;
      }
    }
  }

  convertMpims(list: Obj[], entry: string): void {
    for (const mpim of list) {
      const name = str(mpim.name);
      if (!name) throw new SlackImportError(`zip entry "${entry}": group conversation ${String(mpim.id)} has no name; nothing was imported`);
      const members = [...new Set(this.memberIds(strs(mpim.members)))];
      const huddleId = this.huddles.length + 1;
      const recipientId = this.nextRecipientId++;
      this.huddles.push({ id: huddleId, group_size: members.length, recipient: recipientId });
      this.recipients.push({ id: recipientId, type: RECIPIENT_GROUP, type_id: huddleId });
      for (const userId of members) this.subscribe(recipientId, userId);
      this.conversations.push({ kind: 'mpim', folder: name, recipientId });
    }
  }

  convertDms(list: Obj[], entry: string): void {
    for (const dm of list) {
      const members = strs(dm.members);
      if (members.length < 1 || members.length > 2) throw new SlackImportError(`zip entry "${entry}": direct conversation ${String(dm.id)} does not have two members; nothing was imported`);
      this.memberIds(members);
      this.conversations.push({ kind: 'dm', folder: str(dm.id)!, recipientId: 0, members: [members[0]!, members[1] ?? members[0]!] });
    }
  }

  /** The files of the archive's `__uploads/<id>/<name>` and `<dir>/attachments/<id>-<name>` entries, by file id. */
  indexFiles(entries: string[]): void {
    for (const entry of entries) {
      const parts = entry.split('/');
      if (parts.length !== 3) continue;
      if (parts[0] === '__uploads') this.fileEntries.set(parts[1]!, entry);
      else if (parts[1] === 'attachments') {
        const dash = parts[2]!.indexOf('-');
        if (dash > 0) this.fileEntries.set(parts[2]!.slice(0, dash), entry);
      }
    }
  }

  threadTopic(message: Obj, content: string, senderSlackId: string): string {
    const threadTs = Number(message.thread_ts);
    const date = new Date(threadTs * 1000);
    const subtype = str(message.subtype);
    // Zulip's key: the thread's time and the user who started it.
    let parent: string | undefined;
    if (subtype === 'thread_broadcast' && isObj(message.root)) parent = str(message.root.user) ?? str(message.root.bot_id);
    else if (message.thread_ts === message.ts) parent = senderSlackId;
    else parent = str(message.parent_user_id) ?? str(message.bot_id);
    const key = `${String(message.thread_ts)}-${parent ?? ''}`;
    const known = this.threadTopics.get(key);
    if (known !== undefined) return known;
    const day = Number.isFinite(threadTs) ? date.toISOString().slice(0, 10) : '';
    const base = `${day} ${content.replace(/\s+/g, ' ')}`.trim();
    const plain = truncate(base, MAX_TOPIC_LENGTH);
    const collision = this.topicCounts.get(plain) ?? 0;
    this.topicCounts.set(plain, collision + 1);
    const suffix = collision > 0 ? ` (${collision + 1})` : '';
    const topic = truncate(base, MAX_TOPIC_LENGTH - suffix.length) + suffix;
    this.threadTopics.set(key, topic);
    return topic;
  }

  fileLinks(message: Obj, messageId: number, senderId: number): { text: string; hasAttachment: boolean; hasImage: boolean; hasLink: boolean } {
    let files = Array.isArray(message.files) ? message.files.filter(isObj) : [];
    if (message.subtype === 'file_share' && isObj(message.file)) files = [message.file];
    const links: string[] = [];
    let hasAttachment = false;
    let hasImage = false;
    let hasLink = false;
    for (const file of files) {
      if (file.mode === 'tombstone' || file.mode === 'hidden_by_limit') continue;
      if (file.file_access === 'access_denied' || file.file_access === 'file_not_found') continue;
      const url = str(file.url_private);
      if (!url) continue;
      const title = str(file.title) || str(file.name) || 'file';
      const host = URL.canParse(url) ? new URL(url).hostname : '';
      const entry = typeof file.id === 'string' ? this.fileEntries.get(file.id) : undefined;
      if (host === 'files.slack.com' && entry) {
        const name = str(file.name) || path.posix.basename(entry);
        const pathId = [String(REALM_ID), randomInt(256).toString(16), randomBytes(18).toString('base64url'), pathFileName(name)].join('/');
        const target = path.join(this.outDir, 'uploads', ...pathId.split('/'));
        mkdirSync(path.dirname(target), { recursive: true });
        copyFileSync(path.join(this.root, ...entry.split('/')), target);
        const contentType = str(file.mimetype) ?? null;
        const size = typeof file.size === 'number' ? file.size : 0;
        const created = typeof file.created === 'number' ? file.created : this.now;
        this.uploadRecords.push({ path: pathId, s3_path: pathId, realm_id: REALM_ID, user_profile_id: senderId, content_type: contentType, last_modified: typeof file.timestamp === 'number' ? file.timestamp : created, size });
        this.attachments.push({ id: this.nextAttachmentId++, realm: REALM_ID, owner: senderId, messages: [messageId], path_id: pathId, file_name: name, size, create_time: created, is_realm_public: true, content_type: contentType });
        links.push(`[${title}](/user_uploads/${pathId})`);
        hasAttachment = true;
        hasLink = true;
        hasImage ||= (contentType ?? '').includes('image');
      } else {
        if (host === 'files.slack.com') this.filesLeftAsLinks++;
        links.push(`[${title}](${url})`);
        hasLink = true;
      }
    }
    return { text: links.join('\n'), hasAttachment, hasImage, hasLink };
  }

  reactionRows(message: Obj, messageId: number): void {
    if (!Array.isArray(message.reactions)) return;
    const merged = new Map<string, Set<string>>();
    for (const reaction of message.reactions.filter(isObj)) {
      const name = (str(reaction.name) ?? '').split('::')[0]!;
      if (!name) continue;
      const set = merged.get(name) ?? new Set<string>();
      for (const u of strs(reaction.users)) set.add(u);
      merged.set(name, set);
    }
    const done = new Set<string>();
    for (const [slackName, users] of merged) {
      const emoji = zulipEmojiForSlackName(slackName);
      if (!emoji) continue;
      for (const slackUser of users) {
        const userId = this.userIds.get(slackUser);
        if (userId === undefined) continue;
        const key = `${userId}:${emoji.code}`;
        if (done.has(key)) continue;
        done.add(key);
        this.reactions.push({ id: this.nextReactionId++, message: messageId, user_profile: userId, emoji_name: emoji.name, emoji_code: emoji.code, reaction_type: 'unicode_emoji' });
      }
    }
  }

  /** All messages of all conversations, day by day, each day sorted by time (Zulip's order). */
  *messages(): Generator<{ message: Obj; conversation: Conversation }> {
    const byDay = new Map<string, Conversation[]>();
    for (const conversation of this.conversations) {
      const dir = path.join(this.root, conversation.folder);
      if (!existsSync(dir)) continue;
      for (const file of readdirSync(dir)) {
        if (!file.endsWith('.json')) continue;
        const list = byDay.get(file) ?? [];
        list.push(conversation);
        byDay.set(file, list);
      }
    }
    for (const day of [...byDay.keys()].sort()) {
      const batch: Array<{ message: Obj; conversation: Conversation; ts: number }> = [];
      for (const conversation of byDay.get(day)!) {
        const entry = `${conversation.folder}/${day}`;
        const value = readEntry(this.root, entry);
        if (!Array.isArray(value)) throw new SlackImportError(`zip entry "${entry}" is not a JSON list of messages; nothing was imported`);
        value.forEach((message, i) => {
          if (!isObj(message)) throw new SlackImportError(`zip entry "${entry}": message ${i} is not an object; nothing was imported`);
          const ts = Number(message.ts);
          if (!Number.isFinite(ts)) throw new SlackImportError(`zip entry "${entry}": message ${i} has no valid "ts"; nothing was imported`);
          if (message.user === 'U00') return;
          if (message.mimetype === 'application/vnd.slack-docs') return;
          batch.push({ message, conversation, ts });
        });
      }
      batch.sort((a, b) => a.ts - b.ts);
      for (const item of batch) yield item;
    }
  }

  convertMessages(): number {
    const chunkSize = this.options.chunkSize ?? 1000;
    const convertThreads = this.options.convertThreads ?? true;
    const ctx: MarkupContext = {
      userById: (id) => {
        const zulipId = this.userIds.get(id);
        const fullName = this.fullNames.get(id);
        return zulipId !== undefined && fullName !== undefined ? { zulipId, fullName } : undefined;
      },
      channelNameById: (id) => this.channelNames.get(id),
    };
    let zerverMessage: Obj[] = [];
    let zerverUserMessage: Obj[] = [];
    let fileNumber = 1;
    let count = 0;
    const flush = () => {
      if (zerverMessage.length === 0) return;
      const name = `messages-${String(fileNumber++).padStart(6, '0')}.json`;
      writeFileSync(path.join(this.outDir, name), JSON.stringify({ zerver_message: zerverMessage, zerver_usermessage: zerverUserMessage }));
      zerverMessage = [];
      zerverUserMessage = [];
    };
    for (const { message, conversation } of this.messages()) {
      const subtype = str(message.subtype);
      if (subtype && SKIPPED_SUBTYPES.has(subtype)) continue;
      if (subtype === 'file_comment' && isObj(message.comment) && typeof message.comment.user === 'string') message.user = message.comment.user;
      const senderSlackId = str(message.user) ?? (isObj(message.file) ? str(message.file.user) : undefined) ?? str(message.bot_id);
      if (!senderSlackId) continue;
      const senderId = this.userIds.get(senderSlackId) ?? this.placeholderUser(senderSlackId, message);
      // Blocks and attachments (integrations' messages) replace the text when they give any, as in Zulip.
      const text = renderBlocksAndAttachments(message) || (str(message.text) ?? '');
      const converted = convertSlackMarkup(text, ctx);
      let content = converted.content;
      if (subtype && ME_SUBTYPES.has(subtype)) content = `/me ${content}`;
      const messageId = this.nextMessageId++;
      this.reactionRows(message, messageId);
      const files = this.fileLinks(message, messageId, senderId);
      content = [content, files.text].filter((part) => part !== '').join('\n');
      if (content.trim() === '') continue;

      let recipientId = conversation.recipientId;
      let senderRecipientId: number | undefined;
      const isDirect = conversation.kind !== 'channel';
      if (conversation.kind === 'dm') {
        const [a, b] = conversation.members!;
        const other = senderSlackId === a ? b : a;
        const otherId = this.userIds.get(other) ?? this.placeholderUser(other, {});
        recipientId = this.personalRecipient.get(otherId)!;
        senderRecipientId = this.personalRecipient.get(senderId)!;
      }
      let topic = isDirect ? '' : DEFAULT_TOPIC;
      if (!isDirect && convertThreads && message.thread_ts !== undefined) topic = this.threadTopic(message, content, senderSlackId);

      zerverMessage.push({
        id: messageId,
        sender: senderId,
        recipient: recipientId,
        realm: REALM_ID,
        subject: topic,
        content,
        rendered_content: null,
        rendered_content_version: null,
        date_sent: Number(message.ts),
        sending_client: SENDING_CLIENT,
        last_edit_time: null,
        edit_history: null,
        has_attachment: files.hasAttachment,
        has_image: files.hasImage,
        has_link: converted.hasLink || files.hasLink,
        is_channel_message: !isDirect,
        type: 1,
      });
      const flagged = new Set<number>();
      const addUserMessages = (rid: number) => {
        let sorted = this.sortedSubscribers.get(rid);
        if (!sorted) {
          sorted = [...(this.subscribers.get(rid) ?? [])].sort((x, y) => x - y);
          this.sortedSubscribers.set(rid, sorted);
        }
        for (const userId of sorted) {
          if (flagged.has(userId)) continue;
          flagged.add(userId);
          let flags = FLAG_READ;
          if (converted.mentionedUserIds.includes(userId)) flags |= FLAG_MENTIONED;
          if (isDirect) flags |= FLAG_PRIVATE;
          zerverUserMessage.push({ id: this.nextUserMessageId++, user_profile: userId, message: messageId, flags_mask: flags });
        }
      };
      addUserMessages(recipientId);
      if (senderRecipientId !== undefined && senderRecipientId !== recipientId) addUserMessages(senderRecipientId);
      count++;
      if (zerverMessage.length >= chunkSize) flush();
    }
    flush();
    return count;
  }
}

/**
 * Converts the Slack export `zipPath` into Zulip's export layout in `outDir` (an empty folder):
 * realm.json, messages-NNNNNN.json, attachment.json, uploads/ (records.json and the files),
 * avatars/, emoji/ and realm_icons/ (empty records). Throws SlackImportError, naming the entry, for an
 * archive it refuses.
 */
export async function convertSlackExport(zipPath: string, outDir: string, options: SlackConvertOptions): Promise<SlackConversionSummary> {
  const raw = await mkdtemp(path.join(os.tmpdir(), 'parley-slack-raw-'));
  try {
    const entries = await extractSlackZip(zipPath, raw, options.limits);
    const now = Date.now() / 1000;
    const c = new Converter(raw, outDir, options, now);
    c.indexFiles(entries);
    const users = readList(raw, 'users.json', true);
    const channels = readList(raw, 'channels.json', true);
    const groups = readList(raw, 'groups.json', false);
    const mpims = readList(raw, 'mpims.json', false);
    const dms = readList(raw, 'dms.json', false);
    c.realm = {
      zerver_realm: [{ id: REALM_ID, name: options.name, string_id: slug(options.name), description: 'Organization imported from Slack!', date_created: now, deactivated: false }],
      zerver_client: DATA_IMPORT_CLIENTS.map(([name, id]) => ({ id, name })),
      import_source: 'slack',
    };
    c.convertUsers(users);
    c.convertChannels(channels, false, 'channels.json');
    c.convertChannels(groups, true, 'groups.json');
    c.convertMpims(mpims, 'mpims.json');
    c.convertDms(dms, 'dms.json');
    mkdirSync(path.join(outDir, 'uploads'), { recursive: true });
    const messages = c.convertMessages();
    const realm = {
      ...c.realm,
      zerver_userprofile: c.users,
      zerver_stream: c.streams,
      zerver_recipient: c.recipients,
      zerver_subscription: c.subscriptions,
      zerver_huddle: c.huddles,
      zerver_defaultstream: c.defaultStreams,
      zerver_reaction: c.reactions,
      zerver_realmemoji: [],
      zerver_customprofilefield: [],
      zerver_customprofilefieldvalue: [],
      zerver_userpresence: [],
      zerver_realmdomain: [],
      zerver_realmfilter: [],
      zerver_realmplayground: [],
      zerver_useractivity: [],
      zerver_useractivityinterval: [],
      zerver_userprofile_crossrealm: [],
      zerver_userprofile_mirrordummy: [],
    };
    writeFileSync(path.join(outDir, 'realm.json'), JSON.stringify(realm));
    writeFileSync(path.join(outDir, 'attachment.json'), JSON.stringify({ zerver_attachment: c.attachments }));
    writeFileSync(path.join(outDir, 'uploads', 'records.json'), JSON.stringify(c.uploadRecords));
    for (const folder of ['avatars', 'emoji', 'realm_icons']) {
      mkdirSync(path.join(outDir, folder), { recursive: true });
      writeFileSync(path.join(outDir, folder, 'records.json'), '[]');
    }
    return {
      users: c.users.length,
      channels: c.streams.length,
      directMessageGroups: c.huddles.length,
      messages,
      reactions: c.reactions.length,
      uploads: c.uploadRecords.length,
      filesLeftAsLinks: c.filesLeftAsLinks,
    };
  } finally {
    await rm(raw, { recursive: true, force: true });
  }
}

function slug(name: string): string {
  return name.normalize('NFKD').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40);
}

/** The workspace's name from the export's file name (Slack names it "<Workspace> Slack export <dates>.zip"). */
export function workspaceNameOf(zipPath: string): string {
  const base = path.basename(zipPath).replace(/\.zip$/i, '');
  const match = /^(.+?) Slack export\b/i.exec(base);
  return (match ? match[1]! : base).trim() || 'Slack';
}

export interface SlackImportOptions extends Pick<ImportOptions, 'url' | 'name' | 'onProgress'> {
  convertThreads?: boolean;
  limits?: ZipLimits;
  chunkSize?: number;
}

/**
 * Imports a Slack export as a new organization: converts it to Zulip's layout in a temporary folder,
 * then imports that with the Zulip-format importer (one transaction). Nothing is imported when the
 * archive is refused (SlackImportError) or the converted data is (ImportError).
 */
export async function importSlackExport(
  deps: ImportDeps,
  zipPath: string,
  options: SlackImportOptions = {},
): Promise<{ result: ImportResult; summary: SlackConversionSummary }> {
  const name = options.name ?? workspaceNameOf(zipPath);
  const domain = new URL(options.url ?? deps.config.publicUrl).hostname;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'parley-slack-converted-'));
  try {
    options.onProgress?.('converting the Slack export', 0);
    const summary = await convertSlackExport(zipPath, dir, {
      domain,
      name,
      ...(options.convertThreads !== undefined ? { convertThreads: options.convertThreads } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
      ...(options.chunkSize ? { chunkSize: options.chunkSize } : {}),
    });
    options.onProgress?.('converting the Slack export', summary.messages, summary.messages);
    const result = await importRealmFromDirectory(deps, dir, {
      name,
      ...(options.url ? { url: options.url } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    return { result, summary };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
