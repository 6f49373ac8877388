// Drafts stored on the server: create (a batch, all or nothing), replace, delete. Each draft is checked
// and resolved as Zulip does (in its order, with its messages) before anything is written; the write
// and its `drafts` event, for the owner's own queues, happen in one transaction.
import type { EventData, Schema } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { deleteDraftOfUser, insertDrafts, replaceDraftOfUser, type DraftData } from '../data/drafts.repo.ts';
import { directRecipientsByIds } from '../data/messages.repo.ts';
import { accessChannelById, loadChannelViewer, type PermissionSubject } from '../access/channels.ts';
import { accessOwnDraft, checkDraftsSynchronization, draftDoesNotExist } from '../access/drafts.ts';
import { JsonableError } from '../errors.ts';
import { MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH } from '../lib/message-limits.ts';
import { formatDraft } from '../queries/drafts.ts';

export type DraftInput = Schema<'DraftInput'>;

// ---------------------------------------------------------------------------------------------
// Text rules

/** What Zulip's parameter parser strips around a required string (Unicode White_Space). */
const PARSER_SPACE: ReadonlySet<string> = new Set([
  ...'\t\n\v\f\r \u0085\u00a0\u1680\u2028\u2029\u202f\u205f\u3000',
  ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)),
]);
/** What Zulip's message normalisation strips at the end (Python's whitespace: \x1c-\x1f too). */
const PYTHON_SPACE: ReadonlySet<string> = new Set([...PARSER_SPACE, '\u001c', '\u001d', '\u001e', '\u001f']);

/** `text` without the characters of `space` at its start (when `start`) and its end (linear time). */
function strip(text: string, space: ReadonlySet<string>, start: boolean): string {
  let from = 0;
  let to = text.length;
  if (start) while (from < to && space.has(text[from]!)) from++;
  while (to > from && space.has(text[to - 1]!)) to--;
  return text.slice(from, to);
}

const MESSAGE_TRUNCATED = '\n[message truncated]';
const TOPIC_TRUNCATED = '...';

/** Cut to `max` characters (code points), the end replaced by `suffix`, as Zulip's truncate_content. */
function truncate(text: string, max: number, suffix: string): string {
  const chars = [...text];
  return chars.length > max ? chars.slice(0, max - [...suffix].length).join('') + suffix : text;
}

/**
 * The parameter-parsing step: content is a required string, stripped; blank is refused with the
 * parameter's path (`drafts[1]["content"] cannot be blank`). Zulip checks every draft of the request
 * this way before checking any of them further.
 */
function requiredContent(content: string, path: string): string {
  const stripped = strip(content, PARSER_SPACE, true);
  if (stripped === '') throw new JsonableError(`${path}["content"] cannot be blank`);
  return stripped;
}

/**
 * Zulip's message-body normalisation: trailing blanks and leading newlines go, NUL refused, long text
 * cut. (Over HTTP a NUL never gets here: the parameter decoder refuses it in every parameter first.)
 */
function normalizeContent(content: string): string {
  const body = strip(content, PYTHON_SPACE, false).replace(/^\n+/, '');
  if (body === '') throw new JsonableError('Message must not be empty');
  if (body.includes('\u0000')) throw new JsonableError('Message must not contain null bytes');
  return truncate(body, MAX_MESSAGE_LENGTH, MESSAGE_TRUNCATED);
}

/** The last edit time: the given UNIX seconds (rounded to microseconds) or now; never before 1970. */
function lastEditTime(timestamp: number | null | undefined): Date {
  const given = timestamp ?? Date.now() / 1000;
  const seconds = Math.round(given * 1e6) / 1e6;
  if (seconds < 0) throw new JsonableError('Timestamp must not be negative.');
  return new Date(seconds * 1000);
}

// ---------------------------------------------------------------------------------------------
// Addressing

interface Resolving {
  db: Db;
  realm: Realm;
  user: User;
  /** The caller's channel permissions, loaded once and only when a channel draft needs them. */
  viewer(): Promise<PermissionSubject>;
}

function resolving(db: Db, realm: Realm, user: User): Resolving {
  let subject: Promise<PermissionSubject> | null = null;
  return { db, realm, user, viewer: () => (subject ??= loadChannelViewer(db, user)) };
}

