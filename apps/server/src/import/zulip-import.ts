// Import of an organization from an export in Zulip's layout (zerver/lib/export.py), Zulip's own or
// Parley's: `pnpm manage import --file <export.tar.gz>`, and the Slack importer's back end (it writes
// Zulip's layout into a folder and calls importRealmFromDirectory).
//
// WHAT IS READ (the folder may hold the files directly or inside one top-level folder, as Zulip's
// tarball does). Dates are UNIX timestamps (floats); foreign keys are plain ids named as Django's
// model_to_dict names them (`sender`, `recipient`, `user_profile`, …, not `…_id`).
//   realm.json
//     zerver_realm[0]: name, string_id, description and the realm settings Parley has under Zulip's
//       names (booleans, integers, strings, time limits, choices given as Zulip's codes), the realm group settings (`can_*_group`,
//       `direct_message_*_group`, `create_multiuse_invite_group`: user group ids), and
//       new_stream_announcements_stream / signup_announcements_stream / zulip_update_announcements_stream.
//     zerver_userprofile (+ zerver_userprofile_mirrordummy, imported deactivated): id, email,
//       delivery_email, full_name, role, is_active, is_bot, bot_type, bot_owner, date_joined, timezone,
//       every personal setting whose name is a column of Parley's user_settings, default_sending_stream,
//       default_events_register_stream, default_all_public_streams.
//     zerver_userprofile_crossrealm: id, email (Zulip's system bots: senders become the notification bot).
//     zerver_recipient: id, type (1 user, 2 channel, 3 group DM), type_id.
//     zerver_stream: id, name, description, rendered_description, invite_only, is_web_public,
//       history_public_to_subscribers, deactivated, message_retention_days, date_created, creator,
//       topics_policy, recipient, and the ten channel group settings (`can_*_group`: user group ids).
//     zerver_subscription: user_profile, recipient, active, color, is_muted, pin_to_top,
//       desktop/audible/push/email_notifications, wildcard_mentions_notify. Rows of type-3
//       recipients give the members of group DMs (zerver_huddle / zerver_directmessagegroup need not be read).
//     zerver_usergroup: id. zerver_namedusergroup: usergroup_ptr (or id), name, description,
//       is_system_group, deactivated, creator, date_created, can_*_group. A zerver_usergroup row with no
//       named row is an anonymous group-setting value.
//     zerver_usergroupmembership: user_group, user_profile. zerver_groupgroupmembership: supergroup, subgroup.
//     zerver_defaultstream: stream. zerver_realmemoji: id, name, author, file_name, is_animated, deactivated.
//     zerver_reaction: message, user_profile, emoji_name, emoji_code, reaction_type (realm_emoji codes are
//       zerver_realmemoji ids). zerver_usertopic: user_profile, stream, topic_name, last_updated,
//       visibility_policy. zerver_muteduser: user_profile, muted_user, date_muted. zerver_alertword:
//       user_profile, word. zerver_realmfilter: pattern, url_template, order. zerver_realmplayground:
//       name, pygments_language, url_template. zerver_customprofilefield: id, name, hint, field_type,
//       field_data (JSON text), order, display_in_profile_summary, required, editable_by_user.
//       zerver_customprofilefieldvalue: user_profile, field, value, rendered_value. zerver_client: id, name.
//     zerver_service: user_profile, name, base_url, token, interface.
//   messages-NNNNNN.json (in name order): zerver_message: id, sender, recipient, subject (the topic),
//     content, rendered_content (rendered again when null), date_sent, last_edit_time, edit_history
//     (JSON text), sending_client; zerver_usermessage: message, user_profile, flags_mask (Zulip's bits).
//   attachment.json: zerver_attachment: id, path_id, file_name, owner, size, create_time, content_type,
//     messages (message ids).
//   uploads/records.json (path or s3_path = path_id) and the files uploads/<path>.
//   emoji/records.json (path, file_name) and the files emoji/<path>; avatars/records.json
//     (user_profile_id, path) and avatars/<path>: the `.original` (or the `.png`) of each user.
// Every id a row points at must be in the export; otherwise the import is refused, naming the file,
// the table and the row. Everything is written in one transaction; files copied into storage are
// removed again if it fails.
import { createReadStream, existsSync, statSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import mime from 'mime-types';
import type { AppDeps } from '../deps.ts';
import type { Realm } from '../data/models.ts';
import { allocateIds, bulkInsert, inImportTransaction, type CopyIn, type CopyStream, lockImportUrl, markUsersCaughtUp, realmIdByUrl, replanStatements, tableColumns, updateRow, type BulkColumn, type ImportTx } from '../data/zulip-import.repo.ts';
import { systemGroupIds, systemGroupsForRole, SYSTEM_GROUP_NAMES, type SystemGroupName } from '../data/system-groups.repo.ts';
import { createRealmInTransaction } from '../actions/realm.ts';
import { notificationBot } from '../actions/system-bot-users.ts';
import { settingsOf } from '../lib/group-settings.ts';
import { REALM_SETTINGS } from '../lib/realm-settings.ts';
import { alertWordKey } from '../lib/alert-words.ts';
import { renderMarkdown } from '../lib/markdown.ts';
import { EMOJI_EXTENSIONS, emojiFileName, emojiKeys } from '../lib/realm-emoji.ts';
import { avatarKeys, AVATAR_SIZE, MEDIUM_AVATAR_SIZE } from '../lib/avatar.ts';
import { generateApiKey } from '../security/secrets.ts';
import { ALL_ROLES } from '../access/roles.ts';
import { waitingPeriodOver } from '../access/realm.ts';
import { extractArchive, type ArchiveLimits } from './archive.ts';
import { jsonTableRows, JsonRowsError } from './json-rows.ts';
import { MessageIdMap, type IdLookup } from './message-ids.ts';

export { ArchiveError } from './archive.ts';

export type ImportDeps = Pick<AppDeps, 'db' | 'cipher' | 'storage' | 'config' | 'events'>;

export interface ImportOptions {
  /** The new organization's URL; default: the export's string_id as a subdomain of the server's URL (the server's URL itself when empty). */
  url?: string;
  /** Its name; default: the export's. */
  name?: string;
  /** Called as each table is written (`done` of `total` rows), and per message file. */
  onProgress?(step: string, done: number, total?: number): void;
  /** Bounds of the archive's extraction (importRealmFromArchive). */
  limits?: Partial<ArchiveLimits>;
  /** Diagnostics: a line per message file (its wall time, and the time spent waiting on PostgreSQL per table and for ids). */
  trace?(line: string): void;
  /** Diagnostics: plans of the import's statements slower than this (PostgreSQL's auto_explain), given to `trace`. */
  explainMinMs?: number;
}

export interface ImportedUser {
  oldId: number;
  id: number;
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
  isActive: boolean;
  /** The new API key (accounts get no password: see README, "Moving from Zulip"). */
  apiKey: string;
}

export interface ImportResult {
  realmId: number;
  url: string;
  name: string;
  users: ImportedUser[];
  /** Rows written per table. */
  counts: Record<string, number>;
  /** Old id → new id. */
  ids: { users: Map<number, number>; channels: Map<number, number>; groups: Map<number, number>; messages: IdLookup };
}

/** A refused export: the message names the file, table and row at fault; nothing was imported. */
export class ImportError extends Error {}

type Row = Record<string, unknown>;

const BATCH = 5000;

// ---------------------------------------------------------------------------------------------
// Reading and checking the export

function where(file: string, table: string, row: Row | undefined): string {
  const id = row && typeof row.id === 'number' ? ` id ${row.id}` : '';
  return `${file}: ${table}${id}`;
}

class Reader {
  constructor(
    readonly file: string,
    readonly table: string,
  ) {}
  int(row: Row, field: string): number {
    const v = row[field];
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new ImportError(`${where(this.file, this.table, row)}: "${field}" must be an integer, got ${JSON.stringify(v)}`);
    return v;
  }
  intOrNull(row: Row, field: string): number | null {
    return row[field] === null || row[field] === undefined ? null : this.int(row, field);
  }
  str(row: Row, field: string, fallback?: string): string {
    const v = row[field];
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v !== 'string') throw new ImportError(`${where(this.file, this.table, row)}: "${field}" must be a string, got ${JSON.stringify(v)}`);
    return v;
  }
  strOrNull(row: Row, field: string): string | null {
    return row[field] === null || row[field] === undefined ? null : this.str(row, field);
  }
  bool(row: Row, field: string, fallback: boolean): boolean {
    const v = row[field];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'boolean') throw new ImportError(`${where(this.file, this.table, row)}: "${field}" must be true or false, got ${JSON.stringify(v)}`);
    return v;
  }
  date(row: Row, field: string, fallback: Date | null = null): Date | null {
    const v = row[field];
    if (v === null || v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new ImportError(`${where(this.file, this.table, row)}: "${field}" must be a UNIX timestamp, got ${JSON.stringify(v)}`);
    return new Date(Math.round(v * 1000));
  }
  /** An id this row points at, mapped; refused when the export has no such row. */
  ref(row: Row, field: string, map: IdLookup, what: string): number {
    const old = this.int(row, field);
    const id = map.get(old);
    if (id === undefined) throw new ImportError(`${where(this.file, this.table, row)}: "${field}" points at ${what} ${old}, which is not in the export`);
    return id;
  }
  refOrNull(row: Row, field: string, map: ReadonlyMap<number, number>, what: string): number | null {
    return row[field] === null || row[field] === undefined ? null : this.ref(row, field, map, what);
  }
}

