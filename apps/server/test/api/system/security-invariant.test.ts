// Issue 20, "prove the invariant, not just the cases": random sequences of actions by users of every
// role — channels created (public, private with shared or protected history, web-public), archived,
// unarchived, described and made private or public; subscriptions of oneself and of others; channel and
// direct messages, by id and by address, some linking channels; typing; e-mail visibility; roles;
// deactivation and reactivation; new users; fresh queues; and (issue 22) messages that change: content
// edits (by the sender or refused to others), moves of a message, the later ones or a whole topic to
// another topic or channel (public and private alike), resolving and unresolving, deleting a message or
// a topic, reactions added and removed, typing while editing — while every active user holds two event
// queues of varied kinds (everything; all_public_streams; a narrow; event_types). After each step every
// queue is drained (GET /events, dont_block, acknowledging) and:
//
//  SAFETY   every event a user received is about something they could read through the API right then,
//           asked as that user (GET /messages/{id}, GET /streams/{id}, GET /users and /users/{id},
//           GET /users/me/subscriptions), no real address hidden from them appears in it, and no
//           message links a channel its sender (or editor) could not see; /register's state obeys the
//           same rule. For changes: `update_message`, `reaction` and `typing_edit_message` only about a
//           message the receiver can read after the step (an `update_message`'s content, topic and
//           channel are what GET /messages/{id} then shows them, its `orig_content` one they could read
//           before); `delete_message` only about messages the receiver could read just before the step
//           (GET /messages/{id} and the topic's GET /messages, asked before it), which they can no
//           longer read after it — a user a move took a message from hears nothing more about it;
//  LIVENESS every message sent in the step reached, exactly once, each queue Zulip's rules say receives
//           it (subscriber at send time, direct-message participant, or all_public_streams queue of a
//           user who may read the public channel; within the queue's event_types and narrow); every
//           user a subscribe answer says it subscribed got one subscription/add for the channel; and a
//           content edit, a reaction and a deletion reached, once, every queue taking every event of
//           each participant or subscriber who can read the message (after the step; before it, for
//           a deletion).
//  FILES    (issue 24) some sends upload a file and link it (`[f3](/user_uploads/…)`), or link one uploaded
//           before (mostly the sender's own, now and then someone else's); some edits link one. After
//           such a step, for every user and a spectator, and otherwise for a few (user, file) pairs every
//           other step, GET of the file succeeds exactly when the user is its uploader or can read (GET
//           /messages/{id}, as them; without credentials for the spectator) a message whose content
//           links it, sent or edited by someone who could read the file then. Moves, deletions,
//           unsubscribes, privacy and role changes act on files only through those messages; an edit
//           whose content drops the link takes it back. `attachment` events reach only the uploader.
//
// Every run starts with REGRESSION_PREFIX (invariant-model.ts: minimised reproductions of what this test
// found), then draws PARLEY_INVARIANT_STEPS random steps (default below) from PARLEY_INVARIANT_SEED.
// A failure prints the seed, each violation class with examples, and the step log. To reproduce and cut
// down: PARLEY_INVARIANT_DUMP=<file> writes the run's actions as JSON; PARLEY_INVARIANT_REPLAY=<file or
// JSON> runs exactly those actions (no prefix); PARLEY_INVARIANT_LOG=<file> writes the full step log,
// every violation, and request counts.
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { loadConfig } from '../../../src/config.ts';
import { PEOPLE, TEST_PASSWORD, type Person as FixturePerson } from '../../helpers/fixtures.ts';
import { uniqueEmail } from '../../helpers/people.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { download, multipart } from '../../helpers/uploads.ts';
import { waitFor } from '../../helpers/wait.ts';
import { passwordResetKey, PASSWORD_RESET_PATH } from '../../../src/actions/password-reset.ts';
import {
  describeAction,
  describeSpec,
  drawAction,
  drawQueueSpec,
  hashSeed,
  privacyParams,
  Rng,
  REGRESSION_PREFIX,
  type Action,
  type FileLink,
  type GenWorld,
  type Privacy,
  type QueueSpec,
  type Role,
} from '../../helpers/invariant-model.ts';
import {
  addressFinder,
  ApiView,
  asArray,
  asNumber,
  asString,
  conversationOf,
  deletedIdsOf,
  isObject,
  kindOf,
  linkedChannelIds,
  streamIdsOf,
  zulipSeesDeliveryEmail,
  type Json,
} from '../../helpers/invariant-oracle.ts';

const SEED_TEXT = process.env.PARLEY_INVARIANT_SEED ?? '20';
const SEED = /^\d+$/.test(SEED_TEXT) ? Number(SEED_TEXT) >>> 0 : hashSeed(SEED_TEXT);
const STEPS = Number(process.env.PARLEY_INVARIANT_STEPS ?? 150);
const REPLAY = process.env.PARLEY_INVARIANT_REPLAY;
const DUMP = process.env.PARLEY_INVARIANT_DUMP;

interface Member {
  key: string;
  id: number;
  /** The real address (delivery_email). */
  email: string;
  apiKey: string;
  client: ParleyClient;
  active: boolean;
  role: Role;
  /** email_address_visibility as last set (read at registration, then kept from successful changes). */
  visibility: number;
  queues: Queue[];
  /** Queues dropped at deactivation, checked to be gone at reactivation. */
  orphaned: Queue[];
  registrations: number;
  pinned: boolean;
}

interface Queue {
  id: string;
  owner: Member;
  spec: QueueSpec;
  /** The newest event id acknowledged (starts at the registration's last_event_id). */
  lastAck: number;
  /** last_event_id of the registration: every event delivered must come after it. */
  registeredAt: number;
  /** Message ids delivered so far (exactly-once across the whole run). */
  seenMessages: Set<number>;
}

interface Violation {
  cls: string;
  step: number;
  detail: string;
}

interface SentMessage {
  id: number;
  sender: Member;
  kind: 'channel' | 'direct';
  channelId?: number;
  channelName?: string;
  topic?: string;
  participants?: Member[];
  /** The channel a link points at that the sender could not see when sending (null: none). */
  forbiddenLink: number | null;
}

/** What the API said just before the step (for what the step may take away). */
interface Before {
  view: ApiView;
  /**
   * Steps that may delete messages or take them away (edit, move, delete): the messages each active
   * user could read just before — the target, and for moves and topic deletions its topic's messages.
   * null: the step is not one of them, so it owes nobody a `delete_message`.
   */
  readable: Map<string, Set<number>> | null;
  /** The message the step is about (by its reference), when the run knows it. */
  messageId: number | null;
  /** `${viewer}:${channelId}` → whether GET /streams/{id} succeeded as the viewer. */
  visible: Map<string, boolean>;
  /** send-channel: who was subscribed to the channel, and whether it was invite-only. */
  subscribed: Map<string, boolean>;
  inviteOnly: boolean;
  forbiddenLink: number | null;
  /** A send (or edit) linking a file uploaded earlier: whether its sender could read the file just before. */
  fileReadable: boolean;
  /** The files the message the step is about linked just before. */
  linkedFiles: RunFile[];
}

/** A file the run uploaded, and the messages the run sent (or edited) that link it. */
interface RunFile {
  ref: string;
  url: string;
  owner: Member;
  /** Messages whose content links the file, sent by someone who could read it then. */
  links: Set<number>;
}

let env: TestServer;
/** Milliseconds spent per phase (diagnostics for PARLEY_INVARIANT_LOG). */
const timing = { before: 0, execute: 0, after: 0, drain: 0, checks: 0, files: 0 };
/** Requests made, by method and path (diagnostics for PARLEY_INVARIANT_LOG). */
const requestCounts = new Map<string, number>();
/** Events checked, by kind (diagnostics for PARLEY_INVARIANT_LOG). */
const eventCounts = new Map<string, number>();
const tally = (key: string) => eventCounts.set(key, (eventCounts.get(key) ?? 0) + 1);
const countingFetch: typeof fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const method = input instanceof Request ? input.method : (init?.method ?? 'GET');
  const key = `${method} ${url.pathname.replace(/\/\d+/g, '/{id}')}`;
  requestCounts.set(key, (requestCounts.get(key) ?? 0) + 1);
  return fetch(input, init);
};
const members = new Map<string, Member>();
const channelIds = new Map<string, number>();
/** Message references of the run (invariant-model.ts) → ids, and back. */
const messageRefs = new Map<string, number>();
const refOf = new Map<number, string>();
/** The notification bot's notices seen so far (their references are `n<count>`). */
let notices = 0;
/** Files the run uploaded, by reference (invariant-model.ts). */
const files = new Map<string, RunFile>();
/** Which (user, file) pairs the file check samples (a stream of its own: the actions stay as drawn). */
let fileRng: Rng;
/** Member key → messages a move took from them (they got `delete_message` and can no longer read them). */
const lostAccess = new Map<string, Set<number>>();
const violations: Violation[] = [];
const log: string[] = [];
let step = 0;
/** Real addresses of every human of the organization (for the hidden-address scan), by user id. */
const realAddresses = new Map<number, string>();
let realmHost = '';

function violation(cls: string, detail: string) {
  violations.push({ cls, step, detail });
}

const onServerError = (what: string, status: number, body: unknown) => violation('server-error', `${what}: ${status} ${JSON.stringify(body)}`);
const clientOf = (key: string): ParleyClient => {
  if (key === HOOK_KEY && hook) return hook.client;
  const m = members.get(key);
  if (!m) throw new Error(`unknown member ${key}`);
  return m.client;
};
const newView = () => new ApiView(clientOf, onServerError);
const activeMembers = () => [...members.values()].filter((m) => m.active);
const errorMsg = (error: unknown) => (isObject(error) ? (asString(error['msg']) ?? JSON.stringify(error)) : String(error));
const errorCode = (error: unknown) => (isObject(error) ? asString(error['code']) : undefined);

// ---------------------------------------------------------------------------------------------------
// Queues

function specRng(m: Member): Rng {
  return new Rng(hashSeed(SEED, 'queue', m.key, m.registrations++));
}

