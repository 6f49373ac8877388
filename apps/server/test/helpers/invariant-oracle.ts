// The oracle of the security-invariant test (test/api/system/security-invariant.test.ts): what a user could
// read at one moment, asked of the API as that user — GET /users, GET /users/{id}, GET /streams/{id},
// GET /streams/{id}/members, GET /messages/{id}, GET /messages (one topic), GET /users/me/subscriptions —
// and helpers that compare a received event with those answers (the rules themselves are in the test).
// A view is made right after a step (or right before one, for what the step may take away) and answers
// every question from that moment: its answers are memoised and it is dropped before anything changes
// again.
import type { ParleyClient } from '@parley/client';

export type Json = Record<string, unknown>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
export const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
export const asNumber = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
export const asString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A user as one viewer sees them (GET /users or GET /users/{id}). */
export interface SeenUser {
  userId: number;
  email: string;
  deliveryEmail: string | null;
  role: number;
  isActive: boolean;
  isBot: boolean;
}

export type Answer<T> = { ok: true; value: T } | { ok: false; status: number; msg: string };

/** Any request answering 5xx is remembered: a server error is a failure of its own. */
export interface ServerErrorSink {
  (what: string, status: number, body: unknown): void;
}

function toSeenUser(u: Json): SeenUser {
  return {
    userId: asNumber(u['user_id'])!,
    email: asString(u['email']) ?? '',
    deliveryEmail: asString(u['delivery_email']) ?? null,
    role: asNumber(u['role']) ?? 0,
    isActive: u['is_active'] === true,
    isBot: u['is_bot'] === true,
  };
}

/** Answers of the API as each viewer at one moment. */
export class ApiView {
  private readonly memo = new Map<string, Promise<unknown>>();
  constructor(
    private readonly clientOf: (viewer: string) => ParleyClient,
    private readonly onServerError: ServerErrorSink,
  ) {}

  private once<T>(key: string, make: () => Promise<T>): Promise<T> {
    let p = this.memo.get(key) as Promise<T> | undefined;
    if (!p) {
      p = make();
      this.memo.set(key, p);
    }
    return p;
  }

  private answer<T>(what: string, res: { response: Response; data?: unknown; error?: unknown }, pick: (data: Json) => T): Answer<T> {
    if (res.response.status >= 500) this.onServerError(what, res.response.status, res.error);
    if (res.data !== undefined && isObject(res.data)) return { ok: true, value: pick(res.data) };
    const err = isObject(res.error) ? res.error : {};
    return { ok: false, status: res.response.status, msg: asString(err['msg']) ?? String(res.error) };
  }

  /** GET /users as the viewer: everyone they can see, by id. */
  users(viewer: string): Promise<Answer<Map<number, SeenUser>>> {
    return this.once(`users:${viewer}`, async () => {
      const res = await this.clientOf(viewer).GET('/users', { params: { query: { client_gravatar: false } } });
      return this.answer(`GET /users as ${viewer}`, res, (d) => new Map(asArray(d['members']).filter(isObject).map((u) => [asNumber(u['user_id'])!, toSeenUser(u)])));
    });
  }

  /** GET /users/{id} as the viewer. */
  user(viewer: string, userId: number): Promise<Answer<SeenUser>> {
    return this.once(`user:${viewer}:${userId}`, async () => {
      const res = await this.clientOf(viewer).GET('/users/{user_id}', { params: { path: { user_id: userId }, query: { client_gravatar: false } } });
      return this.answer(`GET /users/${userId} as ${viewer}`, res, (d) => toSeenUser(isObject(d['user']) ? d['user'] : {}));
    });
  }

  /** GET /streams/{id} as the viewer (metadata access). */
  stream(viewer: string, streamId: number): Promise<Answer<{ inviteOnly: boolean; isWebPublic: boolean; isArchived: boolean; name: string }>> {
    return this.once(`stream:${viewer}:${streamId}`, async () => {
      const res = await this.clientOf(viewer).GET('/streams/{stream_id}', { params: { path: { stream_id: streamId } } });
      return this.answer(`GET /streams/${streamId} as ${viewer}`, res, (d) => {
        const s = isObject(d['stream']) ? d['stream'] : {};
        return { inviteOnly: s['invite_only'] === true, isWebPublic: s['is_web_public'] === true, isArchived: s['is_archived'] === true, name: asString(s['name']) ?? '' };
      });
    });
  }

  /** GET /messages/{id} as the viewer (rendered): whether they can read it, and what they read. */
  async message(viewer: string, messageId: number): Promise<Answer<Json>> {
    const read = await this.messageRead(viewer, messageId);
    return read.ok ? { ok: true, value: read.value.message } : read;
  }

  /** The Markdown GET /messages/{id} answers the viewer (its `raw_content`), from the same request. */
  async rawContent(viewer: string, messageId: number): Promise<Answer<string | undefined>> {
    const read = await this.messageRead(viewer, messageId);
    return read.ok ? { ok: true, value: read.value.raw } : read;
  }