async function readJson(root: string, relative: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path.join(root, relative), 'utf8');
  } catch {
    throw new ImportError(`${relative}: missing from the export`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ImportError(`${relative}: malformed JSON (${error instanceof Error ? error.message : String(error)})`);
  }
}

async function readTables(root: string, relative: string): Promise<Record<string, Row[]>> {
  const data = await readJson(root, relative);
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new ImportError(`${relative}: expected an object of tables`);
  for (const [table, rows] of Object.entries(data)) {
    if (!Array.isArray(rows)) continue; // e.g. a message partial's realm_id
    for (const row of rows) if (!row || typeof row !== 'object' || Array.isArray(row)) throw new ImportError(`${relative}: ${table}: every row must be an object`);
  }
  return data as Record<string, Row[]>;
}

async function readRecords(root: string, relative: string): Promise<Row[]> {
  if (!existsSync(path.join(root, relative))) return [];
  const data = await readJson(root, relative);
  if (!Array.isArray(data) || data.some((r) => !r || typeof r !== 'object')) throw new ImportError(`${relative}: expected a list of records`);
  return data as Row[];
}

/** The folder holding realm.json: `dir` itself or its one subfolder (Zulip's tarballs hold one). */
async function exportRoot(dir: string): Promise<string> {
  if (existsSync(path.join(dir, 'realm.json'))) return dir;
  const entries = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory());
  for (const entry of entries) if (existsSync(path.join(dir, entry.name, 'realm.json'))) return path.join(dir, entry.name);
  throw new ImportError('realm.json: missing from the export');
}

/** A file of the export, by a path the export names: refused when it leaves its folder or is absent. */
function exportFile(root: string, folder: string, relative: string, entry: string): string {
  const base = path.join(root, folder);
  const full = path.resolve(base, relative);
  if (!full.startsWith(base + path.sep)) throw new ImportError(`${entry}: path ${JSON.stringify(relative)} leaves ${folder}/`);
  if (!existsSync(full) || !statSync(full).isFile()) throw new ImportError(`${entry}: file ${folder}/${relative} is missing from the export`);
  return full;
}

function defaultUrl(publicUrl: string, stringId: string): string {
  if (!stringId) return publicUrl;
  const url = new URL(publicUrl);
  url.hostname = `${stringId}.${url.hostname}`;
  return url.toString().replace(/\/+$/, '');
}

// ---------------------------------------------------------------------------------------------
// Rewriting ids inside content

interface ContentMaps {
  users: ReadonlyMap<number, number>;
  groups: ReadonlyMap<number, number>;
  channels: ReadonlyMap<number, number>;
  oldRealmId: number | null;
  newRealmId: number;
  /** Old custom emoji URL → new (Parley names emoji files after their id). */
  emojiFiles: Map<string, string>;
}

const mapped = (map: ReadonlyMap<number, number>, old: string) => String(map.get(Number(old)) ?? old);

/** Markdown: user mentions by id (`@**Name|12**`, silent `@_**Name|12**`) and links to uploaded files. */
function rewriteContent(content: string, m: ContentMaps): string {
  let out = content.replace(/(@_?\*\*[^*|\n]+\|)(\d+)(\*\*)/g, (_all, head: string, id: string, tail: string) => `${head}${mapped(m.users, id)}${tail}`);
  if (m.oldRealmId !== null) out = out.replace(new RegExp(`/user_uploads/(thumbnail/)?${m.oldRealmId}/`, 'g'), (_all, thumb: string | undefined) => `/user_uploads/${thumb ?? ''}${m.newRealmId}/`);
  return out;
}