async function register(m: Member, spec: QueueSpec): Promise<Queue | null> {
  const body = {
    apply_markdown: spec.applyMarkdown,
    client_gravatar: false,
    all_public_streams: spec.allPublicStreams,
    narrow: spec.narrow,
    client_capabilities: { stream_typing_notifications: spec.streamTyping },
    include_subscribers: spec.includeSubscribers,
    fetch_event_types: ['message', 'user_settings', 'subscription', 'stream', 'realm_user'],
    ...(spec.eventTypes ? { event_types: spec.eventTypes } : {}),
  };
  const res = await m.client.POST('/register', { body });
  if (res.response.status >= 500) onServerError(`POST /register as ${m.key}`, res.response.status, res.error);
  if (!res.data) {
    // A guest cannot register all_public_streams (Zulip's rule): take the same queue without it.
    if (spec.allPublicStreams) return register(m, { ...spec, allPublicStreams: false });
    violation('register-failed', `${m.key} ${describeSpec(spec)}: ${errorMsg(res.error)}`);
    return null;
  }
  const state = res.data as unknown as Json;
  const settings = state['user_settings'];
  if (isObject(settings) && typeof settings['email_address_visibility'] === 'number') m.visibility = settings['email_address_visibility'];
  const registeredAt = asNumber(state['last_event_id']) ?? 0;
  await checkRegisterState(m, state);
  const q: Queue = { id: asString(state['queue_id'])!, owner: m, spec, lastAck: registeredAt, registeredAt, seenMessages: new Set() };
  // A fresh queue holds nothing from before it existed, whatever last_event_id the client sends
  // (-1, or an id older than the registration's): Zulip's queues start empty.
  for (const lastEventId of [-1, Math.max(0, registeredAt - 40)]) {
    const polled = await m.client.GET('/events', { params: { query: { queue_id: q.id, last_event_id: lastEventId, dont_block: true } } });
    if (!polled.data) {
      violation('fresh-queue-poll-failed', `${m.key} last_event_id=${lastEventId}: ${errorMsg(polled.error)}`);
      continue;
    }
    const stale = asArray(polled.data.events).filter(isObject).filter((e) => (asNumber(e['id']) ?? 0) <= registeredAt && e['type'] !== 'heartbeat');
    if (stale.length) {
      const kinds = [...new Set(stale.map(kindOf))].slice(0, 6).join(', ');
      violation('replay-before-registration', `${m.key}'s new queue (registered at event ${registeredAt}) polled with last_event_id=${lastEventId} got ${stale.length} older events (${kinds})`);
    }
  }
  m.queues.push(q);
  return q;
}

/**
 * The state /register answers is held to the same rule as events: every channel it lists (subscribed,
 * unsubscribed, never subscribed, streams) is one GET /streams/{id} shows the user; a subscriber list is
 * non-empty only where GET /streams/{id}/members answers them; users carry no hidden address and their
 * `email` is what GET /users shows.
 */
async function checkRegisterState(m: Member, state: Json) {
  const view = newView();
  const text = JSON.stringify(state);
  const leaked = addressFinder(await hiddenAddresses(view, m))(text);
  if (leaked.length) violation('hidden-address:register', `POST /register as ${m.key} carries ${leaked.join(', ')}, hidden from them`);
  for (const list of ['subscriptions', 'unsubscribed', 'never_subscribed', 'streams']) {
    for (const s of asArray(state[list]).filter(isObject)) {
      const sid = asNumber(s['stream_id']);
      if (sid === undefined) continue;
      if (!(await view.stream(m.key, sid)).ok) violation(`register-invisible-channel:${list}`, `POST /register as ${m.key} lists channel ${sid} (${String(s['name'])}) in ${list}, but GET /streams/${sid} refuses them`);
      else if (asArray(s['subscribers']).length > 0 && !(await view.members(m.key, sid)).ok) {
        violation(`register-subscribers:${list}`, `POST /register as ${m.key} gives the subscribers of channel ${sid} (${String(s['name'])}) in ${list}, but GET /streams/${sid}/members refuses them`);
      }
    }
  }
  const seen = await view.users(m.key);
  for (const u of asArray(state['realm_users']).filter(isObject)) {
    const uid = asNumber(u['user_id']);
    const shown = uid !== undefined && seen.ok ? seen.value.get(uid) : undefined;
    if (!shown) continue;
    if (typeof u['delivery_email'] === 'string' && u['delivery_email'] !== shown.deliveryEmail) violation('delivery-email-leak:register', `POST /register as ${m.key} gives user ${uid}'s delivery_email, which GET /users hides`);
    if (u['email'] !== shown.email) violation('email-mismatch:register.realm_users', `POST /register as ${m.key} gives user ${uid}'s email ${String(u['email'])}, GET /users ${shown.email}`);
  }
}

async function registerInitialQueues(m: Member) {
  const rng = specRng(m);
  const names = [...channelIds.keys()];
  await register(m, drawQueueSpec(rng, m.role, names, true));
  await register(m, drawQueueSpec(rng, m.role, names, false));
}

/** Drains a queue (dont_block), acknowledging what it got; null when the queue is gone. */
async function drain(q: Queue): Promise<Json[] | null> {
  const res = await q.owner.client.GET('/events', { params: { query: { queue_id: q.id, last_event_id: q.lastAck, dont_block: true } } });
  if (res.response.status >= 500) onServerError(`GET /events as ${q.owner.key}`, res.response.status, res.error);
  if (!res.data) {
    if (errorCode(res.error) === 'BAD_EVENT_QUEUE_ID') return null;
    violation('poll-failed', `${q.owner.key} queue ${describeSpec(q.spec)}: ${res.response.status} ${errorMsg(res.error)}`);
    return [];
  }
  const events = asArray(res.data.events).filter(isObject).filter((e) => e['type'] !== 'heartbeat');
  for (const e of events) q.lastAck = Math.max(q.lastAck, asNumber(e['id']) ?? q.lastAck);
  return events;
}

// ---------------------------------------------------------------------------------------------------
// Actions

interface Outcome {
  ok: boolean;
  note: string;
  message?: SentMessage;
  /** A content edit, reaction or deletion that succeeded: the message it is owed to its readers. */
  changed?: number;
  /** Users newly subscribed to a channel (from the answer's `subscribed`): each is owed a subscription/add. */
  subscribed?: { channelId: number; userIds: number[] };
}

/** The users a subscribe answer says it newly subscribed to `channel`. */
function newlySubscribed(data: { subscribed: Record<string, string[]> } | undefined, channel: string): number[] {
  if (!data) return [];
  return Object.entries(data.subscribed)
    .filter(([, names]) => names.some((n) => n.toLowerCase() === channel.toLowerCase()))
    .map(([id]) => Number(id));
}

const idsOf = (keys: readonly string[]) => keys.map((k) => members.get(k)?.id).filter((id): id is number => id !== undefined);

function answered(what: string, res: { response: Response; error?: unknown }, extra = ''): Outcome {
  if (res.response.status >= 500) onServerError(what, res.response.status, res.error);
  if (res.response.ok) return { ok: true, note: `ok${extra}` };
  return { ok: false, note: `${res.response.status} ${errorMsg(res.error)}` };
}

async function before(a: Action): Promise<Before> {
  const view = newView();
  const ref = 'message' in a ? a.message : null;
  const messageId = ref !== null ? (messageRefs.get(ref) ?? null) : null;
  const out: Before = { view, readable: null, messageId, visible: new Map(), subscribed: new Map(), inviteOnly: false, forbiddenLink: null, fileReadable: false, linkedFiles: messageId === null ? [] : [...files.values()].filter((f) => f.links.has(messageId)) };
  const snapshot = async (viewers: Member[], channels: number[]) => {
    await Promise.all(viewers.flatMap((v) => channels.map(async (c) => out.visible.set(`${v.key}:${c}`, (await view.stream(v.key, c)).ok))));
  };
  const channelActions: Action['kind'][] = ['archive', 'unarchive', 'privacy', 'describe', 'subscribe', 'unsubscribe'];
  if (channelActions.includes(a.kind) && 'channel' in a && a.channel !== null) {
    const id = channelIds.get(a.channel);
    if (id !== undefined) await snapshot(activeMembers(), [id]);
  }
  if (a.kind === 'role') {
    const target = members.get(a.target);
    if (target?.active) await snapshot([target], [...channelIds.values()]);
  }
  if (a.kind === 'send-channel') {
    const id = channelIds.get(a.channel);
    if (id !== undefined) {
      await Promise.all(activeMembers().map(async (m) => {
        const subs = await view.subscriptions(m.key);
        out.subscribed.set(m.key, subs.ok && subs.value.has(id));
      }));
      const seen = await view.stream('desdemona', id);
      out.inviteOnly = seen.ok ? seen.value.inviteOnly : true;
    }
  }
  if ((a.kind === 'send-channel' || a.kind === 'send-direct' || a.kind === 'edit-content') && a.file && !a.file.fresh) {
    const f = files.get(a.file.ref);
    const sender = members.get(a.actor);
    if (f && sender?.active) out.fileReadable = await mayReadFile(view, sender, f);
  }
  if ((a.kind === 'send-channel' || a.kind === 'send-direct' || a.kind === 'edit-content') && a.link !== null) {
    const linked = channelIds.get(a.link);
    if (linked !== undefined && members.get(a.actor)?.active && !(await view.stream(a.actor, linked)).ok) out.forbiddenLink = linked;
  }
  if ((a.kind === 'edit-content' || a.kind === 'move' || a.kind === 'delete-message') && messageId !== null) {
    // Who could read the message, and for a move the messages of its topic (and, within a channel, of
    // the topic it goes to: undoing a resolve takes back the bot's notice there).
    const viewers = activeMembers();
    const reads = await Promise.all(viewers.map(async (m) => [m, await view.message(m.key, messageId)] as const));
    out.readable = new Map(viewers.map((m) => [m.key, new Set<number>()]));
    for (const [m, read] of reads) if (read.ok) out.readable.get(m.key)!.add(messageId);
    const seen = reads.find(([, read]) => read.ok)?.[1];
    if (a.kind === 'move' && seen?.ok && seen.value['type'] === 'stream') {
      const sid = asNumber(seen.value['stream_id'])!;
      const topics = [asString(seen.value['subject']) ?? ''];
      if (a.channel === null && a.topic !== null) topics.push(a.topic);
      await snapshotTopics(out, viewers, sid, topics);
    }
  }
  if (a.kind === 'delete-topic') {
    const sid = channelIds.get(a.channel);
    const viewers = activeMembers();
    out.readable = new Map(viewers.map((m) => [m.key, new Set<number>()]));
    if (sid !== undefined) await snapshotTopics(out, viewers, sid, [a.topic]);
  }
  return out;
}