  private messageRead(viewer: string, messageId: number): Promise<Answer<{ message: Json; raw: string | undefined }>> {
    return this.once(`message:${viewer}:${messageId}`, async () => {
      const res = await this.clientOf(viewer).GET('/messages/{message_id}', { params: { path: { message_id: messageId }, query: { apply_markdown: true } } });
      return this.answer(`GET /messages/${messageId} as ${viewer}`, res, (d) => ({ message: isObject(d['message']) ? d['message'] : {}, raw: asString(d['raw_content']) }));
    });
  }

  /** GET /messages narrowed to a channel's topic as the viewer: the ids of the topic's messages they can read. */
  topicMessageIds(viewer: string, streamId: number, topic: string): Promise<Answer<Set<number>>> {
    return this.once(`topic:${viewer}:${streamId}:${topic}`, async () => {
      const narrow = [
        { operator: 'channel', operand: streamId },
        { operator: 'topic', operand: topic },
      ];
      // Zulip's encoding: strings as they are, everything else as JSON (the narrow is a nested array).
      const querySerializer = (query: Record<string, unknown>) =>
        new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)])).toString();
      const res = await this.clientOf(viewer).GET('/messages', { params: { query: { anchor: 'newest', num_before: 1000, num_after: 0, narrow, apply_markdown: false } }, querySerializer });
      return this.answer(`GET /messages (${streamId}>${topic}) as ${viewer}`, res, (d) => new Set(asArray(d['messages']).filter(isObject).map((m) => asNumber(m['id'])!)));
    });
  }

  /** GET /streams/{id}/members as the viewer: whether they may know the channel's subscribers. */
  members(viewer: string, streamId: number): Promise<Answer<number[]>> {
    return this.once(`members:${viewer}:${streamId}`, async () => {
      const res = await this.clientOf(viewer).GET('/streams/{stream_id}/members', { params: { path: { stream_id: streamId } } });
      return this.answer(`GET /streams/${streamId}/members as ${viewer}`, res, (d) => asArray(d['subscribers']).filter((x): x is number => typeof x === 'number'));
    });
  }

  /** GET /users/me/subscriptions as the viewer: the ids of the channels they are subscribed to. */
  subscriptions(viewer: string): Promise<Answer<Set<number>>> {
    return this.once(`subs:${viewer}`, async () => {
      const res = await this.clientOf(viewer).GET('/users/me/subscriptions', {});
      return this.answer(`GET /users/me/subscriptions as ${viewer}`, res, (d) => new Set(asArray(d['subscriptions']).filter(isObject).map((s) => asNumber(s['stream_id'])!)));
    });
  }
}

/** Zulip's rule for who sees a user's real address (zerver/lib/users.py can_access_delivery_email). */
export function zulipSeesDeliveryEmail(viewer: { id: number; role: number }, target: { id: number; isBot: boolean }, visibility: number): boolean {
  if (viewer.id === target.id || target.isBot) return true;
  switch (visibility) {
    case 1:
      return true;
    case 2:
      return viewer.role !== 600;
    case 3:
      return viewer.role <= 200;
    case 5:
      return viewer.role <= 300;
    default:
      return false;
  }
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Finds whole addresses (not inside a longer one) in a text. */
export function addressFinder(addresses: readonly string[]): (text: string) => string[] {
  if (addresses.length === 0) return () => [];
  const re = new RegExp(`(?<![A-Za-z0-9._%+-])(${addresses.map(escapeRegExp).join('|')})(?![A-Za-z0-9.-]*[A-Za-z0-9])`, 'gi');
  return (text) => [...new Set([...text.matchAll(re)].map((m) => m[1]!.toLowerCase()))];
}

/** The kind of an event, for grouping: type, /op, and for stream updates the property. */
export function kindOf(e: Json): string {
  let k = String(e['type']);
  if (e['op'] !== undefined) k += `/${String(e['op'])}`;
  if (e['type'] === 'stream' && e['op'] === 'update') k += `:${String(e['property'])}`;
  return k;
}

/** The channel ids a stream or subscription event is about. */
export function streamIdsOf(e: Json): number[] {
  const ids = new Set<number>();
  const add = (v: unknown) => {
    if (typeof v === 'number') ids.add(v);
  };
  add(e['stream_id']);
  for (const v of asArray(e['stream_ids'])) add(v);
  for (const s of [...asArray(e['streams']), ...asArray(e['subscriptions'])]) if (isObject(s)) add(s['stream_id']);
  return [...ids];
}

/** The `data-stream-id` values of channel links in rendered content. */
export function linkedChannelIds(html: string): number[] {
  return [...html.matchAll(/data-stream-id="(\d+)"/g)].map((m) => Number(m[1]));
}

/** The messages a `delete_message` event is about (the bulk form's `message_ids`, or the legacy `message_id`). */
export function deletedIdsOf(e: Json): number[] {
  const ids = asArray(e['message_ids']).filter((x): x is number => typeof x === 'number');
  const one = asNumber(e['message_id']);
  return one !== undefined ? [...ids, one] : ids;
}

/** The conversation of a message as GET /messages/{id} shows it: its channel, or its participants' ids. */
export function conversationOf(m: Json): { channelId: number | null; participants: number[] } {
  if (m['type'] === 'stream') return { channelId: asNumber(m['stream_id']) ?? null, participants: [] };
  return { channelId: null, participants: asArray(m['display_recipient']).filter(isObject).map((p) => asNumber(p['id'])).filter((id): id is number => id !== undefined) };
}