/** Rendered HTML: the ids of mentions and channel links, uploaded files' and custom emoji's paths. */
function rewriteRendered(html: string, m: ContentMaps): string {
  let out = html
    .replace(/data-user-id="(\d+)"/g, (_a, id: string) => `data-user-id="${mapped(m.users, id)}"`)
    .replace(/data-user-group-id="(\d+)"/g, (_a, id: string) => `data-user-group-id="${mapped(m.groups, id)}"`)
    .replace(/data-stream-id="(\d+)"/g, (_a, id: string) => `data-stream-id="${mapped(m.channels, id)}"`)
    .replace(/#narrow\/(channel|stream)\/(\d+)-/g, (_a, word: string, id: string) => `#narrow/${word}/${mapped(m.channels, id)}-`);
  if (m.oldRealmId !== null) {
    out = out
      .replace(new RegExp(`/user_uploads/(thumbnail/)?${m.oldRealmId}/`, 'g'), (_all, thumb: string | undefined) => `/user_uploads/${thumb ?? ''}${m.newRealmId}/`)
      .replace(new RegExp(`/user_avatars/${m.oldRealmId}/emoji/images/[A-Za-z0-9._-]+`, 'g'), (old) => m.emojiFiles.get(old) ?? old);
  }
  return out;
}

/** Zulip's stored edit history with its user and channel ids mapped; the time of the last move. */
function rewriteEditHistory(text: unknown, m: ContentMaps, entry: string): { json: string | null; lastMoved: Date | null } {
  if (text === null || text === undefined || text === '') return { json: null, lastMoved: null };
  let history: unknown;
  try {
    history = typeof text === 'string' ? JSON.parse(text) : text;
  } catch {
    throw new ImportError(`${entry}: "edit_history" is not valid JSON`);
  }
  if (!Array.isArray(history)) throw new ImportError(`${entry}: "edit_history" must be a list`);
  let lastMoved: Date | null = null;
  const out = history.map((raw: unknown) => {
    if (!raw || typeof raw !== 'object') throw new ImportError(`${entry}: "edit_history" entries must be objects`);
    const source = raw as Row;
    // Parley's stored shape (Zulip's, without prev_rendered_content_version).
    const e: Row = {};
    for (const key of ['user_id', 'timestamp', 'prev_content', 'prev_rendered_content', 'prev_topic', 'topic', 'prev_stream', 'stream']) if (source[key] !== undefined && source[key] !== null) e[key] = source[key];
    if (typeof e.user_id !== 'number' || !m.users.has(e.user_id)) throw new ImportError(`${entry}: "edit_history" names user ${String(e.user_id)}, who is not in the export`);
    e.user_id = m.users.get(e.user_id);
    if (typeof e.timestamp !== 'number') throw new ImportError(`${entry}: "edit_history" entries need a timestamp`);
    for (const f of ['prev_stream', 'stream']) if (typeof e[f] === 'number') e[f] = m.channels.get(e[f] as number) ?? e[f];
    if (typeof e.prev_rendered_content === 'string') e.prev_rendered_content = rewriteRendered(e.prev_rendered_content, m);
    if (typeof e.prev_content === 'string') e.prev_content = rewriteContent(e.prev_content, m);
    if ((e.prev_stream !== undefined || e.prev_topic !== undefined) && typeof e.timestamp === 'number') {
      const t = new Date(e.timestamp * 1000);
      if (!lastMoved || t > lastMoved) lastMoved = t;
    }
    return e;
  });
  return { json: JSON.stringify(out), lastMoved };
}

// ---------------------------------------------------------------------------------------------
// The import

export async function importRealmFromArchive(deps: ImportDeps, file: string, options: ImportOptions = {}): Promise<ImportResult> {
  const dir = await extractArchive(file, options.limits);
  try {
    return await importRealmFromDirectory(deps, dir, options);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function importRealmFromDirectory(deps: ImportDeps, dir: string, options: ImportOptions = {}): Promise<ImportResult> {
  const root = await exportRoot(dir);
  const progress = options.onProgress ?? (() => {});
  const realmData = await readTables(root, 'realm.json');
  const t = (name: string): Row[] => realmData[name] ?? [];
  const realmRow = t('zerver_realm')[0];
  if (!realmRow) throw new ImportError('realm.json: zerver_realm is empty');
  const rr = new Reader('realm.json', 'zerver_realm');
  const name = options.name ?? rr.str(realmRow, 'name');
  const url = options.url ?? defaultUrl(deps.config.publicUrl, rr.str(realmRow, 'string_id', ''));
  const oldRealmId = typeof realmRow.id === 'number' ? realmRow.id : null;
  const refuseExisting = (id: number) => new ImportError(`An organization already exists at ${url} (id ${id}); nothing was imported.`);
  const existing = await realmIdByUrl(deps.db, url);
  if (existing !== null) throw refuseExisting(existing);

  // Message files are read before the transaction opens only for their names; each is parsed when written.
  const messageFiles = (await readdir(root)).filter((f) => /^messages-\d+\.json$/.test(f)).sort();
  const attachmentData = existsSync(path.join(root, 'attachment.json')) ? await readTables(root, 'attachment.json') : {};
  const uploadRecords = await readRecords(root, 'uploads/records.json');
  const emojiRecords = await readRecords(root, 'emoji/records.json');
  const avatarRecords = await readRecords(root, 'avatars/records.json');

  const stored: string[] = [];
  const counts: Record<string, number> = {};
  const count = (table: string, n: number) => {
    counts[table] = (counts[table] ?? 0) + n;
  };
  try {
    return await inImportTransaction(deps.db, async (tx, copy) => {
      await lockImportUrl(tx, url);
      const raced = await realmIdByUrl(tx, url);
      if (raced !== null) throw refuseExisting(raced);
      const realm = await createRealmInTransaction(tx, { name, url });
      const system = await systemGroupIds(tx, realm.id);
      const maps: ImportMaps = {
        users: new Map(),
        groups: new Map(),
        channels: new Map(),
        oldRealmId,
        newRealmId: realm.id,
        emojiFiles: new Map(),
      };
      const put = async (key: string, file: string, contentType: string) => {
        stored.push(key);
        await deps.storage.put(key, createReadStream(file), { contentType });
      };
      const ctx: ImportContext = { tx, deps, realm, data: realmData, maps, system, root, put, progress, count };

      // Users (bot owners once every user has an id).
      const users = await importUsers(ctx);
      // Senders among Zulip's cross-realm system bots become this organization's notification bot.
      const crossRealm = t('zerver_userprofile_crossrealm');
      if (crossRealm.length) {
        const bot = await notificationBot(tx, deps, realm);
        for (const row of crossRealm) maps.users.set(new Reader('realm.json', 'zerver_userprofile_crossrealm').int(row, 'id'), bot.id);
      }

      await importGroups(ctx);
      const channelRecipients = await importChannels(ctx);
      await importRealmSettings(ctx, realmRow);
      const { huddles, personal } = await importSubscriptions(ctx, channelRecipients);
      await importBotProfiles(ctx);

      // Custom emoji (their files too) before reactions.
      const emojiIds = await importEmoji(ctx, emojiRecords);
      // Uploaded files: their rows and bytes now, their links to messages once messages have ids.
      const attachments = await importAttachments(ctx, attachmentData, uploadRecords);

      const clients = new Map(t('zerver_client').map((c) => [Number(c.id), String(c.name)]));
      const messageIds = new MessageIdMap();
      const messageContext: MessageContext = { tx, copy, root, maps, channelRecipients, huddles, personal, clients, messageIds, freeIds: { ids: [], next: 0 }, count, waits: new Map() };
      for (const [index, file] of messageFiles.entries()) {
        const started = performance.now();
        // The triggers' statements planned on the tables as they are (see replanStatements).
        if (index > 0) await replanStatements(tx);
        await importMessageFile(messageContext, file);
        progress(`messages (${file})`, index + 1, messageFiles.length);
        if (options.trace) {
          const waits = [...messageContext.waits].map(([what, ms]) => `${what} ${ms.toFixed(0)} ms`).join(', ');
          options.trace(`import: ${file} ${(performance.now() - started).toFixed(0)} ms (waiting on PostgreSQL: ${waits || 'none'})`);
          messageContext.waits.clear();
        }
      }
      const twice = messageIds.duplicate();
      if (twice !== undefined) throw new ImportError(`messages: zerver_message id ${twice}: the id appears twice`);
      progress('messages', counts.message ?? 0, counts.message ?? 0);

      await importReactions(ctx, messageIds, emojiIds);
      progress('reactions', counts.reaction ?? 0, counts.reaction ?? 0);
      const links: unknown[][] = [];
      for (const { id, oldMessages, entry } of attachments) {
        for (const old of oldMessages) {
          const mid = messageIds.get(old);
          if (mid === undefined) throw new ImportError(`${entry}: "messages" points at message ${old}, which is not in the export`);
          links.push([id, mid]);
        }
      }
      await insertBatches(tx, 'attachment_message', [col('attachment_id', 'int'), col('message_id', 'int')], links);
      count('attachment_message', links.length);

      await importUserData(ctx);
      await importAvatars(ctx, avatarRecords, users);
      await markUsersCaughtUp(tx, realm.id);
      progress('done', 1, 1);
      return { realmId: realm.id, url, name, users, counts, ids: { users: maps.users, channels: maps.channels, groups: maps.groups, messages: messageIds } };
    }, { explainMinMs: options.explainMinMs, onNotice: options.trace });
  } catch (error) {
    if (stored.length) await deps.storage.delete(stored).catch(() => {});
    throw error;
  }
}

const col = (name: string, type: BulkColumn['type']): BulkColumn => ({ name, type });

async function insertBatches(tx: ImportTx, table: string, columns: readonly BulkColumn[], rows: readonly unknown[][]): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) await bulkInsert(tx, table, columns, rows.slice(i, i + BATCH));
}

type Progress = NonNullable<ImportOptions['onProgress']>;
type Count = (table: string, n: number) => void;
type Put = (key: string, file: string, contentType: string) => Promise<void>;

/** The id maps the import fills as it goes (old id → new), with what content rewriting needs. */
type ImportMaps = ContentMaps & { users: Map<number, number>; groups: Map<number, number>; channels: Map<number, number> };

/** What every step of one import shares: its transaction, the new organization, realm.json and the id maps. */
interface ImportContext {
  tx: ImportTx;
  deps: ImportDeps;
  realm: Realm;
  /** realm.json's tables. */
  data: Record<string, Row[]>;
  maps: ImportMaps;
  system: Record<SystemGroupName, number>;
  /** The export's folder. */
  root: string;
  /** Stores a file (and remembers it, to be deleted if the import fails). */
  put: Put;
  progress: Progress;
  count: Count;
}

// ---------------------------------------------------------------------------------------------
// Users

async function importUsers(ctx: ImportContext): Promise<ImportedUser[]> {
  const { tx, deps, realm, data, progress, count } = ctx;
  const userIds = ctx.maps.users;
  const r = new Reader('realm.json', 'zerver_userprofile');
  const rows: Row[] = [...(data.zerver_userprofile ?? []), ...(data.zerver_userprofile_mirrordummy ?? []).map((u) => ({ ...u, is_active: false }))];
  const ids = await allocateIds(tx, 'user', rows.length);
  const seen = new Set<string>();
  rows.forEach((row, i) => {
    const old = r.int(row, 'id');
    if (userIds.has(old)) throw new ImportError(`${where('realm.json', 'zerver_userprofile', row)}: the id appears twice`);
    userIds.set(old, ids[i]!);
  });
  const users: ImportedUser[] = [];
  const userRows: unknown[][] = [];
  const keyRows: unknown[][] = [];
  const memberRows: unknown[][] = [];
  const bots: Array<{ id: number; row: Row }> = [];
  rows.forEach((row, i) => {
    const id = ids[i]!;
    const deliveryEmail = r.str(row, 'delivery_email', r.str(row, 'email'));
    const lower = deliveryEmail.toLowerCase();
    if (seen.has(lower)) throw new ImportError(`${where('realm.json', 'zerver_userprofile', row)}: the address ${deliveryEmail} appears twice`);
    seen.add(lower);
    const roleValue = r.int(row, 'role');
    if (!ALL_ROLES.includes(roleValue)) throw new ImportError(`${where('realm.json', 'zerver_userprofile', row)}: unknown role ${roleValue}`);
    const isBot = r.bool(row, 'is_bot', false);
    const isActive = r.bool(row, 'is_active', true);
    const dateJoined = r.date(row, 'date_joined', new Date())!;
    const fullName = r.str(row, 'full_name');
    userRows.push([
      id,
      realm.id,
      deliveryEmail, // Parley keeps the real address in both and shows it as each user's email_address_visibility says
      deliveryEmail,
      fullName,
      roleValue,
      isActive,
      isBot,
      isBot ? (r.intOrNull(row, 'bot_type') ?? 1) : null,
      dateJoined,
      r.str(row, 'timezone', ''),
      'G',
      Math.max(1, r.intOrNull(row, 'avatar_version') ?? 1),
    ]);
    const apiKey = generateApiKey();
    keyRows.push([id, deps.cipher.lookupHash(apiKey), deps.cipher.encrypt(apiKey)]);
    users.push({ oldId: r.int(row, 'id'), id, email: deliveryEmail, fullName, role: roleValue, isBot, isActive, apiKey });
    if (isBot) bots.push({ id, row });
    for (const group of systemGroupsForRole(roleValue, waitingPeriodOver(realm, { dateJoined }))) memberRows.push([group, id]);
  });
  await insertBatches(
    tx,
    'user',
    [col('id', 'int'), col('realm_id', 'int'), col('email', 'text'), col('delivery_email', 'text'), col('full_name', 'text'), col('role', 'int'), col('is_active', 'bool'), col('is_bot', 'bool'), col('bot_type', 'int'), col('date_joined', 'timestamp'), col('timezone', 'text'), col('avatar_source', 'text'), col('avatar_version', 'int')],
    userRows,
  );
  await insertBatches(tx, 'api_key', [col('user_id', 'int'), col('lookup_hash', 'text'), col('ciphertext', 'text')], keyRows);
  count('user', userRows.length);

  // Personal settings: every column of user_settings the export's rows carry, with values of its type.
  const columns = await tableColumns(tx, 'user_settings');
  const typeOf = (dataType: string) => (dataType === 'boolean' ? 'boolean' : dataType === 'integer' ? 'number' : dataType === 'text' ? 'string' : null);
  const settingColumns = [...columns.entries()].filter(
    ([name, dataType]) => name !== 'user_id' && typeOf(dataType) !== null && rows.length > 0 && rows.every((row) => typeof row[name] === typeOf(dataType) && (dataType !== 'integer' || Number.isInteger(row[name]))),
  );
  const settingTypes: BulkColumn[] = [col('user_id', 'int'), ...settingColumns.map(([name, dataType]) => col(name, dataType === 'boolean' ? 'bool' : dataType === 'integer' ? 'int' : 'text'))];
  await insertBatches(tx, 'user_settings', settingTypes, rows.map((row, i) => [ids[i]!, ...settingColumns.map(([name]) => row[name])]));

  const system = await systemGroupIds(tx, realm.id);
  await insertBatches(tx, 'user_group_member', [col('group_id', 'int'), col('user_id', 'int')], memberRows.map(([g, u]) => [system[g as SystemGroupName], u]));

  for (const { id, row } of bots) {
    const owner = r.refOrNull(row, 'bot_owner', userIds, 'user');
    if (owner !== null) await updateRow(tx, 'user', id, { bot_owner_id: owner });
  }
  progress('users', users.length, users.length);
  return users;
}

async function importBotProfiles(ctx: ImportContext): Promise<void> {
  const { tx, data, maps, count } = ctx;
  const r = new Reader('realm.json', 'zerver_userprofile');
  const rows = [...(data.zerver_userprofile ?? []), ...(data.zerver_userprofile_mirrordummy ?? [])]
    .filter((row) => row.is_bot === true)
    .map((row) => [
      r.ref(row, 'id', maps.users, 'user'),
      r.refOrNull(row, 'default_sending_stream', maps.channels, 'channel'),
      r.refOrNull(row, 'default_events_register_stream', maps.channels, 'channel'),
      r.bool(row, 'default_all_public_streams', false),
    ]);
  await insertBatches(tx, 'bot_profile', [col('user_id', 'int'), col('default_sending_stream_id', 'int'), col('default_events_register_stream_id', 'int'), col('default_all_public_streams', 'bool')], rows);
  const s = new Reader('realm.json', 'zerver_service');
  const services = (data.zerver_service ?? []).map((row) => [s.ref(row, 'user_profile', maps.users, 'user'), s.str(row, 'name', ''), s.str(row, 'base_url', ''), s.str(row, 'token', ''), s.intOrNull(row, 'interface') ?? 1]);
  await insertBatches(tx, 'bot_service', [col('bot_id', 'int'), col('name', 'text'), col('base_url', 'text'), col('token', 'text'), col('interface', 'smallint')], services);
  count('bot_profile', rows.length);
}

// ---------------------------------------------------------------------------------------------
// Groups and group-valued settings

/** A group setting's value: the mapped group, or (absent from the export) the setting's default. */
function groupValue(ctx: Pick<ImportContext, 'maps' | 'system'>, r: Reader, row: Row, field: string, fallback: SystemGroupName | 'creator'): number {
  const { maps, system } = ctx;
  if (row[field] === undefined || row[field] === null) return system[fallback === 'creator' ? 'role:nobody' : fallback];
  return r.ref(row, field, maps.groups, 'user group');
}

async function importGroups(ctx: ImportContext): Promise<void> {
  const { tx, realm, data, maps, system, progress, count } = ctx;
  const g = new Reader('realm.json', 'zerver_usergroup');
  const n = new Reader('realm.json', 'zerver_namedusergroup');
  const named = new Map<number, Row>();
  for (const row of data.zerver_namedusergroup ?? []) named.set(row.usergroup_ptr !== undefined ? n.int(row, 'usergroup_ptr') : n.int(row, 'id'), row);
  const all = (data.zerver_usergroup ?? []).map((row) => g.int(row, 'id'));
  for (const id of named.keys()) if (!all.includes(id)) all.push(id);
  const fresh: Array<{ old: number; row: Row | undefined }> = [];
  for (const old of all) {
    const row = named.get(old);
    if (row && n.bool(row, 'is_system_group', false)) {
      const groupName = n.str(row, 'name');
      if (!(SYSTEM_GROUP_NAMES as readonly string[]).includes(groupName)) throw new ImportError(`${where('realm.json', 'zerver_namedusergroup', row)}: unknown system group ${groupName}`);
      maps.groups.set(old, system[groupName as SystemGroupName]);
    } else fresh.push({ old, row });
  }
  const ids = await allocateIds(tx, 'user_group', fresh.length);
  fresh.forEach(({ old }, i) => maps.groups.set(old, ids[i]!));
  await insertBatches(
    tx,
    'user_group',
    [col('id', 'int'), col('realm_id', 'int'), col('name', 'text'), col('description', 'text'), col('is_system_group', 'bool'), col('deactivated', 'bool'), col('created_at', 'timestamp'), col('creator_id', 'int')],
    fresh.map(({ row }, i) => [
      ids[i]!,
      realm.id,
      row ? n.str(row, 'name') : null,
      row ? n.str(row, 'description', '') : '',
      false,
      row ? n.bool(row, 'deactivated', false) : false,
      row ? n.date(row, 'date_created', new Date()) : new Date(),
      row ? n.refOrNull(row, 'creator', maps.users, 'user') : null,
    ]),
  );
  count('user_group', fresh.length);

  // Direct members and subgroups; system groups' memberships follow from roles and are already there.
  const systemIds = new Set(Object.values(system));
  const m = new Reader('realm.json', 'zerver_usergroupmembership');
  const members = (data.zerver_usergroupmembership ?? [])
    .map((row) => [m.ref(row, 'user_group', maps.groups, 'user group'), m.ref(row, 'user_profile', maps.users, 'user')])
    .filter(([group]) => !systemIds.has(group as number));
  await insertBatches(tx, 'user_group_member', [col('group_id', 'int'), col('user_id', 'int')], members);
  const s = new Reader('realm.json', 'zerver_groupgroupmembership');
  const subgroups = (data.zerver_groupgroupmembership ?? [])
    .map((row) => [s.ref(row, 'supergroup', maps.groups, 'user group'), s.ref(row, 'subgroup', maps.groups, 'user group')])
    .filter(([supergroup]) => !systemIds.has(supergroup as number));
  await insertBatches(tx, 'user_group_subgroup', [col('supergroup_id', 'int'), col('subgroup_id', 'int')], subgroups);
  count('user_group_member', members.length);
  count('user_group_subgroup', subgroups.length);

  // The named groups' own permission settings (anonymous groups have none).
  for (const { old, row } of fresh) {
    if (!row) continue;
    const values: Record<string, number> = {};
    for (const setting of settingsOf('user_group')) values[snake(setting.column)] = groupValue(ctx, n, row, setting.name, setting.defaultValue);
    await updateRow(tx, 'user_group', maps.groups.get(old)!, values);
  }
  progress('user groups', fresh.length, fresh.length);
}

const snake = (camel: string) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

// ---------------------------------------------------------------------------------------------
// Channels, subscriptions, the organization's settings

async function importChannels(ctx: ImportContext): Promise<Map<number, number>> {
  const { tx, realm, data, maps, progress, count } = ctx;
  const r = new Reader('realm.json', 'zerver_stream');
  const rows = data.zerver_stream ?? [];
  const ids = await allocateIds(tx, 'channel', rows.length);
  rows.forEach((row, i) => maps.channels.set(r.int(row, 'id'), ids[i]!));
  const defaults = new Set((data.zerver_defaultstream ?? []).map((row) => new Reader('realm.json', 'zerver_defaultstream').ref(row, 'stream', maps.channels, 'channel')));
  const settings = settingsOf('channel');
  const columns = [
    col('id', 'int'), col('realm_id', 'int'), col('name', 'text'), col('description', 'text'), col('rendered_description', 'text'), col('invite_only', 'bool'), col('is_web_public', 'bool'),
    col('history_public_to_subscribers', 'bool'), col('is_default', 'bool'), col('is_archived', 'bool'), col('message_retention_days', 'int'), col('topics_policy', 'text'), col('created_at', 'timestamp'), col('creator_id', 'int'),
    ...settings.map((s) => col(snake(s.column), 'int')),
  ];
  const topicsPolicies = new Set(['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only']);
  const topicsPolicyCodes: Record<number, string> = { 1: 'inherit', 2: 'allow_empty_topic', 3: 'disable_empty_topic', 4: 'empty_topic_only' };
  const values = rows.map((row, i) => {
    const policy = row.topics_policy;
    const topicsPolicy = typeof policy === 'string' && topicsPolicies.has(policy) ? policy : typeof policy === 'number' ? (topicsPolicyCodes[policy] ?? 'inherit') : 'inherit';
    const inviteOnly = r.bool(row, 'invite_only', false);
    return [
      ids[i]!, realm.id, r.str(row, 'name'), r.str(row, 'description', ''), r.str(row, 'rendered_description', ''), inviteOnly, r.bool(row, 'is_web_public', false),
      r.bool(row, 'history_public_to_subscribers', !inviteOnly), defaults.has(ids[i]!), r.bool(row, 'deactivated', false), r.intOrNull(row, 'message_retention_days'), topicsPolicy,
      r.date(row, 'date_created', new Date()), r.refOrNull(row, 'creator', maps.users, 'user'),
      ...settings.map((s) => groupValue(ctx, r, row, s.name, s.defaultValue === 'creator' ? 'role:administrators' : s.defaultValue)),
    ];
  });
  await insertBatches(tx, 'channel', columns, values);
  count('channel', rows.length);
  for (const [i, row] of rows.entries()) {
    const rendered = values[i]![4] as string;
    if (rendered) await updateRow(tx, 'channel', ids[i]!, { rendered_description: rewriteRendered(rendered, maps) });
    void row;
  }
  progress('channels', rows.length, rows.length);

  // Recipient ids of channels → channel ids.
  const channelRecipients = new Map<number, number>();
  const rec = new Reader('realm.json', 'zerver_recipient');
  for (const row of data.zerver_recipient ?? []) {
    if (rec.int(row, 'type') === 2) channelRecipients.set(rec.int(row, 'id'), rec.ref(row, 'type_id', maps.channels, 'channel'));
  }
  return channelRecipients;
}

async function importSubscriptions(ctx: ImportContext, channelRecipients: Map<number, number>): Promise<{ huddles: Map<number, number[]>; personal: Map<number, number> }> {
  const { tx, data, maps, progress, count } = ctx;
  const rec = new Reader('realm.json', 'zerver_recipient');
  const types = new Map<number, number>();
  const personal = new Map<number, number>();
  for (const row of data.zerver_recipient ?? []) {
    const type = rec.int(row, 'type');
    types.set(rec.int(row, 'id'), type);
    if (type === 1) personal.set(rec.int(row, 'id'), rec.ref(row, 'type_id', maps.users, 'user'));
  }
  const r = new Reader('realm.json', 'zerver_subscription');
  const huddles = new Map<number, number[]>();
  const rows: unknown[][] = [];
  for (const row of data.zerver_subscription ?? []) {
    const recipient = r.int(row, 'recipient');
    const type = types.get(recipient);
    if (type === undefined) throw new ImportError(`${where('realm.json', 'zerver_subscription', row)}: "recipient" points at recipient ${recipient}, which is not in the export`);
    const user = r.ref(row, 'user_profile', maps.users, 'user');
    if (type === 3) huddles.set(recipient, [...(huddles.get(recipient) ?? []), user]);
    if (type !== 2) continue;
    rows.push([
      user, channelRecipients.get(recipient)!, r.bool(row, 'active', true), r.str(row, 'color', '#c2c2c2'), r.bool(row, 'is_muted', false), r.bool(row, 'pin_to_top', false),
      nullableBool(row.desktop_notifications), nullableBool(row.audible_notifications), nullableBool(row.push_notifications), nullableBool(row.email_notifications), nullableBool(row.wildcard_mentions_notify),
    ]);
  }
  await insertBatches(
    tx,
    'subscription',
    [col('user_id', 'int'), col('channel_id', 'int'), col('active', 'bool'), col('color', 'text'), col('is_muted', 'bool'), col('pin_to_top', 'bool'), col('desktop_notifications', 'bool'), col('audible_notifications', 'bool'), col('push_notifications', 'bool'), col('email_notifications', 'bool'), col('wildcard_mentions_notify', 'bool')],
    rows,
  );
  count('subscription', rows.length);
  progress('subscriptions', rows.length, rows.length);
  return { huddles, personal };
}

const nullableBool = (v: unknown) => (typeof v === 'boolean' ? v : null);

async function importRealmSettings(ctx: ImportContext, row: Row): Promise<void> {
  const { tx, realm, maps } = ctx;
  const r = new Reader('realm.json', 'zerver_realm');
  const values: Record<string, unknown> = {};
  for (const setting of REALM_SETTINGS) {
    const v = row[setting.name];
    if (v === undefined) continue;
    const column = snake(setting.column);
    if (setting.type === 'boolean' && typeof v === 'boolean') values[column] = v;
    else if (setting.type === 'integer' && Number.isInteger(v)) values[column] = v;
    else if (setting.type === 'string' && typeof v === 'string') values[column] = v;
    else if (setting.type === 'time-limit' && (v === null || Number.isInteger(v))) values[column] = v;
    else if (setting.type === 'channel') values[column] = typeof v === 'number' ? (maps.channels.get(v) ?? null) : null;
    else if (setting.type === 'choice') {
      // Zulip stores these as codes (e.g. topics_policy 2 = allow_empty_topic); Parley by name.
      const name = typeof v === 'string' ? v : Object.entries(setting.codes).find(([, code]) => code === v)?.[0];
      if (name !== undefined && name in setting.codes) values[column] = name;
    }
  }
  for (const setting of settingsOf('realm')) values[snake(setting.column)] = groupValue(ctx, r, row, setting.name, setting.defaultValue);
  if (row.invite_required !== undefined) values.invite_required = r.bool(row, 'invite_required', true);
  // Zulip's -1 (forever) is Parley's null (unlimited).
  if (row.message_retention_days !== undefined) values.message_retention_days = (r.intOrNull(row, 'message_retention_days') ?? -1) < 0 ? null : r.intOrNull(row, 'message_retention_days');
  await updateRow(tx, 'realm', realm.id, values);
}

// ---------------------------------------------------------------------------------------------
// Files: custom emoji, uploads, avatars


async function importEmoji(ctx: ImportContext, records: Row[]): Promise<Map<number, number>> {
  const { tx, root, realm, data, maps, put, progress, count } = ctx;
  const r = new Reader('realm.json', 'zerver_realmemoji');
  const rows = data.zerver_realmemoji ?? [];
  const ids = await allocateIds(tx, 'realm_emoji', rows.length);
  const emojiIds = new Map<number, number>();
  const byFile = new Map<string, Row>(records.filter((rec) => typeof rec.file_name === 'string').map((rec) => [String(rec.file_name), rec]));
  const values: unknown[][] = [];
  for (const [i, row] of rows.entries()) {
    emojiIds.set(r.int(row, 'id'), ids[i]!);
    const oldName = r.strOrNull(row, 'file_name');
    const isAnimated = r.bool(row, 'is_animated', false);
    let fileName: string | null = null;
    if (oldName !== null) {
      const entry = where('realm.json', 'zerver_realmemoji', row);
      const record = byFile.get(oldName);
      const relative = record && typeof record.path === 'string' ? record.path : `${r.int(row, 'realm')}/emoji/images/${oldName}`;
      const file = exportFile(root, 'emoji', relative, entry);
      const contentType = mime.lookup(oldName) || '';
      if (!EMOJI_EXTENSIONS[contentType]) throw new ImportError(`${entry}: ${oldName} is not an image type Parley serves (${Object.keys(EMOJI_EXTENSIONS).join(', ')})`);
      // Parley's file name (a salted hash of the new id): links in rendered messages follow.
      fileName = emojiFileName(contentType, ids[i]!);
      if (maps.oldRealmId !== null) maps.emojiFiles.set(`/user_avatars/${maps.oldRealmId}/emoji/images/${oldName}`, `/user_avatars/${realm.id}/emoji/images/${fileName}`);
      const keys = emojiKeys(realm.id, fileName);
      await put(keys.image, file, contentType);
      if (isAnimated) {
        let still: Buffer;
        try {
          still = await (await import('../lib/image-resize.ts')).firstFramePng(await readFile(file));
        } catch {
          throw new ImportError(`${entry}: ${relative} is not a readable image`);
        }
        await putBuffer(put, keys.still, still);
      }
    }
    values.push([ids[i]!, realm.id, r.refOrNull(row, 'author', maps.users, 'user'), r.str(row, 'name'), fileName, isAnimated, r.bool(row, 'deactivated', false)]);
  }
  await insertBatches(tx, 'realm_emoji', [col('id', 'int'), col('realm_id', 'int'), col('author_id', 'int'), col('name', 'text'), col('file_name', 'text'), col('is_animated', 'bool'), col('deactivated', 'bool')], values);
  count('realm_emoji', values.length);
  progress('custom emoji', values.length, values.length);
  return emojiIds;
}

/** `data`: attachment.json's tables; `records`: uploads/records.json. */
async function importAttachments(ctx: ImportContext, data: Record<string, Row[]>, records: Row[]): Promise<Array<{ id: number; oldMessages: number[]; entry: string }>> {
  const { tx, root, realm, maps, put, progress, count } = ctx;
  const r = new Reader('attachment.json', 'zerver_attachment');
  const rows = data.zerver_attachment ?? [];
  const ids = await allocateIds(tx, 'attachment', rows.length);
  const byPath = new Map<string, Row>();
  for (const rec of records) for (const key of [rec.path, rec.s3_path]) if (typeof key === 'string') byPath.set(key, rec);
  const values: unknown[][] = [];
  const out: Array<{ id: number; oldMessages: number[]; entry: string }> = [];
  for (const [i, row] of rows.entries()) {
    const entry = where('attachment.json', 'zerver_attachment', row);
    const pathId = r.str(row, 'path_id');
    const segments = pathId.split('/');
    if (segments.length < 2 || segments.some((s) => s === '' || s === '.' || s === '..')) throw new ImportError(`${entry}: invalid path_id ${JSON.stringify(pathId)}`);
    // Same layout as Zulip's path ids, under the new organization's id (links in messages are rewritten alike).
    const newPathId = [String(realm.id), ...segments.slice(1)].join('/');
    const record = byPath.get(pathId);
    const file = exportFile(root, 'uploads', typeof record?.path === 'string' ? record.path : pathId, entry);
    const contentType = r.strOrNull(row, 'content_type') ?? (mime.lookup(r.str(row, 'file_name')) || 'application/octet-stream');
    await put(`files/${newPathId}`, file, contentType);
    const oldMessages = Array.isArray(row.messages) ? row.messages.map((m) => (typeof m === 'number' ? m : NaN)) : [];
    if (oldMessages.some((m) => !Number.isInteger(m))) throw new ImportError(`${entry}: "messages" must be a list of message ids`);
    out.push({ id: ids[i]!, oldMessages, entry });
    values.push([ids[i]!, realm.id, r.ref(row, 'owner', maps.users, 'user'), newPathId, r.str(row, 'file_name'), BigInt(statSync(file).size), contentType, r.date(row, 'create_time', new Date())]);
  }
  await insertBatches(
    tx,
    'attachment',
    [col('id', 'int'), col('realm_id', 'int'), col('owner_id', 'int'), col('path_id', 'text'), col('file_name', 'text'), col('size', 'bigint'), col('content_type', 'text'), col('create_time', 'timestamp')],
    values,
  );
  count('attachment', values.length);
  progress('uploaded files', values.length, values.length);
  return out;
}

async function importAvatars(ctx: ImportContext, records: Row[], users: ImportedUser[]): Promise<void> {
  const { tx, root, realm, maps, put, count } = ctx;
  // One image per user: the original if the export has it, else the 100-pixel PNG.
  const chosen = new Map<number, string>();
  for (const rec of records) {
    if (typeof rec.user_profile_id !== 'number' || typeof rec.path !== 'string') continue;
    const isOriginal = rec.path.endsWith('.original');
    if (!isOriginal && !/\/[0-9a-f]+\.png$/.test(rec.path)) continue;
    if (isOriginal || !chosen.has(rec.user_profile_id)) chosen.set(rec.user_profile_id, rec.path);
  }
  const versions = new Map(users.map((u) => [u.id, u]));
  let n = 0;
  for (const [old, relative] of chosen) {
    const id = maps.users.get(old);
    if (id === undefined || !versions.has(id)) continue; // a system bot of the exporting server
    const file = exportFile(root, 'avatars', relative, `avatars/records.json: user ${old}`);
    let small: Buffer, medium: Buffer;
    try {
      [small, medium] = (await (await import('../lib/image-resize.ts')).squarePngs(await readFile(file), [AVATAR_SIZE, MEDIUM_AVATAR_SIZE])) as [Buffer, Buffer];
    } catch {
      continue; // not an image Parley can read: the user keeps a gravatar
    }
    const version = 1;
    const keys = avatarKeys(realm.id, id, version);
    await putBuffer(put, keys.small, small);
    await putBuffer(put, keys.medium, medium);
    await updateRow(tx, 'user', id, { avatar_source: 'U', avatar_version: version });
    n++;
  }
  count('avatar', n);
}

async function putBuffer(put: Put, key: string, bytes: Buffer): Promise<void> {
  const { mkdtemp, writeFile } = await import('node:fs/promises');
  const os = await import('node:os');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'parley-avatar-'));
  try {
    const file = path.join(dir, 'image.png');
    await writeFile(file, bytes);
    await put(key, file, 'image/png');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Messages, flags, reactions

interface MessageContext {
  tx: ImportTx;
  copy: CopyIn;
  root: string;
  maps: ContentMaps;
  channelRecipients: Map<number, number>;
  huddles: Map<number, number[]>;
  personal: Map<number, number>;
  clients: Map<number, string>;
  messageIds: MessageIdMap;
  /** Fresh message ids drawn from the sequence ahead of need (a block at a time, between COPYs). */
  freeIds: { ids: number[]; next: number };
  count: Count;
  /** Milliseconds spent waiting on PostgreSQL in the current file, by what (diagnostics: ImportOptions.trace). */
  waits: Map<string, number>;
}

async function timed<T>(ctx: MessageContext, what: string, work: Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work;
  } finally {
    ctx.waits.set(what, (ctx.waits.get(what) ?? 0) + performance.now() - started);
  }
}