/** Adds to `out.readable` the messages of the topics each viewer can read now. */
async function snapshotTopics(out: Before, viewers: Member[], streamId: number, topics: string[]) {
  await Promise.all(
    viewers.flatMap((m) =>
      topics.map(async (topic) => {
        const ids = await out.view.topicMessageIds(m.key, streamId, topic);
        if (ids.ok) for (const id of ids.value) out.readable!.get(m.key)!.add(id);
      }),
    ),
  );
}

function content(a: { link: string | null; linkTopic?: boolean }, verb = 'says hello'): string {
  return `step ${step} ${verb}${a.link ? ` see #**${a.link}${a.linkTopic ? '>t1' : ''}**` : ''}`;
}

/** A message the run sent (or a notice it saw) becomes one the generator may pick. */
function remember(ref: string, id: number, sender: string, channel: string | null, topic: string | null, world: GenWorld) {
  messageRefs.set(ref, id);
  refOf.set(id, ref);
  world.messages.push({ ref, sender, channel, topic, deleted: false, reactions: [] });
}

async function execute(a: Action, pre: Before, world: GenWorld): Promise<Outcome> {
  const actor = members.get(a.actor);
  if (!actor || !actor.active) return { ok: false, note: 'skipped (actor unknown or deactivated)' };
  const c = actor.client;
  const channelId = 'channel' in a && a.channel !== null ? channelIds.get(a.channel) : undefined;
  const needChannel = () => channelId === undefined;
  switch (a.kind) {
    case 'create-channel': {
      const p = privacyParams(a.privacy);
      const res = await c.POST('/users/me/subscriptions', {
        body: {
          subscriptions: [{ name: a.channel }],
          principals: idsOf(a.principals),
          invite_only: p.is_private,
          history_public_to_subscribers: p.history_public_to_subscribers,
          is_web_public: p.is_web_public,
        },
      });
      const out = answered('create channel', res);
      if (out.ok) {
        const found = await c.GET('/get_stream_id', { params: { query: { stream: a.channel } } });
        if (found.data) {
          channelIds.set(a.channel, found.data.stream_id);
          out.note += ` id=${found.data.stream_id}`;
          world.channels.push({ name: a.channel, archived: false, privacy: a.privacy });
          out.subscribed = { channelId: found.data.stream_id, userIds: newlySubscribed(res.data, a.channel) };
        }
      }
      return out;
    }
    case 'archive': {
      if (needChannel()) return { ok: false, note: 'skipped (no such channel)' };
      const out = answered('archive', await c.DELETE('/streams/{stream_id}', { params: { path: { stream_id: channelId! } } }));
      if (out.ok) for (const ch of world.channels) if (ch.name === a.channel) ch.archived = true;
      return out;
    }
    case 'unarchive': {
      if (needChannel()) return { ok: false, note: 'skipped (no such channel)' };
      const out = answered('unarchive', await c.PATCH('/streams/{stream_id}', { params: { path: { stream_id: channelId! } }, body: { is_archived: false } }));
      if (out.ok) for (const ch of world.channels) if (ch.name === a.channel) ch.archived = false;
      return out;
    }
    case 'privacy': {
      if (needChannel()) return { ok: false, note: 'skipped (no such channel)' };
      const out = answered('privacy', await c.PATCH('/streams/{stream_id}', { params: { path: { stream_id: channelId! } }, body: privacyParams(a.privacy) }));
      if (out.ok) for (const ch of world.channels) if (ch.name === a.channel) ch.privacy = a.privacy;
      return out;
    }
    case 'describe': {
      if (needChannel()) return { ok: false, note: 'skipped (no such channel)' };
      return answered('describe', await c.PATCH('/streams/{stream_id}', { params: { path: { stream_id: channelId! } }, body: { description: `described at step ${step}` } }));
    }
    case 'subscribe': {
      const body = { subscriptions: [{ name: a.channel }], ...(a.principals ? { principals: idsOf(a.principals) } : {}) };
      const res = await c.POST('/users/me/subscriptions', { body });
      const out = answered('subscribe', res);
      const added = newlySubscribed(res.data, a.channel);
      if (added.length && channelId !== undefined) {
        out.subscribed = { channelId, userIds: added };
        out.note += ` +[${added.map((id) => [...members.values()].find((m) => m.id === id)?.key ?? id).join(',')}]`;
      }
      return out;
    }
    case 'unsubscribe': {
      const body = { subscriptions: [a.channel], ...(a.principals ? { principals: idsOf(a.principals) } : {}) };
      return answered('unsubscribe', await c.DELETE('/users/me/subscriptions', { body }));
    }
    case 'send-channel': {
      if (needChannel()) return { ok: false, note: 'skipped (no such channel)' };
      const file = await fileFor(a, actor);
      if (file === null) return { ok: false, note: 'skipped (file not uploaded)' };
      const mentionsHook = hookTriggers(0.3);
      const res = await c.POST('/messages', { body: { type: 'stream', to: a.byId ? String(channelId) : a.channel, topic: a.topic, content: content(a) + fileText(file) + (mentionsHook ? ` @**${hook!.fullName}**` : '') } });
      const out = answered('send to channel', res);
      if (res.data && mentionsHook) hook!.triggered.push(res.data.id);
      if (res.data) {
        out.note += ` m=${res.data.id}${pre.forbiddenLink !== null ? ' (links an invisible channel)' : ''}`;
        out.message = { id: res.data.id, sender: actor, kind: 'channel', channelId, channelName: a.channel, topic: a.topic, forbiddenLink: pre.forbiddenLink };
        if (a.ref) remember(a.ref, res.data.id, actor.key, a.channel, a.topic, world);
        linkFile(a, pre, file, res.data.id);
      }
      return out;
    }
    case 'send-direct': {
      const recipients = a.to.map((k) => members.get(k)).filter((m): m is Member => m !== undefined);
      let to: string;
      if (a.byEmail) {
        // The addresses as the sender sees them (GET /users as the sender).
        const seen = await pre.view.users(actor.key);
        if (!seen.ok) return { ok: false, note: `skipped (GET /users: ${seen.msg})` };
        to = recipients.map((r) => seen.value.get(r.id)?.email ?? r.email).join(',');
      } else to = JSON.stringify(recipients.map((r) => r.id));
      // Now and then the outgoing-webhook bot takes part too (by id; only while it is active, so that the
      // send succeeds as drawn).
      const withHook = !a.byEmail && hookTriggers(0.2) && (await hookActive());
      if (withHook) to = JSON.stringify([...recipients.map((r) => r.id), hook!.id]);
      const file = await fileFor(a, actor);
      if (file === null) return { ok: false, note: 'skipped (file not uploaded)' };
      const res = await c.POST('/messages', { body: { type: 'direct', to, content: content(a) + fileText(file) } });
      const out = answered('send direct', res);
      if (res.data && withHook) hook!.triggered.push(res.data.id);
      if (res.data) {
        out.note += ` m=${res.data.id}${pre.forbiddenLink !== null ? ' (links an invisible channel)' : ''}`;
        out.message = { id: res.data.id, sender: actor, kind: 'direct', participants: [actor, ...recipients], forbiddenLink: pre.forbiddenLink };
        if (a.ref) remember(a.ref, res.data.id, actor.key, null, null, world);
        linkFile(a, pre, file, res.data.id);
      }
      return out;
    }
    case 'send-hidden-address': {
      const target = members.get(a.to);
      if (!target) return { ok: false, note: 'skipped (no such user)' };
      const seen = await pre.view.users(actor.key);
      const shown = seen.ok ? seen.value.get(target.id) : undefined;
      const real = target.email.toLowerCase();
      if (shown && (shown.email.toLowerCase() === real || shown.deliveryEmail?.toLowerCase() === real)) return { ok: false, note: 'skipped (address visible to the sender)' };
      const res = await c.POST('/messages', { body: { type: 'direct', to: target.email, content: content({ link: null }) } });
      const out = answered('send to a hidden address', res);
      if (res.data) {
        violation('dm-to-hidden-address-accepted', `${actor.key} sent a direct message to ${target.key}'s real address ${target.email}, hidden from them, and it was delivered (m=${res.data.id}): the address is confirmed and tied to user ${target.id}`);
        out.message = { id: res.data.id, sender: actor, kind: 'direct', participants: target.active ? [actor, target] : [actor], forbiddenLink: null };
      }
      return out;
    }
    case 'typing-direct':
      return answered('typing', await c.POST('/typing', { body: { op: 'start', to: idsOf(a.to) } }));
    case 'typing-channel': {
      if (needChannel()) return { ok: false, note: 'skipped (no such channel)' };
      return answered('typing', await c.POST('/typing', { body: { op: 'start', type: 'channel', stream_id: channelId!, topic: a.topic } }));
    }
    case 'visibility': {
      const out = answered('visibility', await c.PATCH('/settings', { body: { email_address_visibility: a.value } }));
      if (out.ok) actor.visibility = a.value;
      return out;
    }
    case 'role': {
      const target = members.get(a.target);
      if (!target) return { ok: false, note: 'skipped (no such user)' };
      const out = answered('role', await c.PATCH('/users/{user_id}', { params: { path: { user_id: target.id } }, body: { role: a.role } }));
      if (out.ok) {
        target.role = a.role;
        const u = world.users.find((x) => x.key === target.key);
        if (u) u.role = a.role;
      }
      return out;
    }
    case 'deactivate': {
      const target = members.get(a.target);
      if (!target) return { ok: false, note: 'skipped (no such user)' };
      const out = answered('deactivate', await c.DELETE('/users/{user_id}', { params: { path: { user_id: target.id } } }));
      if (out.ok) {
        target.active = false;
        target.orphaned.push(...target.queues);
        target.queues = [];
        const u = world.users.find((x) => x.key === target.key);
        if (u) u.active = false;
      }
      return out;
    }
    case 'reactivate': {
      const target = members.get(a.target);
      if (!target) return { ok: false, note: 'skipped (no such user)' };
      const out = answered('reactivate', await c.POST('/users/{user_id}/reactivate', { params: { path: { user_id: target.id } } }));
      if (out.ok) {
        target.active = true;
        const u = world.users.find((x) => x.key === target.key);
        if (u) u.active = true;
        // Deactivation ended every queue of theirs: polling one now answers BAD_EVENT_QUEUE_ID.
        for (const q of target.orphaned) {
          const res = await target.client.GET('/events', { params: { query: { queue_id: q.id, last_event_id: q.lastAck, dont_block: true } } });
          if (errorCode(res.error) !== 'BAD_EVENT_QUEUE_ID') {
            violation('queue-survived-deactivation', `${target.key}'s queue ${describeSpec(q.spec)} answered ${res.response.status} after deactivation and reactivation${res.data ? ` with ${res.data.events.length} events` : ''}`);
          }
        }
        target.orphaned = [];
        await registerInitialQueues(target);
      }
      return out;
    }
    case 'create-user': {
      const email = uniqueEmail(a.user);
      const res = await c.POST('/users', { body: { email, password: TEST_PASSWORD, full_name: `Invariant ${a.user}` } });
      const out = answered('create user', res);
      if (!res.data) return out;
      if (a.role !== 400) {
        const promoted = await members.get('desdemona')!.client.PATCH('/users/{user_id}', { params: { path: { user_id: res.data.user_id } }, body: { role: a.role } });
        if (!promoted.response.ok) return { ok: true, note: `created, role change failed: ${errorMsg(promoted.error)}` };
      }
      const m = await addMember(a.user, res.data.user_id, email, a.role, false);
      world.users.push({ key: m.key, role: a.role, active: true, pinned: false });
      await registerInitialQueues(m);
      return { ok: true, note: `ok id=${m.id}` };
    }
    case 'fresh-queue': {
      const q = await register(actor, a.spec);
      if (!q) return { ok: false, note: 'register failed' };
      // Two queues per user: a fresh one replaces the oldest secondary one.
      if (actor.queues.length > 2) {
        const old = actor.queues.splice(1, 1)[0]!;
        await c.DELETE('/events', { body: { queue_id: old.id } });
      }
      return { ok: true, note: `ok ${describeSpec(q.spec)}` };
    }
    case 'edit-content':
    case 'move':
    case 'delete-message':
    case 'reaction':
    case 'typing-edit': {
      const mid = pre.messageId;
      if (mid === null) return { ok: false, note: `skipped (${a.message} was never sent)` };
      const path = { message_id: mid };
      const out = await (async (): Promise<Outcome> => {
        switch (a.kind) {
          case 'edit-content': {
            const file = await fileFor(a, actor);
            if (file === null) return { ok: false, note: 'skipped (file not uploaded)' };
            const out = answered('edit', await c.PATCH('/messages/{message_id}', { params: { path }, body: { content: content(a, 'was edited') + fileText(file) } }));
            // The new content links only its file (if its editor may read it): the message shares nothing else.
            if (out.ok) {
              for (const f of files.values()) f.links.delete(mid);
              linkFile(a, pre, file, mid);
            }
            return out;
          }
          case 'move': {
            const target = a.channel !== null ? channelIds.get(a.channel) : undefined;
            if (a.channel !== null && target === undefined) return { ok: false, note: 'skipped (no such channel)' };
            const body = {
              ...(a.topic !== null ? { topic: a.topic } : {}),
              ...(target !== undefined ? { stream_id: target } : {}),
              propagate_mode: a.propagate,
              send_notification_to_old_thread: a.notifyOld,
              send_notification_to_new_thread: a.notifyNew,
            };
            return answered('move', await c.PATCH('/messages/{message_id}', { params: { path }, body }));
          }
          case 'delete-message':
            return answered('delete', await c.DELETE('/messages/{message_id}', { params: { path } }));
          case 'reaction':
            return a.op === 'add'
              ? answered('add reaction', await c.POST('/messages/{message_id}/reactions', { params: { path }, body: { emoji_name: a.emoji } }))
              : answered('remove reaction', await c.DELETE('/messages/{message_id}/reactions', { params: { path }, body: { emoji_name: a.emoji } }));
          case 'typing-edit':
            return answered('edit typing', await c.POST('/messages/{message_id}/typing', { params: { path }, body: { op: 'start' } }));
        }
      })();
      out.note = `${out.note} (m=${mid})`;
      if (out.ok) {
        const known = world.messages.find((m) => m.ref === a.message);
        if (a.kind === 'delete-message' && known) known.deleted = true;
        if (a.kind === 'move' && known) {
          if (a.channel !== null) known.channel = a.channel;
          if (a.topic !== null) known.topic = a.topic;
        }
        if (a.kind === 'reaction' && known) {
          const r = `${a.actor}:${a.emoji}`;
          known.reactions = known.reactions.filter((x) => x !== r);
          if (a.op === 'add') known.reactions.push(r);
        }
        if (a.kind === 'edit-content' || a.kind === 'reaction' || a.kind === 'delete-message') out.changed = mid;
      }
      return out;
    }
    case 'delete-topic': {
      if (needChannel()) return { ok: false, note: 'skipped (no such channel)' };
      const res = await c.POST('/streams/{stream_id}/delete_topic', { params: { path: { stream_id: channelId! } }, body: { topic_name: a.topic } });
      const out = answered('delete topic', res);
      if (res.data) out.note += ` complete=${String(res.data.complete)}`;
      return out;
    }
    case 'status':
      return answered('status', await c.POST('/users/me/status', { body: { status_text: a.text, ...(a.away === null ? {} : { away: a.away }) } }));
    case 'presence': {
      const out = answered('presence', await c.POST('/users/me/presence', { body: { status: a.status, slim_presence: true } }));
      // Written now rather than with the next batch, so that its events belong to this step.
      await env.running.deps.presence.flush();
      return out;
    }
  }
}