/**
 * A direct-message draft's `to` as it reads back: the recipients other than the owner (ascending), or
 * only the owner for a draft to oneself. Unknown ids are refused first, then deactivated users.
 */
async function directRecipientIds(ctx: Resolving, to: number[]): Promise<number[]> {
  const ids = [...new Set(to)].sort((a, b) => a - b);
  const found = new Map((await directRecipientsByIds(ctx.db, ctx.realm.id, ids)).map((u) => [u.id, u]));
  for (const id of ids) if (!found.has(id)) throw new JsonableError(`Invalid user ID ${id}`);
  for (const id of ids) {
    const person = found.get(id)!;
    if (!person.is_active) throw new JsonableError(`'${person.email}' is no longer using Zulip.`);
  }
  const others = ids.filter((id) => id !== ctx.user.id);
  return others.length > 0 ? others : [ctx.user.id];
}

/**
 * Checks one draft (its content already through requiredContent) and resolves what is stored, in
 * Zulip's order: content, timestamp, then the addressee. `to` counts only for channel drafts and
 * direct-message drafts; a direct-message draft without recipients is stored unaddressed.
 */
async function resolveDraft(ctx: Resolving, input: DraftInput, content: string): Promise<DraftData> {
  const text = normalizeContent(content);
  const editTime = lastEditTime(input.timestamp);
  if (input.type === 'stream') {
    const topic = truncate(input.topic, MAX_TOPIC_LENGTH, TOPIC_TRUNCATED);
    if (topic.includes('\u0000')) throw new JsonableError('Topic must not contain null bytes');
    if (input.to.length !== 1) throw new JsonableError('Must specify exactly 1 channel ID for channel messages');
    const { channel } = await accessChannelById(ctx.db, ctx.realm, await ctx.viewer(), input.to[0]!, { requireContentAccess: true, allowArchived: false });
    return { type: 'stream', toIds: [channel.id], topic, content: text, lastEditTime: editTime };
  }
  if (input.type === 'private' && input.to.length > 0) {
    return { type: 'private', toIds: await directRecipientIds(ctx, input.to), topic: '', content: text, lastEditTime: editTime };
  }
  return { type: '', toIds: [], topic: '', content: text, lastEditTime: editTime };
}

// ---------------------------------------------------------------------------------------------
// Operations

/** POST /drafts: every draft is checked before any is stored; the ids come back in the order given. */
export async function doCreateDrafts(deps: AppDeps, realm: Realm, user: User, drafts: DraftInput[]): Promise<number[]> {
  await checkDraftsSynchronization(deps.db, user);
  const contents = drafts.map((d, i) => requiredContent(d.content, `drafts[${i}]`));
  const ctx = resolving(deps.db, realm, user);
  const resolved: DraftData[] = [];
  for (const [i, draft] of drafts.entries()) resolved.push(await resolveDraft(ctx, draft, contents[i]!));
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const rows = await insertDrafts(tx, user.id, resolved);
    const payload: EventData<'drafts', 'add'> = { type: 'drafts', op: 'add', drafts: rows.map(formatDraft) };
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
    return rows.map((r) => r.id);
  });
}

/** PATCH /drafts/{draft_id}: replaces the whole draft (validated as on creation). */
export async function doEditDraft(deps: AppDeps, realm: Realm, user: User, draftId: number, input: DraftInput): Promise<void> {
  await checkDraftsSynchronization(deps.db, user);
  const content = requiredContent(input.content, 'draft');
  await accessOwnDraft(deps.db, user, draftId);
  const data = await resolveDraft(resolving(deps.db, realm, user), input, content);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await replaceDraftOfUser(tx, user.id, draftId, data);
    if (!row) throw draftDoesNotExist(); // deleted meanwhile
    const payload: EventData<'drafts', 'update'> = { type: 'drafts', op: 'update', draft: formatDraft(row) };
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
  });
}

/** DELETE /drafts/{draft_id}. */
export async function doDeleteDraft(deps: AppDeps, realm: Realm, user: User, draftId: number): Promise<void> {
  await checkDraftsSynchronization(deps.db, user);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    if (!(await deleteDraftOfUser(tx, user.id, draftId))) throw draftDoesNotExist();
    const payload: EventData<'drafts', 'remove'> = { type: 'drafts', op: 'remove', draft_id: draftId };
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
  });
}