const MESSAGE_COLUMNS = [
  col('id', 'int'), col('realm_id', 'int'), col('sender_id', 'int'), col('channel_id', 'int'), col('topic', 'text'), col('direct_user_ids', 'int[]'), col('content', 'text'), col('rendered_content', 'text'),
  col('date_sent', 'timestamp'), col('last_edit_time', 'timestamp'), col('sending_client', 'text'), col('edit_history', 'jsonb'), col('last_moved_time', 'timestamp'),
];
const USER_MESSAGE_COLUMNS = [col('message_id', 'int'), col('user_id', 'int'), col('flags', 'bigint')];
const MESSAGE_TABLES = new Set(['zerver_message', 'zerver_usermessage']);
const USER_MESSAGE_TABLE = new Set(['zerver_usermessage']);
/** Message ids drawn from the sequence at a time. */
const ID_BLOCK = 10_000;

/**
 * One messages-NNNNNN.json, streamed (jsonTableRows): each message and per-user row is checked,
 * mapped and written by COPY as it is read. The rows of a partial's per-user table normally follow its
 * messages; when they come first, they are read in a second pass over the file.
 */
async function importMessageFile(ctx: MessageContext, file: string): Promise<void> {
  const fileIds = new Map<number, number>();
  let copy: CopyStream | null = null;
  let copying = '';
  const switchTo = async (table: string) => {
    if (copying === table) return;
    if (copy) {
      await timed(ctx, `${copying} end`, copy.end());
      ctx.count(copying, copy.rows);
    }
    copy = table ? ctx.copy.start(table, table === 'message' ? MESSAGE_COLUMNS : USER_MESSAGE_COLUMNS) : null;
    copying = table;
  };
  const m = new Reader(file, 'zerver_message');
  const u = new Reader(file, 'zerver_usermessage');
  let sawMessages = false;
  let deferred = false;

  const message = async (row: Row) => {
    const entry = where(file, 'zerver_message', row);
    const old = m.int(row, 'id');
    if (ctx.freeIds.next === ctx.freeIds.ids.length) {
      await switchTo(''); // no statement may run during a COPY
      ctx.freeIds.ids = await timed(ctx, 'ids', allocateIds(ctx.tx, 'message', ID_BLOCK));
      ctx.freeIds.next = 0;
    }
    await switchTo('message');
    const id = ctx.freeIds.ids[ctx.freeIds.next++]!;
    if (fileIds.has(old) || !ctx.messageIds.add(old, id)) throw new ImportError(`${entry}: the id appears twice`);
    fileIds.set(old, id);
    const sender = m.ref(row, 'sender', ctx.maps.users, 'user');
    const recipient = m.int(row, 'recipient');
    let channelId: number | null = null;
    let direct: number[] = [];
    if (ctx.channelRecipients.has(recipient)) channelId = ctx.channelRecipients.get(recipient)!;
    else if (ctx.personal.has(recipient)) direct = [...new Set([sender, ctx.personal.get(recipient)!])];
    else if (ctx.huddles.has(recipient)) direct = [...new Set([sender, ...ctx.huddles.get(recipient)!])];
    else throw new ImportError(`${entry}: "recipient" points at recipient ${recipient}, which is not in the export`);
    direct.sort((a, b) => a - b);
    const dateSent = m.date(row, 'date_sent');
    if (dateSent === null) throw new ImportError(`${entry}: "date_sent" is missing`);
    const content = rewriteContent(m.str(row, 'content'), ctx.maps);
    const rendered = m.strOrNull(row, 'rendered_content');
    const { json, lastMoved } = rewriteEditHistory(row.edit_history, ctx.maps, entry);
    const client = typeof row.sending_client === 'number' ? (ctx.clients.get(row.sending_client) ?? 'Internal') : 'Internal';
    return copy!.row([
      id, ctx.maps.newRealmId, sender, channelId, channelId === null ? '' : m.str(row, 'subject', ''), channelId === null ? direct : [], content,
      rendered === null ? renderMarkdown(content) : rewriteRendered(rendered, ctx.maps),
      dateSent, m.date(row, 'last_edit_time'), client, json, lastMoved,
    ]);
  };
  const userMessage = async (row: Row) => {
    const bits = row.flags_mask ?? 0;
    if (typeof bits !== 'number' || !Number.isInteger(bits) || bits < 0) throw new ImportError(`${where(file, 'zerver_usermessage', row)}: "flags_mask" must be a non-negative integer`);
    const old = u.int(row, 'message');
    const messageId = fileIds.get(old) ?? u.ref(row, 'message', ctx.messageIds, 'message');
    const userId = u.ref(row, 'user_profile', ctx.maps.users, 'user');
    await switchTo('user_message');
    return copy!.row([messageId, userId, bits]);
  };

  const pass = async (wanted: ReadonlySet<string>, second: boolean) => {
    try {
      for await (const batch of jsonTableRows(path.join(ctx.root, file), wanted)) {
        for (let i = 0; i < batch.rows.length; i++) {
          const table = batch.tables[i]!;
          const row = batch.rows[i]!;
          if (!row || typeof row !== 'object' || Array.isArray(row)) throw new ImportError(`${file}: ${table}: every row must be an object`);
          if (table === 'zerver_message') {
            sawMessages = true;
            const wait = await message(row);
            if (wait) await timed(ctx, 'message rows', wait);
          } else if (table === 'zerver_usermessage') {
            // Per-user rows before the file's messages: read again once the messages are in.
            if (!second && !sawMessages) {
              deferred = true;
              continue;
            }
            if (!second && deferred) continue;
            const wait = await userMessage(row);
            if (wait) await timed(ctx, 'user_message rows', wait);
          }
        }
      }
    } catch (error) {
      if (error instanceof JsonRowsError) throw new ImportError(`${file}: ${error.message}`);
      throw error;
    }
  };
  try {
    await pass(MESSAGE_TABLES, false);
    if (deferred) await pass(USER_MESSAGE_TABLE, true);
    await switchTo('');
  } catch (error) {
    // A COPY still open is abandoned, so that the transaction's connection can roll back.
    const open = copy as CopyStream | null;
    if (open) await open.abort();
    throw error;
  }
}