async function addMember(key: string, id: number, email: string, role: Role, pinned: boolean): Promise<Member> {
  const key_ = await env.anonymous().POST('/fetch_api_key', { body: { username: email, password: TEST_PASSWORD } });
  if (!key_.data) throw new Error(`setup: fetch_api_key for ${email}: ${errorMsg(key_.error)}`);
  const m: Member = {
    key,
    id,
    email,
    apiKey: key_.data.api_key,
    client: createParleyClient({ site: env.url, email, apiKey: key_.data.api_key, fetch: countingFetch }),
    active: true,
    role,
    visibility: 1,
    queues: [],
    orphaned: [],
    registrations: 0,
    pinned,
  };
  members.set(key, m);
  realAddresses.set(id, email.toLowerCase());
  return m;
}

// ---------------------------------------------------------------------------------------------------
// Checks

/** The real addresses hidden from the viewer right now (per GET /users, and GET /users/{id} for users it omits). */
async function hiddenAddresses(view: ApiView, viewer: Pick<Member, 'key' | 'id'>): Promise<string[]> {
  const list = await view.users(viewer.key);
  const hidden: string[] = [];
  for (const [userId, real] of realAddresses) {
    if (userId === viewer.id) continue;
    let seen = list.ok ? list.value.get(userId) : undefined;
    if (!seen) {
      const one = await view.user(viewer.key, userId);
      seen = one.ok ? one.value : undefined;
    }
    const visible = seen !== undefined && (seen.email.toLowerCase() === real || seen.deliveryEmail?.toLowerCase() === real);
    if (!visible) hidden.push(real);
  }
  return hidden;
}

/** GET /users as each viewer follows Zulip's rules for `email` and `delivery_email` (can_access_delivery_email). */
async function checkUserDirectory(view: ApiView, viewer: Member) {
  const list = await view.users(viewer.key);
  if (!list.ok) return;
  const self = list.value.get(viewer.id);
  const viewerRole = self?.role ?? viewer.role;
  for (const target of members.values()) {
    const seen = list.value.get(target.id);
    if (!seen) continue;
    const expectSees = zulipSeesDeliveryEmail({ id: viewer.id, role: viewerRole }, { id: target.id, isBot: false }, target.visibility);
    const sees = seen.deliveryEmail !== null;
    if (sees !== expectSees) {
      violation('users-delivery-email-rule', `GET /users as ${viewer.key} (role ${viewerRole}) ${sees ? 'shows' : 'hides'} ${target.key}'s delivery_email (visibility ${target.visibility})`);
    }
    const expectEmail = target.visibility === 1 ? target.email.toLowerCase() : `user${target.id}@${realmHost}`;
    if (seen.email.toLowerCase() !== expectEmail) violation('users-email-field-rule', `GET /users as ${viewer.key}: ${target.key}'s email is ${seen.email}, expected ${expectEmail} (visibility ${target.visibility})`);
  }
}

interface StepContext {
  after: ApiView;
  before: Before;
  action: Action;
  /** What each queue got in the step. */
  delivered: Map<Queue, Json[]>;
  /** Message id → channel id a link in it must not render (sender could not see it). */
  forbiddenLinks: Map<number, number>;
  /** `${viewer}:${messageId}` whose GET /messages/{id} answer was scanned already. */
  scannedReads: Set<string>;
}

async function checkEmailField(ctx: StepContext, viewer: Member, cls: string, userId: unknown, email: unknown, what: string) {
  if (typeof userId !== 'number' || typeof email !== 'string') return;
  const seen = await ctx.after.user(viewer.key, userId);
  if (seen.ok && seen.value.email !== email) violation(`email-mismatch:${cls}`, `${viewer.key} got ${what} email ${email} for user ${userId}, but GET /users/${userId} shows ${seen.value.email}`);
}

async function checkEvent(ctx: StepContext, q: Queue, e: Json, hidden: (text: string) => string[]) {
  const viewer = q.owner;
  const v = viewer.key;
  const kind = kindOf(e);
  const id = asNumber(e['id']) ?? 0;
  const where = `${v} [${describeSpec(q.spec)}]`;
  tally(kind);
  if (id <= q.registeredAt) violation('replay-before-registration', `${where} got event ${id} (${kind}) from before its registration (${q.registeredAt})`);

  const leaked = hidden(JSON.stringify(e));
  if (leaked.length) violation(`hidden-address:${kind}`, `${where} got ${kind} carrying ${leaked.join(', ')}, hidden from them: ${JSON.stringify(e).slice(0, 300)}`);

  switch (e['type']) {
    case 'message': {
      const m = isObject(e['message']) ? e['message'] : {};
      const mid = asNumber(m['id']) ?? -1;
      if (q.seenMessages.has(mid)) violation('message-duplicate', `${where} got message ${mid} again`);
      q.seenMessages.add(mid);
      const read = await ctx.after.message(v, mid);
      if (!read.ok) {
        violation('message-unreadable', `${where} got message ${mid} (${String(m['type'])} ${typeof m['display_recipient'] === 'string' ? m['display_recipient'] : 'dm'}) but GET /messages/${mid} as ${v}: ${read.msg}`);
      } else if (!ctx.scannedReads.has(`${v}:${mid}`)) {
        // What GET /messages/{id} answers the viewer is held to the same rule as the event.
        ctx.scannedReads.add(`${v}:${mid}`);
        const inRead = hidden(JSON.stringify(read.value));
        if (inRead.length) violation('hidden-address:GET /messages/{id}', `GET /messages/${mid} as ${v} carries ${inRead.join(', ')}, hidden from them`);
      }
      await checkEmailField(ctx, viewer, 'message.sender_email', m['sender_id'], m['sender_email'], 'sender_email');
      for (const p of asArray(m['display_recipient']).filter(isObject)) await checkEmailField(ctx, viewer, 'message.display_recipient', p['id'], p['email'], 'display_recipient');
      const forbidden = ctx.forbiddenLinks.get(mid);
      if (forbidden !== undefined && q.spec.applyMarkdown && linkedChannelIds(asString(m['content']) ?? '').includes(forbidden)) {
        violation('channel-link-leak', `${where} got message ${mid} rendering a link to channel ${forbidden} (data-stream-id), which its sender could not see: ${asString(m['content'])}`);
      }
      return;
    }
    case 'stream': {
      for (const sid of streamIdsOf(e)) {
        if ((await ctx.after.stream(v, sid)).ok) continue;
        // Deletion (and archiving) goes to those who could see the channel just before the change.
        const mayBeFormer = e['op'] === 'delete' || (e['op'] === 'update' && e['property'] === 'is_archived');
        if (mayBeFormer && ctx.before.visible.get(`${v}:${sid}`) === true) continue;
        violation(`stream-event-invisible:${kind}`, `${where} got ${kind} about channel ${sid}, which GET /streams/${sid} refuses them${mayBeFormer ? ' (nor could they see it before the step)' : ''}: ${JSON.stringify(e).slice(0, 200)}`);
      }
      return;
    }
    case 'subscription': {
      const op = e['op'];
      if (op === 'remove') return; // the user's own subscriptions, which they had
      const subs = op === 'add' || op === 'update' ? await ctx.after.subscriptions(v) : null;
      for (const sid of streamIdsOf(e)) {
        if (subs?.ok && subs.value.has(sid)) continue;
        if ((await ctx.after.stream(v, sid)).ok) continue;
        if (op === 'peer_remove' && ctx.before.visible.get(`${v}:${sid}`) === true) continue;
        violation(`subscription-event-invisible:${kind}`, `${where} got ${kind} about channel ${sid}, which they cannot see: ${JSON.stringify(e).slice(0, 200)}`);
      }
      return;
    }
    case 'realm_user': {
      const person = isObject(e['person']) ? e['person'] : {};
      const uid = person['user_id'];
      if (typeof uid === 'number' && typeof person['delivery_email'] === 'string') {
        const seen = await ctx.after.user(v, uid);
        if (seen.ok && seen.value.deliveryEmail !== person['delivery_email']) {
          violation('delivery-email-leak:realm_user', `${where} got ${kind} with delivery_email ${String(person['delivery_email'])} of user ${uid}, but GET /users/${uid} shows them ${String(seen.value.deliveryEmail)}`);
        }
      }
      await checkEmailField(ctx, viewer, `${kind}.email`, uid, person['email'], 'realm_user email');
      await checkEmailField(ctx, viewer, `${kind}.new_email`, uid, person['new_email'], 'realm_user new_email');
      return;
    }
    case 'update_message': {
      const mid = asNumber(e['message_id']) ?? -1;
      const read = await readAfter(ctx, v, mid, kind, where);
      if (!read) return;
      // What the event says the message is now is what the receiver reads.
      const shown = read.value;
      const mismatch = (field: string, got: unknown, expected: unknown) =>
        violation(`update-message-mismatch:${field}`, `${where} got update_message for ${mid} with ${field} ${JSON.stringify(got)}, but GET /messages/${mid} shows them ${JSON.stringify(expected)}`);
      if (typeof e['rendered_content'] === 'string' && e['rendered_content'] !== shown['content']) mismatch('rendered_content', e['rendered_content'], shown['content']);
      if (typeof e['content'] === 'string') {
        const raw = await ctx.after.rawContent(v, mid);
        if (raw.ok && raw.value !== e['content']) mismatch('content', e['content'], raw.value);
      }
      if (typeof e['subject'] === 'string' && e['subject'] !== shown['subject']) mismatch('subject', e['subject'], shown['subject']);
      if (typeof e['new_stream_id'] === 'number' && e['new_stream_id'] !== shown['stream_id']) mismatch('new_stream_id', e['new_stream_id'], shown['stream_id']);
      // A move names where the messages were (stream_id, stream_name, orig_subject), as Zulip's does, also
      // to readers of the new place who cannot see the old channel: the mover chose to tell them, as a
      // link in a message would (counted for PARLEY_INVARIANT_LOG, not a violation).
      const origin = asNumber(e['stream_id']);
      if (typeof e['new_stream_id'] === 'number' && origin !== undefined && !(await ctx.after.stream(v, origin)).ok) {
        tally('note: update_message naming a channel the receiver cannot see');
      }
      // The content it replaces is content they could read.
      if (typeof e['orig_content'] === 'string' && !ctx.before.readable?.get(v)?.has(mid)) {
        violation('update-message-orig-content-unreadable-before', `${where} got update_message with the former content of ${mid}, which GET /messages/${mid} refused them before the step`);
      }
      // The other messages the change took along (or that it took along and then deleted, as undoing a
      // resolve does with the bot's notice: the same queue is then told of the deletion).
      for (const other of asArray(e['message_ids'])) {
        if (typeof other !== 'number' || other === mid) continue;
        const r = await ctx.after.message(v, other);
        if (r.ok) continue;
        const deletedAfter = (ctx.delivered.get(q) ?? []).some((d) => d['type'] === 'delete_message' && (asNumber(d['id']) ?? 0) > id && deletedIdsOf(d).includes(other));
        if (!deletedAfter || !ctx.before.readable?.get(v)?.has(other)) {
          violation('update-message-ids-unreadable', `${where} got update_message for ${mid} listing message ${other} in message_ids, but GET /messages/${other} as ${v}: ${r.msg}`);
        }
      }
      const forbidden = ctx.forbiddenLinks.get(mid);
      if (forbidden !== undefined && linkedChannelIds(asString(e['rendered_content']) ?? '').includes(forbidden)) {
        violation('channel-link-leak', `${where} got update_message for ${mid} rendering a link to channel ${forbidden} (data-stream-id), which its editor could not see: ${asString(e['rendered_content'])}`);
      }
      return;
    }
    case 'delete_message': {
      for (const mid of deletedIdsOf(e)) {
        if (ctx.before.readable === null) {
          violation('delete-message-unexpected', `${where} got delete_message for ${mid} in a step that deletes and moves nothing: ${JSON.stringify(e).slice(0, 200)}`);
          continue;
        }
        if (!ctx.before.readable.get(v)?.has(mid)) {
          violation('delete-message-unreadable-before', `${where} got delete_message for ${mid}, which they could not read before the step (GET /messages/${mid} and the topic's GET /messages): ${JSON.stringify(e).slice(0, 200)}`);
        }
        const after = await ctx.after.message(v, mid);
        if (after.ok) violation('delete-message-still-readable', `${where} got delete_message for ${mid}, but GET /messages/${mid} still shows it to them after the step`);
        else if (ctx.action.kind === 'move') lostAccess.set(v, (lostAccess.get(v) ?? new Set()).add(mid));
      }
      return;
    }
    case 'reaction': {
      const mid = asNumber(e['message_id']) ?? -1;
      const user = isObject(e['user']) ? e['user'] : {};
      await checkEmailField(ctx, viewer, 'reaction.user', user['user_id'], user['email'], 'reaction user');
      const read = await readAfter(ctx, v, mid, kind, where);
      if (!read) return;
      const has = asArray(read.value['reactions']).filter(isObject).some((r) => r['user_id'] === e['user_id'] && r['emoji_name'] === e['emoji_name']);
      if (has !== (e['op'] === 'add')) violation('reaction-mismatch', `${where} got ${kind} (${String(e['emoji_name'])} by ${String(e['user_id'])}) on ${mid}, but GET /messages/${mid} ${has ? 'shows' : 'lacks'} it`);
      return;
    }
    case 'attachment': {
      // About a file of the receiver's own (files are told to their uploader only).
      const att = isObject(e['attachment']) ? e['attachment'] : {};
      const pathId = asString(att['path_id']);
      if (pathId === undefined) return; // a removal names the file by id only
      const file = [...files.values()].find((f) => f.url === `/user_uploads/${pathId}`);
      if (file?.owner.id !== viewer.id) violation('attachment-event-not-owner', `${where} got ${kind} about ${pathId}, uploaded by ${file?.owner.key ?? 'someone else'}`);
      // It lists every message linking the file, as Zulip's does, also those the uploader cannot read
      // (a forward into a channel they are not in): counted for PARLEY_INVARIANT_LOG, not a violation.
      for (const m of asArray(att['messages']).filter(isObject)) {
        const mid = asNumber(m['id']);
        if (mid !== undefined && !(await ctx.after.message(v, mid)).ok) tally('note: attachment event listing a message the uploader cannot read');
      }
      return;
    }
    case 'typing_edit_message': {
      await readAfter(ctx, v, asNumber(e['message_id']) ?? -1, kind, where);
      return;
    }
    case 'user_topic': {
      const sid = asNumber(e['stream_id']);
      // Clearing the user's own policy may reach them after they lost the channel; anything else may not.
      if (sid !== undefined && e['visibility_policy'] !== 0 && !(await ctx.after.stream(v, sid)).ok) {
        violation('user-topic-invisible', `${where} got user_topic for channel ${sid} (${String(e['topic_name'])}), which they cannot see: ${JSON.stringify(e).slice(0, 200)}`);
      }
      return;
    }
    case 'presence': {
      // About a user the receiver can see, by the address everyone sees (legacy form).
      const key = isObject(e['presences']) ? Object.keys(e['presences'])[0] : undefined;
      const uid = asNumber(e['user_id']) ?? (key === undefined ? undefined : Number(key));
      if (uid === undefined || !(await ctx.after.user(v, uid)).ok) violation('user-event-invisible:presence', `${where} got ${kind} about user ${String(uid)}, whom they cannot see`);
      await checkEmailField(ctx, viewer, 'presence', e['user_id'], e['email'], 'presence user');
      return;
    }
    case 'user_status': {
      // About a user the receiver can see (GET /users/{id}); it carries no address.
      const uid = asNumber(e['user_id']);
      if (uid === undefined || !(await ctx.after.user(v, uid)).ok) violation('user-event-invisible:user_status', `${where} got ${kind} about user ${String(uid)}, whom they cannot see`);
      return;
    }
    case 'typing': {
      const sender = isObject(e['sender']) ? e['sender'] : {};
      await checkEmailField(ctx, viewer, 'typing.sender', sender['user_id'], sender['email'], 'typing sender');
      for (const r of asArray(e['recipients']).filter(isObject)) await checkEmailField(ctx, viewer, 'typing.recipients', r['user_id'], r['email'], 'typing recipient');
      const sid = asNumber(e['stream_id']);
      if (sid !== undefined && !(await ctx.after.stream(v, sid)).ok) violation('stream-event-invisible:typing', `${where} got channel typing in channel ${sid}, which they cannot see`);
      return;
    }
    default:
      return;
  }
}