async function importReactions(ctx: ImportContext, messageIds: IdLookup, emojiIds: Map<number, number>): Promise<void> {
  const { tx, data, maps, count } = ctx;
  const r = new Reader('realm.json', 'zerver_reaction');
  const rows = (data.zerver_reaction ?? []).map((row) => {
    const type = r.str(row, 'reaction_type', 'unicode_emoji');
    let code = r.str(row, 'emoji_code');
    if (type === 'realm_emoji') {
      const id = emojiIds.get(Number(code));
      if (id === undefined) throw new ImportError(`${where('realm.json', 'zerver_reaction', row)}: "emoji_code" points at custom emoji ${code}, which is not in the export`);
      code = String(id);
    }
    return [r.ref(row, 'message', messageIds, 'message'), r.ref(row, 'user_profile', maps.users, 'user'), r.str(row, 'emoji_name'), code, type];
  });
  await insertBatches(tx, 'reaction', [col('message_id', 'int'), col('user_id', 'int'), col('emoji_name', 'text'), col('emoji_code', 'text'), col('reaction_type', 'text')], rows);
  count('reaction', rows.length);
}

// ---------------------------------------------------------------------------------------------
// Per-user data and organization content

async function importUserData(ctx: ImportContext): Promise<void> {
  const { tx, realm, data, maps, progress, count } = ctx;
  const ut = new Reader('realm.json', 'zerver_usertopic');
  const topics = (data.zerver_usertopic ?? []).map((row) => {
    const topic = ut.str(row, 'topic_name');
    return [ut.ref(row, 'user_profile', maps.users, 'user'), ut.ref(row, 'stream', maps.channels, 'channel'), topic, topic.toLowerCase(), ut.int(row, 'visibility_policy'), ut.date(row, 'last_updated', new Date())];
  }).filter((row) => [1, 2, 3].includes(row[4] as number));
  await insertBatches(tx, 'user_topic', [col('user_id', 'int'), col('channel_id', 'int'), col('topic_name', 'text'), col('topic_key', 'text'), col('visibility_policy', 'int'), col('last_updated', 'timestamp')], dedupe(topics, [0, 1, 3]));
  count('user_topic', topics.length);

  const mu = new Reader('realm.json', 'zerver_muteduser');
  const muted = (data.zerver_muteduser ?? []).map((row) => [mu.ref(row, 'user_profile', maps.users, 'user'), mu.ref(row, 'muted_user', maps.users, 'user'), mu.date(row, 'date_muted', new Date())]);
  await insertBatches(tx, 'muted_user', [col('user_id', 'int'), col('muted_user_id', 'int'), col('date_muted', 'timestamp')], dedupe(muted, [0, 1]));
  count('muted_user', muted.length);

  const aw = new Reader('realm.json', 'zerver_alertword');
  const words = (data.zerver_alertword ?? []).map((row) => [aw.ref(row, 'user_profile', maps.users, 'user'), aw.str(row, 'word'), alertWordKey(aw.str(row, 'word'))]);
  await insertBatches(tx, 'alert_word', [col('user_id', 'int'), col('word', 'text'), col('word_key', 'text')], dedupe(words, [0, 2]));
  count('alert_word', words.length);

  const lf = new Reader('realm.json', 'zerver_realmfilter');
  const linkifiers = (data.zerver_realmfilter ?? []).map((row) => [realm.id, lf.str(row, 'pattern'), lf.str(row, 'url_template', ''), lf.intOrNull(row, 'order') ?? 0]);
  await insertBatches(tx, 'realm_linkifier', [col('realm_id', 'int'), col('pattern', 'text'), col('url_template', 'text'), col('order', 'int')], dedupe(linkifiers, [1]));
  count('realm_linkifier', linkifiers.length);
  if (linkifiers.length) await updateRow(tx, 'realm', realm.id, { linkifiers_version: 1 });

  const pg = new Reader('realm.json', 'zerver_realmplayground');
  const playgrounds = (data.zerver_realmplayground ?? []).map((row) => [realm.id, pg.str(row, 'name'), pg.str(row, 'pygments_language'), pg.str(row, 'url_template', '')]);
  await insertBatches(tx, 'realm_playground', [col('realm_id', 'int'), col('name', 'text'), col('pygments_language', 'text'), col('url_template', 'text')], dedupe(playgrounds, [2, 1]));
  count('realm_playground', playgrounds.length);

  const cf = new Reader('realm.json', 'zerver_customprofilefield');
  const fieldRows = data.zerver_customprofilefield ?? [];
  const fieldIds = await allocateIds(tx, 'custom_profile_field', fieldRows.length);
  const fields = new Map<number, number>();
  const fieldTypes = new Map<number, number>();
  const fieldValues = fieldRows.map((row, i) => {
    fields.set(cf.int(row, 'id'), fieldIds[i]!);
    fieldTypes.set(fieldIds[i]!, cf.int(row, 'field_type'));
    let fieldData: unknown = row.field_data ?? {};
    if (typeof fieldData === 'string') {
      try {
        fieldData = fieldData === '' ? {} : JSON.parse(fieldData);
      } catch {
        throw new ImportError(`${where('realm.json', 'zerver_customprofilefield', row)}: "field_data" is not valid JSON`);
      }
    }
    return [fieldIds[i]!, realm.id, cf.int(row, 'field_type'), cf.str(row, 'name'), cf.str(row, 'hint', ''), JSON.stringify(fieldData), cf.intOrNull(row, 'order') ?? i, cf.bool(row, 'display_in_profile_summary', false), cf.bool(row, 'required', false), cf.bool(row, 'editable_by_user', true)];
  });
  await insertBatches(
    tx,
    'custom_profile_field',
    [col('id', 'int'), col('realm_id', 'int'), col('field_type', 'int'), col('name', 'text'), col('hint', 'text'), col('field_data', 'jsonb'), col('order', 'int'), col('display_in_profile_summary', 'bool'), col('required', 'bool'), col('editable_by_user', 'bool')],
    fieldValues,
  );
  const cv = new Reader('realm.json', 'zerver_customprofilefieldvalue');
  const profileValues = (data.zerver_customprofilefieldvalue ?? []).map((row) => {
    const field = cv.ref(row, 'field', fields, 'custom profile field');
    let value = cv.str(row, 'value');
    if (fieldTypes.get(field) === 6) {
      // A users field holds a JSON list of user ids.
      try {
        const list = JSON.parse(value) as unknown;
        if (Array.isArray(list)) value = JSON.stringify(list.map((id) => (typeof id === 'number' ? (maps.users.get(id) ?? id) : id)));
      } catch {}
    }
    return [cv.ref(row, 'user_profile', maps.users, 'user'), field, value, cv.strOrNull(row, 'rendered_value')];
  });
  await insertBatches(tx, 'custom_profile_field_value', [col('user_id', 'int'), col('field_id', 'int'), col('value', 'text'), col('rendered_value', 'text')], dedupe(profileValues, [0, 1]));
  count('custom_profile_field', fieldValues.length);
  count('custom_profile_field_value', profileValues.length);
  progress('user topics, muted users, alert words, linkifiers, profile fields', topics.length + muted.length + words.length + linkifiers.length + fieldValues.length);
}

/** The first row of each key (unique constraints of Parley that Zulip's tables may not have). */
function dedupe(rows: unknown[][], key: number[]): unknown[][] {
  const seen = new Set<string>();
  return rows.filter((row) => {
    const k = JSON.stringify(key.map((i) => (typeof row[i] === 'string' ? (row[i] as string).toLowerCase() : row[i])));
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