/**
 * The message an event is about, as the receiver reads it after the step; a violation (null) when they
 * cannot — named apart when a move took the message from them before.
 */
async function readAfter(ctx: StepContext, v: string, mid: number, kind: string, where: string): Promise<{ value: Json } | null> {
  const read = await ctx.after.message(v, mid);
  if (read.ok) {
    lostAccess.get(v)?.delete(mid);
    return read;
  }
  const lost = lostAccess.get(v)?.has(mid) === true;
  violation(lost ? `event-after-lost-access:${kind}` : `event-unreadable:${kind}`, `${where} got ${kind} about message ${mid}, but GET /messages/${mid} as ${v}: ${read.msg}${lost ? ' (a move took it from them earlier)' : ''}`);
  return null;
}

/** Whether the queue takes this message by its event_types and narrow (Zulip's narrow_predicate). */
function queueTakes(q: Queue, msg: SentMessage): boolean {
  if (q.spec.eventTypes && !q.spec.eventTypes.includes('message')) return false;
  return q.spec.narrow.every(([operator, operand]) => {
    if (operator === 'channel' || operator === 'stream') return msg.kind === 'channel' && msg.channelName!.toLowerCase() === operand.toLowerCase();
    if (operator === 'topic') return msg.kind === 'channel' && msg.topic!.toLowerCase() === operand.toLowerCase();
    if (operator === 'is' && (operand === 'dm' || operand === 'private')) return msg.kind === 'direct';
    return true;
  });
}

async function checkDelivery(ctx: StepContext, msg: SentMessage, delivered: Map<Queue, Json[]>) {
  const count = (q: Queue) =>
    (delivered.get(q) ?? []).filter((e) => e['type'] === 'message' && isObject(e['message']) && e['message']['id'] === msg.id).length;
  for (const m of activeMembers()) {
    // Direct messages: every participant. Channel messages: the subscribers at send time (a sender who
    // is not subscribed is not owed their own message), and all_public_streams queues of users who may
    // read a public channel.
    const receives = msg.kind === 'direct' ? msg.participants!.some((p) => p.id === m.id) : ctx.before.subscribed.get(m.key) === true;
    for (const q of m.queues) {
      let expected = receives;
      if (!expected && msg.kind === 'channel' && q.spec.allPublicStreams && !ctx.before.inviteOnly) expected = (await ctx.after.message(m.key, msg.id)).ok;
      if (!queueTakes(q, msg)) expected = false;
      const n = count(q);
      if (expected && n !== 1) {
        violation(n === 0 ? 'message-missing' : 'message-duplicate', `${m.key} [${describeSpec(q.spec)}] got message ${msg.id} (${msg.kind === 'channel' ? `channel ${msg.channelName}` : 'direct'} from ${msg.sender.key}) ${n} times, expected once`);
      }
    }
  }
  if (msg.forbiddenLink !== null) {
    const read = await ctx.after.message(msg.sender.key, msg.id);
    if (read.ok && linkedChannelIds(asString(read.value['content']) ?? '').includes(msg.forbiddenLink)) {
      violation('channel-link-leak', `GET /messages/${msg.id} renders a link to channel ${msg.forbiddenLink}, which its sender ${msg.sender.key} could not see: ${asString(read.value['content'])}`);
    }
  }
}

/**
 * A content edit, reaction or deletion reached every queue that takes every event (no event_types, no
 * narrow) of each participant or subscriber who can read the message (after the step; before it, for a
 * deletion), once: the event the step is owed.
 */
async function checkChangeDelivery(ctx: StepContext, a: Action, mid: number, delivered: Map<Queue, Json[]>) {
  const deleting = a.kind === 'delete-message';
  const view = deleting ? ctx.before.view : ctx.after;
  const readers = activeMembers();
  const reads = await Promise.all(readers.map(async (m) => [m, await view.message(m.key, mid)] as const));
  const seen = reads.find(([, r]) => r.ok)?.[1];
  if (!seen?.ok) return;
  const conversation = conversationOf(seen.value);
  const type = deleting ? 'delete_message' : a.kind === 'reaction' ? 'reaction' : 'update_message';
  const about = (e: Json) => e['type'] === type && (deleting ? deletedIdsOf(e).includes(mid) : e['message_id'] === mid);
  for (const [m, read] of reads) {
    if (!read.ok) continue;
    let owed = conversation.participants.includes(m.id);
    if (conversation.channelId !== null) {
      const subs = await ctx.after.subscriptions(m.key);
      owed = subs.ok && subs.value.has(conversation.channelId);
    }
    if (!owed) continue;
    for (const q of m.queues) {
      if (q.spec.eventTypes !== null || q.spec.narrow.length > 0) continue;
      const n = (delivered.get(q) ?? []).filter(about).length;
      if (n !== 1) violation(n === 0 ? `${type}-missing` : `${type}-duplicate`, `${m.key} [${describeSpec(q.spec)}] got ${n} ${type} events about message ${mid} after: ${describeAction(a)}; expected one`);
    }
  }
  if (a.kind === 'edit-content' && ctx.before.forbiddenLink !== null) {
    const read = await ctx.after.message(a.actor, mid);
    if (read.ok && linkedChannelIds(asString(read.value['content']) ?? '').includes(ctx.before.forbiddenLink)) {
      violation('channel-link-leak', `GET /messages/${mid} renders a link to channel ${ctx.before.forbiddenLink}, which its editor ${a.actor} could not see: ${asString(read.value['content'])}`);
    }
  }
}

/**
 * What the generator knows follows the step: messages the changes moved or deleted (as their events
 * tell), and the notification bot's new notices (which later steps may change too).
 */
function followChanges(a: Action, delivered: Map<Queue, Json[]>, world: GenWorld) {
  const channelName = new Map([...channelIds].map(([name, id]) => [id, name]));
  const moved = new Map<number, { channel?: string; topic?: string }>();
  const deleted = new Set<number>();
  const fresh = new Map<number, Json>();
  for (const events of delivered.values()) {
    for (const e of events) {
      if (e['type'] === 'update_message') {
        const to: { channel?: string; topic?: string } = {};
        if (typeof e['new_stream_id'] === 'number') to.channel = channelName.get(e['new_stream_id']);
        if (typeof e['subject'] === 'string') to.topic = e['subject'];
        for (const id of asArray(e['message_ids'])) if (typeof id === 'number') moved.set(id, to);
      } else if (e['type'] === 'delete_message' && a.kind !== 'move') {
        for (const id of deletedIdsOf(e)) deleted.add(id);
      } else if (e['type'] === 'message' && isObject(e['message'])) {
        const m = e['message'];
        const id = asNumber(m['id']);
        const fromMember = [...members.values()].some((x) => x.id === m['sender_id']);
        if (id !== undefined && !refOf.has(id) && !fromMember && m['type'] === 'stream') fresh.set(id, m);
      }
    }
  }
  for (const known of world.messages) {
    const id = messageRefs.get(known.ref);
    if (id === undefined) continue;
    const to = moved.get(id);
    if (to?.channel !== undefined) known.channel = to.channel;
    if (to?.topic !== undefined) known.topic = to.topic;
    if (deleted.has(id)) known.deleted = true;
  }
  for (const [id, m] of [...fresh].sort((x, y) => x[0] - y[0])) {
    remember(`n${++notices}`, id, 'notification-bot', asString(m['display_recipient']) ?? null, asString(m['subject']) ?? null, world);
  }
}

/** Every newly subscribed user's queues that take subscription events got one subscription/add for the channel. */
function checkSubscriptionNotices(added: { channelId: number; userIds: number[] }, delivered: Map<Queue, Json[]>) {
  for (const m of activeMembers()) {
    if (!added.userIds.includes(m.id)) continue;
    for (const q of m.queues) {
      if (q.spec.eventTypes && !q.spec.eventTypes.includes('subscription')) continue;
      const n = (delivered.get(q) ?? []).filter((e) => e['type'] === 'subscription' && e['op'] === 'add' && streamIdsOf(e).includes(added.channelId)).length;
      if (n !== 1) violation(n === 0 ? 'subscription-add-missing' : 'subscription-add-duplicate', `${m.key} [${describeSpec(q.spec)}] got ${n} subscription/add for channel ${added.channelId}, expected once`);
    }
  }
}

async function afterStep(a: Action, pre: Before, outcome: Outcome) {
  const delivered = new Map<Queue, Json[]>();
  const ctx: StepContext = { after: newView(), before: pre, action: a, delivered, forbiddenLinks: new Map(), scannedReads: new Set() };
  if (outcome.message && outcome.message.forbiddenLink !== null) ctx.forbiddenLinks.set(outcome.message.id, outcome.message.forbiddenLink);
  if (a.kind === 'edit-content' && pre.messageId !== null && pre.forbiddenLink !== null) ctx.forbiddenLinks.set(pre.messageId, pre.forbiddenLink);
  const becameGuest = a.kind === 'role' && outcome.ok && a.role === 600 ? a.target : null;
  const d0 = performance.now();
  await Promise.all(
    activeMembers().map(async (m) => {
      for (const q of [...m.queues]) {
        const events = await drain(q);
        if (events === null) {
          m.queues.splice(m.queues.indexOf(q), 1);
          // The one queue that may end without its owner being deactivated: an all_public_streams queue
          // of a user who has just become a guest (they may no longer follow every public channel).
          if (!(becameGuest === m.key && q.spec.allPublicStreams)) violation('queue-lost', `${m.key}'s queue ${describeSpec(q.spec)} answered BAD_EVENT_QUEUE_ID after: ${describeAction(a)}`);
          continue;
        }
        delivered.set(q, events);
      }
    }),
  );
  const d1 = performance.now();
  timing.drain += d1 - d0;
  // The user directory changes only with these actions; otherwise only viewers who got events are asked.
  const directoryMayChange = ['visibility', 'role', 'deactivate', 'reactivate', 'create-user'].includes(a.kind) && outcome.ok;
  await Promise.all(
    activeMembers().map(async (m) => {
      const events = m.queues.flatMap((q) => (delivered.get(q) ?? []).map((e) => [q, e] as const));
      if (events.length === 0 && !directoryMayChange) return;
      const hidden = addressFinder(await hiddenAddresses(ctx.after, m));
      await checkUserDirectory(ctx.after, m);
      for (const [q, e] of events) await checkEvent(ctx, q, e, hidden);
    }),
  );
  if (outcome.message) await checkDelivery(ctx, outcome.message, delivered);
  if (outcome.subscribed) checkSubscriptionNotices(outcome.subscribed, delivered);
  if (outcome.changed !== undefined) await checkChangeDelivery(ctx, a, outcome.changed, delivered);
  followChanges(a, delivered, world);
  timing.checks += performance.now() - d1;
  // Users who lost a queue (see above) get a new one, of a kind their role allows.
  for (const m of activeMembers()) {
    if (m.queues.length < 2) {
      const names = [...channelIds.keys()];
      await register(m, drawQueueSpec(specRng(m), m.role, names, m.queues.length === 0));
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Files (issue 24): a file is readable by its uploader, and by whoever can read (GET /messages/{id}, as
// them) a message whose content links it — linked by a sender who could read the file then. Moves,
// deletions, unsubscribes, privacy and role changes act on files only through those messages; an edit
// (whose new content links nothing) takes the message's links away.

/** The file a send links (uploaded now when fresh): undefined when it links none, null when it cannot. */
async function fileFor(a: { file?: FileLink }, actor: Member): Promise<RunFile | undefined | null> {
  if (!a.file) return undefined;
  if (!a.file.fresh) return files.get(a.file.ref) ?? null;
  const { body, contentType } = multipart([{ name: 'file', filename: `${a.file.ref}.txt`, contentType: 'text/plain', data: `file ${a.file.ref} of ${actor.key}` }]);
  const res = await countingFetch(`${env.url}/api/v1/user_uploads`, { method: 'POST', body, headers: { 'Content-Type': contentType, Authorization: basicAuth(actor.email, actor.apiKey) } });
  const json: unknown = await res.json().catch(() => null);
  if (res.status >= 500) onServerError(`POST /user_uploads as ${actor.key}`, res.status, json);
  const url = isObject(json) ? asString(json['url']) : undefined;
  if (!res.ok || url === undefined) {
    violation('upload-failed', `${actor.key} POST /user_uploads: ${res.status} ${JSON.stringify(json)}`);
    return null;
  }
  const f: RunFile = { ref: a.file.ref, url, owner: actor, links: new Set() };
  files.set(f.ref, f);
  // Later random steps may link the files of the regression prefix too.
  if (!world.files.some((x) => x.ref === f.ref)) world.files.push({ ref: f.ref, owner: actor.key });
  return f;
}

const fileText = (f: RunFile | undefined) => (f ? ` shares [${f.ref}](${f.url})` : '');

/** A sent message links its file when its sender could read the file (a fresh one is theirs). */
function linkFile(a: { file?: FileLink }, pre: Before, f: RunFile | undefined, messageId: number) {
  if (f && (a.file?.fresh || pre.fileReadable)) f.links.add(messageId);
}

/** What the test expects: the uploader, or a reader of a message linking the file. */
async function mayReadFile(view: ApiView, m: Member, f: RunFile): Promise<boolean> {
  if (m.id === f.owner.id) return true;
  for (const mid of f.links) if ((await view.message(m.key, mid)).ok) return true;
  return false;
}

/** A spectator (no credentials) reads the files of messages they can read: GET /messages/{id} without credentials. */
async function spectatorMayReadFile(f: RunFile): Promise<boolean> {
  for (const mid of f.links) {
    const res = await env.anonymous().GET('/messages/{message_id}', { params: { path: { message_id: mid } } });
    if (res.response.status >= 500) onServerError(`GET /messages/${mid} as a spectator`, res.response.status, res.error);
    if (res.data) return true;
  }
  return false;
}

/**
 * GET of the file as a user succeeds exactly when the test expects it: after a send linking a file, for
 * every active user; after a step about a message that links files, those files for every active user;
 * else a few (user, file) pairs drawn at random.
 */
async function checkFiles(a: Action, pre: Before) {
  if (files.size === 0) return;
  const viewers = activeMembers();
  const all = [...files.values()];
  const focus = new Set<RunFile>();
  if ((a.kind === 'send-channel' || a.kind === 'send-direct' || a.kind === 'edit-content') && a.file) {
    const f = files.get(a.file.ref);
    if (f) focus.add(f);
  }
  for (const f of pre.linkedFiles) focus.add(f);
  // null: a spectator (without credentials; refused files ask for them: 401). `api`: through GET
  // /api/v1/user_uploads/{realm_id_str}/{filename} (a temporary URL) rather than the file's URL.
  const pairs: [Member | null, RunFile, boolean][] = [...focus].flatMap((f) => [null, ...viewers].map((m) => [m, f, false] as [Member | null, RunFile, boolean]));
  // Otherwise, every other step, a few pairs at random (the check costs a download and message reads each).
  if (pairs.length === 0 && step % 2 === 0) {
    for (let i = 0; i < 3; i++) pairs.push([fileRng.pick(viewers), fileRng.pick(all), i === 0]);
    pairs.push([null, fileRng.pick(all), false]);
  }
  const view = newView();
  await Promise.all(
    pairs.map(async ([m, f, api]) => {
      const expected = m ? await mayReadFile(view, m, f) : await spectatorMayReadFile(f);
      const got = await download(api ? `${env.url}/api/v1` : env.url, f.url, m ? { auth: basicAuth(m.email, m.apiKey) } : {});
      const who = m?.key ?? 'a spectator';
      const what = `GET ${api ? '/api/v1' : ''}${f.url}`;
      if (got.status >= 500) onServerError(`${what} as ${who}`, got.status, got.text);
      tally(`file check: ${m ? 'user' : 'spectator'} ${expected ? 'may read' : 'may not read'}`);
      if (got.status === (expected ? 200 : m ? 403 : 401)) return;
      const linked = [...f.links].map((id) => refOf.get(id) ?? String(id)).join(',');
      violation(
        expected ? 'file-refused' : 'file-leak',
        `${what} (file ${f.ref} of ${f.owner.key}, linked by [${linked}]) as ${who} answered ${got.status}, expected ${expected ? 200 : m ? 403 : 401}: after ${describeAction(a)}`,
      );
    }),
  );
}

// ---------------------------------------------------------------------------------------------------
// Outgoing webhooks: one outgoing-webhook bot (hamlet's, so deactivating hamlet deactivates it) posting
// to a local target. Some channel sends mention it and some direct messages include it (a stream of its
// own decides which: the actions stay as drawn). After such a step, once its deliveries are finished,
// every request the target received must be about a message the bot can read right then (GET
// /messages/{id} as the bot), show what that read shows (content, channel, topic), and carry no address
// hidden from the bot; and each such send the bot can read reached it exactly once.

const HOOK_KEY = 'hook-bot';
interface HookBot {
  id: number;
  fullName: string;
  client: ParleyClient;
  target: http.Server;
  /** Bodies the target received, not yet checked. */
  received: string[];
  /** Messages of this step that mention the bot or include it. */
  triggered: number[];
}
let hook: HookBot | null = null;
let hookRng: Rng;

/** Whether this send involves the bot (drawn from the bot's own stream; false before the bot exists). */
const hookTriggers = (p: number) => hook !== null && hookRng.chance(p);
const hookActive = async () => (await hook!.client.GET('/users/me', {})).response.ok;

async function createHookBot(): Promise<HookBot> {
  const received: string[] = [];
  const target = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ response_not_required: true }));
    });
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const fullName = 'Invariant Hook';
  const owner = members.get('hamlet')!;
  const fields = { full_name: fullName, short_name: 'invariant-hook', bot_type: '3', payload_url: JSON.stringify(`http://127.0.0.1:${(target.address() as AddressInfo).port}/hook`), interface_type: '1' };
  const created = await countingFetch(`${env.url}/api/v1/bots`, { method: 'POST', body: new URLSearchParams(fields), headers: { Authorization: basicAuth(owner.email, owner.apiKey) } });
  const body = (await created.json()) as Json;
  const id = asNumber(body['user_id']);
  const apiKey = asString(body['api_key']);
  if (!created.ok || id === undefined || apiKey === undefined) throw new Error(`setup: POST /bots: ${JSON.stringify(body)}`);
  const seen = await owner.client.GET('/users/{user_id}', { params: { path: { user_id: id } } });
  if (!seen.data) throw new Error(`setup: GET /users/${id}: ${errorMsg(seen.error)}`);
  return { id, fullName, client: createParleyClient({ site: env.url, email: seen.data.user.email, apiKey, fetch: countingFetch }), target, received, triggered: [] };
}

async function checkHook() {
  if (!hook) return;
  if (hook.triggered.length) {
    const db = env.running.deps.db;
    await waitFor(async () => Number((await db.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM outgoing_webhook_delivery WHERE finished_at IS NULL`)[0]!.n) === 0, { what: 'outgoing-webhook deliveries' });
  }
  const view = newView();
  const bot = { key: HOOK_KEY, id: hook.id };
  const requests = hook.received.splice(0);
  const counts = new Map<number, number>();
  const hidden = requests.length ? addressFinder(await hiddenAddresses(view, bot)) : () => [];
  for (const body of requests) {
    let payload: Json;
    try {
      payload = JSON.parse(body) as Json;
    } catch {
      violation('webhook-malformed', `the bot's endpoint got ${body.slice(0, 200)}`);
      continue;
    }
    const message = isObject(payload['message']) ? payload['message'] : {};
    const mid = asNumber(message['id']) ?? -1;
    counts.set(mid, (counts.get(mid) ?? 0) + 1);
    tally('outgoing-webhook');
    const read = await view.message(HOOK_KEY, mid);
    if (!read.ok) {
      violation('webhook-unreadable', `the bot's endpoint got message ${mid} (${refOf.get(mid) ?? 'unnamed'}), but GET /messages/${mid} as the bot: ${read.msg}`);
      continue;
    }
    const raw = await view.rawContent(HOOK_KEY, mid);
    if (raw.ok && raw.value !== undefined && payload['data'] !== raw.value) violation('webhook-content', `the bot's endpoint got message ${mid} with data ${JSON.stringify(payload['data'])}, GET /messages/${mid} as the bot shows ${JSON.stringify(raw.value)}`);
    for (const field of ['stream_id', 'subject']) {
      if (read.value[field] !== undefined && message[field] !== read.value[field]) violation(`webhook-${field}`, `the bot's endpoint got message ${mid} with ${field} ${JSON.stringify(message[field])}, GET /messages/${mid} as the bot shows ${JSON.stringify(read.value[field])}`);
    }
    const leaked = hidden(body);
    if (leaked.length) violation('hidden-address:outgoing-webhook', `the bot's endpoint got message ${mid} carrying ${leaked.join(', ')}, hidden from the bot`);
  }
  for (const mid of hook.triggered.splice(0)) {
    const n = counts.get(mid) ?? 0;
    if (n > 1) violation('webhook-duplicate', `the bot's endpoint got message ${mid} ${n} times`);
    if (n === 0 && (await view.message(HOOK_KEY, mid)).ok) violation('webhook-missing', `message ${mid} (${refOf.get(mid) ?? 'unnamed'}) involves the bot, which can read it, but its endpoint got nothing`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Password-reset links (the page of the e-mail imported accounts get): around each deactivation and
// reactivation, a link for the target made just before the step must not work while they are
// deactivated (neither the form nor setting a password); once they are active it works exactly once
// (it sets TEST_PASSWORD again, so nothing else changes); and a link whose account does not exist
// answers exactly as a forged link of a real account, so the page tells nobody who has an account.

let resetLink: { target: Member; key: string } | null = null;

async function mintResetLink(a: Action) {
  resetLink = null;
  if (a.kind !== 'deactivate' && a.kind !== 'reactivate') return;
  const target = members.get(a.target);
  const row = target ? await env.running.deps.db.user.findUnique({ where: { id: target.id } }) : null;
  if (target && row) resetLink = { target, key: passwordResetKey(env.running.deps, env.realmId, row) };
}

async function checkResetLink() {
  if (!resetLink) return;
  const { target, key } = resetLink;
  resetLink = null;
  const url = (k: string) => `${env.url}${PASSWORD_RESET_PATH}/${k}`;
  const get = async (k: string) => {
    const res = await countingFetch(url(k));
    return { status: res.status, text: await res.text() };
  };
  const post = (k: string) => countingFetch(url(k), { method: 'POST', body: new URLSearchParams({ new_password: TEST_PASSWORD }) });
  const [realm, user, issued] = key.split('.');
  const forged = await get(`${realm}.${user}.${issued}.${'0'.repeat(40)}`);
  const nobody = await get(`${realm}.${2_000_000_000}.${issued}.${'0'.repeat(40)}`);
  if (forged.status !== nobody.status || forged.text !== nobody.text) violation('password-reset-reveals-account', `a forged reset link of ${target.key}'s account answers ${forged.status}, one of no account ${nobody.status}: the page tells them apart`);
  if (!target.active) {
    const form = await get(key);
    const set = await post(key);
    if (form.status === 200 || set.status === 200) violation('password-reset-deactivated', `${target.key} is deactivated, but their reset link answers ${form.status} (form) and ${set.status} (setting a password)`);
    return;
  }
  tally('password-reset-link');
  const first = await post(key);
  if (first.status !== 200) violation('password-reset-refused', `${target.key} is active, but their fresh reset link answers ${first.status}`);
  const second = await post(key);
  const again = await get(key);
  if (second.status === 200 || again.status === 200) violation('password-reset-reused', `${target.key}'s reset link, used once, answers ${second.status} (setting a password) and ${again.status} (form)`);
}

// ---------------------------------------------------------------------------------------------------

function report(): string {
  const byClass = new Map<string, Violation[]>();
  for (const v of violations) byClass.set(v.cls, [...(byClass.get(v.cls) ?? []), v]);
  const run = REPLAY ? `replay of ${REPLAY}` : `seed=${SEED_TEXT} (${SEED}), ${REGRESSION_PREFIX.length} prefix steps then ${STEPS} random steps`;
  const lines = [`security invariant violated (${violations.length} violations): ${run}`, ''];
  let lastFirst = 0;
  for (const [cls, list] of [...byClass].sort((x, y) => x[1][0]!.step - y[1][0]!.step)) {
    lines.push(`${cls}: ${list.length} (first at step ${list[0]!.step})`);
    for (const v of list.slice(0, 2)) lines.push(`    #${v.step}: ${v.detail}`);
    lastFirst = Math.max(lastFirst, list[0]!.step);
  }
  lines.push('', `step log (to step ${lastFirst}):`, ...log.slice(0, lastFirst + 1));
  return lines.join('\n');
}

let world: GenWorld;

beforeAll(async () => {
  // The outgoing-webhook bot's endpoint is on loopback.
  env = await startTestServer({ config: { outgoingWebhooks: { ...loadConfig({}).outgoingWebhooks, allowPrivate: true } } });
  realmHost = new URL(env.running.deps.config.publicUrl).hostname;
  // Web-public channels need spectator access in the organization; moderators and up may create them.
  const groups = await env.client('desdemona').GET('/user_groups', {});
  const moderators = groups.data?.user_groups.find((g) => g.name === 'role:moderators')?.id;
  const realm = await env.client('desdemona').PATCH('/realm', {
    body: { enable_spectator_access: true, ...(moderators !== undefined ? { can_create_web_public_channel_group: { new: moderators } } : {}) },
  });
  if (!realm.response.ok) throw new Error(`setup: PATCH /realm: ${errorMsg(realm.error)}`);
  for (const key of Object.keys(PEOPLE) as FixturePerson[]) {
    const person = env.users[key];
    await addMember(key, person.id, person.email, PEOPLE[key].role as Role, key === 'desdemona');
  }
  // A second guest, so that guests also meet guests.
  const guest2 = uniqueEmail('guest2');
  const created = await env.client('iago').POST('/users', { body: { email: guest2, password: TEST_PASSWORD, full_name: 'Second Guest' } });
  if (!created.data) throw new Error(`setup: ${errorMsg(created.error)}`);
  await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: created.data.user_id } }, body: { role: 600 } });
  await addMember('guest2', created.data.user_id, guest2, 600, false);
  // Every other human's real address (the organization's first owner, who takes no part), for the scan.
  const everyone = await env.client('desdemona').GET('/users', { params: { query: { client_gravatar: false } } });
  for (const u of everyone.data?.members ?? []) if (!u.is_bot && u.delivery_email && !realAddresses.has(u.user_id)) realAddresses.set(u.user_id, u.delivery_email.toLowerCase());
  const streams = await env.client('desdemona').GET('/streams', { params: { query: { include_all: true } } });
  world = { users: [], channels: [], messages: [], usersToCreate: 2, nextChannel: 0, nextUser: 0, nextMessage: 0, files: [], nextFile: 0 };
  for (const s of streams.data?.streams ?? []) {
    channelIds.set(s.name, s.stream_id);
    const privacy: Privacy = s.is_web_public ? 'web-public' : !s.invite_only ? 'public' : s.history_public_to_subscribers ? 'private-shared' : 'private-protected';
    world.channels.push({ name: s.name, archived: s.is_archived === true, privacy });
  }
  for (const m of members.values()) {
    world.users.push({ key: m.key, role: m.role, active: true, pinned: m.pinned });
    await registerInitialQueues(m);
  }
  hook = await createHookBot();
}, 120_000);
afterAll(async () => {
  if (hook) await new Promise<void>((resolve) => hook!.target.close(() => resolve()));
  await env?.close();
});

describe('security invariant (issue 20)', () => {
  it(`every event is readable by its receiver and every message reaches its receivers (seed ${SEED_TEXT})`, { timeout: Math.max(15 * 60_000, STEPS * 1_500) }, async () => {
    const rng = new Rng(hashSeed(SEED, 'actions'));
    fileRng = new Rng(hashSeed(SEED, 'files'));
    hookRng = new Rng(hashSeed(SEED, 'hooks'));
    const replay: Action[] | null = REPLAY ? JSON.parse(REPLAY.trim().startsWith('[') ? REPLAY : readFileSync(REPLAY, 'utf8')) : null;
    const actions: Action[] = [];
    const prefix = replay ? [] : REGRESSION_PREFIX;
    const total = replay ? replay.length : prefix.length + STEPS;
    log.push(`#0 setup: ${[...members.values()].map((m) => `${m.key}(${m.role}):${m.queues.map((q) => describeSpec(q.spec)).join('|')}`).join(' ')}`);
    for (step = 1; step <= total; step++) {
      const a = replay ? replay[step - 1]! : step <= prefix.length ? prefix[step - 1]! : drawAction(rng, world);
      actions.push(a);
      const t0 = performance.now();
      const pre = await before(a);
      await mintResetLink(a);
      const t1 = performance.now();
      const outcome = await execute(a, pre, world);
      const t2 = performance.now();
      log.push(`#${step} ${describeAction(a)} -> ${outcome.note}`);
      await afterStep(a, pre, outcome);
      const t3 = performance.now();
      await checkFiles(a, pre);
      await checkHook();
      await checkResetLink();
      timing.files += performance.now() - t3;
      timing.before += t1 - t0;
      timing.execute += t2 - t1;
      timing.after += t3 - t2;
    }
    if (DUMP) writeFileSync(DUMP, JSON.stringify(actions, null, 1));
    if (process.env.PARLEY_INVARIANT_LOG) writeFileSync(process.env.PARLEY_INVARIANT_LOG, [...log, JSON.stringify(timing), JSON.stringify(Object.fromEntries([...requestCounts].sort((x, y) => y[1] - x[1]))), JSON.stringify(Object.fromEntries([...eventCounts].sort((x, y) => y[1] - x[1]))), '', ...violations.map((v) => `#${v.step} ${v.cls}: ${v.detail}`)].join('\n'));
    expect(violations.length, violations.length ? report() : '').toBe(0);
  });
});
