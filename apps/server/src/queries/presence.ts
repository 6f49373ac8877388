// Reading presence: POST /users/me/presence's answer and GET /realm/presence from this process's copy
// of each organization's presence, POST /register's state and GET /users/{user_id_or_email}/presence
// from the database.
//
// The copy: every process keeps, per organization it answered for, its presence rows (with each
// user's answer already serialised, in both formats) ordered by update id, so that an answer is a
// filter and a join of strings, and a delta (`last_update_id`) a binary search. It follows the
// database: every write of presence announces the organization's newest update id on PRESENCE_CHANNEL
// in its transaction (data/presence.repo.ts), and the next read fetches the rows changed since the
// copy's newest id (update ids commit in increasing order within an organization, so nothing is
// skipped); a change to a user's row or address (`parley_invalidate`) makes the next read fetch that
// user again. Every read first waits for the listener's barrier, so it has heard of every write
// committed before it (a report written on another process is seen here once written). While the
// listener is down (notifications may be missed) every read fetches everything.
import type { Db, RawSql } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import type { DatabaseListener } from '../events/listener.ts';
import { PRESENCE_CHANNEL, presenceRowOfUser, presenceRowsForState, presenceRowsOfRealm, presenceSubjectById, type PresenceRow } from '../data/presence.repo.ts';
import { INVALIDATION_CHANNEL } from '../security/credential-cache.ts';
import { accessPresenceSubject } from '../access/presence.ts';
import { publicEmailOf } from '../access/users.ts';
import { RawJson } from '../lib/raw-json.ts';
import { JsonableError } from '../errors.ts';
import {
  applyReport,
  DEFAULT_HISTORY_LIMIT_DAYS,
  legacyPresence,
  modernPresence,
  singleUserLegacyPresence,
  type PresenceReport,
  type PresenceTimes,
} from '../lib/presence.ts';

export type PresenceFormat = 'modern' | 'legacy';

export interface PresenceQuery {
  format: PresenceFormat;
  /** `last_update_id`: only what changed after it (and no time limit when it is above 0). */
  afterUpdateId: number | null;
  /** `history_limit_days` (DEFAULT_HISTORY_LIMIT_DAYS when null; 0: nobody). */
  historyDays: number | null;
  /** The server has presence turned off (PARLEY_PRESENCE_DISABLED): nobody, and -1. */
  disabled: boolean;
}

export interface PresenceAnswer {
  /** Serialised already, or (a small answer) as an object: the envelope writes one string then. */
  presences: RawJson | Record<string, unknown>;
  presence_last_update_id: number;
  server_timestamp: number;
}

/** Answers longer ago than this many days are all answers (a larger limit only overflows dates). */
const MAX_HISTORY_DAYS = 1_000_000;
const DAY_MS = 86_400_000;

/** The earliest last-connected time answered, or null for no limit. */
function connectedCutoff(query: PresenceQuery, nowMs: number): number | null {
  if (query.afterUpdateId !== null && query.afterUpdateId > 0) return null;
  const days = Math.min(query.historyDays ?? DEFAULT_HISTORY_LIMIT_DAYS, MAX_HISTORY_DAYS);
  return nowMs - days * DAY_MS;
}

/** One user's presence in a copy. */
interface Entry {
  userId: number;
  updateId: number;
  times: PresenceTimes;
  dateJoinedMs: number;
  /** The address everyone sees (legacy keys). */
  email: string;
  /** An active human: the only users answered. */
  shown: boolean;
  presenceEnabled: boolean;
  /** The entry as answered (`"key":{…}`), made on first use. */
  modern?: string;
  legacy?: string;
}

function entryOf(realm: Realm, row: PresenceRow): Entry {
  return {
    userId: row.user_id,
    updateId: Number(row.last_update_id),
    times: { connectedMs: row.last_connected_time.getTime(), activeMs: row.last_active_time?.getTime() ?? null },
    dateJoinedMs: row.date_joined.getTime(),
    email: publicEmailOf(realm, { id: row.user_id, isBot: row.is_bot, deliveryEmail: row.delivery_email }, row.email_address_visibility),
    shown: row.is_active && !row.is_bot,
    presenceEnabled: row.presence_enabled,
  };
}

/** The entry's member of the `presences` object, in a format. */
function serialised(entry: Entry, format: PresenceFormat): string {
  if (format === 'modern') return (entry.modern ??= `${JSON.stringify(String(entry.userId))}:${JSON.stringify(modernPresence(entry.times, entry.dateJoinedMs))}`);
  return (entry.legacy ??= `${JSON.stringify(entry.email)}:${JSON.stringify(legacyPresence(entry.times, entry.dateJoinedMs))}`);
}

/** One organization's copy. */
interface RealmCopy {
  realm: Realm;
  entries: Map<number, Entry>;
  /** The entries by ascending update id; null after a change until the next read sorts them. */
  ordered: Entry[] | null;
  /** The newest update id fetched. */
  newestId: number;
  /** The newest update id announced (fetched on the next read when above newestId). */
  announcedId: number;
  /** Users whose row or address changed: fetched again on the next read. */
  stale: Set<number>;
  /** The refresh under way (reads wait for it). */
  refreshing: Promise<void> | null;
}

/**
 * A report of the caller not written yet, to show in their own answer as it will be written (POST
 * /users/me/presence answers the caller's presence as of their report, as Zulip's does).
 */
export interface OwnReport {
  userId: number;
  report: PresenceReport;
}

export interface ReadOptions {
  /** The caller's report not written yet, shown as it will be written. */
  own?: OwnReport;
  /**
   * Wait for the listener's barrier first, so that every write committed before the read, on any
   * process, is in the answer. (Without it an answer may be a few milliseconds behind, and loses
   * nothing: its presence_last_update_id is the copy's, so the next delta brings what it missed.)
   */
  fresh: boolean;
}

/** Answers smaller than this are parsed back into an object (the envelope then writes one string). */
const SMALL_ANSWER = 4_096;

export interface PresenceCopies {
  read(db: Db, realm: Realm, query: PresenceQuery, options: ReadOptions): Promise<PresenceAnswer>;
  /** Copies held and entries in them (tests, benchmarks). */
  readonly size: { realms: number; entries: number };
}

/** At most this many organizations are kept (the least recently read goes first). */
const MAX_REALMS = 1_000;

function createPresenceCopies(listener: DatabaseListener): PresenceCopies {
  const copies = new Map<number, RealmCopy>();
  /** Bumped whenever notifications may have been missed: a refresh that overlapped it is not kept. */
  let generation = 0;
  listener.onReset(() => {
    generation++;
    copies.clear();
  });
  listener.on(PRESENCE_CHANNEL, (payload) => {
    const [realmId, newestId] = payload.split(':').map(Number);
    const copy = copies.get(realmId!);
    if (copy && newestId! > copy.announcedId) copy.announcedId = newestId!;
  });
  listener.on(INVALIDATION_CHANNEL, (payload) => {
    const [kind, id] = payload.split(':');
    if (kind === 'user' || kind === 'settings') {
      for (const copy of copies.values()) if (copy.entries.has(Number(id))) copy.stale.add(Number(id));
    } else if (kind === 'realm') copies.delete(Number(id)); // its URL shapes the hidden addresses
  });
  let armed = false;
  void listener.listened(PRESENCE_CHANNEL).then(() => {
    armed = true;
  });

  async function refresh(db: Db, copy: RealmCopy): Promise<void> {
    const full = copy.newestId < 0;
    const stale = [...copy.stale];
    copy.stale.clear();
    // Every id announced before this refresh was committed before it: its snapshot holds them all.
    const announced = copy.announcedId;
    const startedAt = generation;
    try {
      const rows = await presenceRowsOfRealm(db, copy.realm.id, full ? null : { afterUpdateId: copy.newestId, userIds: stale });
      if (generation !== startedAt) return;
      let newest = Math.max(copy.newestId, announced, 0);
      for (const row of rows) {
        const entry = entryOf(copy.realm, row);
        copy.entries.set(entry.userId, entry);
        if (entry.updateId > newest) newest = entry.updateId;
      }
      // A user fetched again without a row any more (deleted) is no longer answered.
      if (!full) for (const id of stale) if (!rows.some((r) => r.user_id === id)) copy.entries.delete(id);
      copy.newestId = newest;
      if (rows.length > 0 || stale.length > 0) copy.ordered = null;
    } catch (error) {
      for (const id of stale) copy.stale.add(id);
      throw error;
    }
  }

  /** The organization's copy, brought up to date: kept while notifications are heard, else made for this read. */
  async function upToDate(db: Db, realm: Realm, fresh: boolean): Promise<RealmCopy> {
    // Every write committed before this read has been heard of (its announcement comes at its commit).
    if (fresh) await listener.barrier();
    const keep = armed && listener.listening;
    let copy = keep ? copies.get(realm.id) : undefined;
    if (copy) {
      // Least recently read first in line to go.
      copies.delete(realm.id);
      copies.set(realm.id, copy);
    } else {
      copy = { realm, entries: new Map(), ordered: null, newestId: -1, announcedId: -1, stale: new Set(), refreshing: null };
      if (keep) {
        if (copies.size >= MAX_REALMS) copies.delete(copies.keys().next().value!);
        copies.set(realm.id, copy);
      }
    }
    const current = copy;
    while (current.newestId < 0 || current.announcedId > current.newestId || current.stale.size > 0) {
      if (!current.refreshing) {
        const running: Promise<void> = refresh(db, current).finally(() => {
          if (current.refreshing === running) current.refreshing = null;
        });
        current.refreshing = running;
      }
      await current.refreshing;
      // Notifications may have been missed meanwhile (the copies were dropped): start over.
      if (keep && copies.get(realm.id) !== current) return upToDate(db, realm, fresh);
    }
    return current;
  }

  return {
    get size() {
      let entries = 0;
      for (const copy of copies.values()) entries += copy.entries.size;
      return { realms: copies.size, entries };
    },
    async read(db, realm, query, { own, fresh }) {
      const nowMs = Date.now();
      const answerOf = (members: string[], newestId: number): PresenceAnswer => {
        const json = `{${members.join(',')}}`;
        return { presences: json.length < SMALL_ANSWER ? (JSON.parse(json) as Record<string, unknown>) : new RawJson(json), presence_last_update_id: newestId, server_timestamp: nowMs / 1000 };
      };
      const nothing = query.afterUpdateId ?? -1;
      if (query.disabled) return answerOf([], -1);
      if (query.historyDays === 0) return answerOf([], nothing);
      const copy = await upToDate(db, realm, fresh);
      const cutoff = connectedCutoff(query, nowMs);
      const ordered = (copy.ordered ??= [...copy.entries.values()].sort((a, b) => a.updateId - b.updateId));
      let from = 0;
      if (query.afterUpdateId !== null) {
        // The first entry changed after afterUpdateId.
        let hi = ordered.length;
        while (from < hi) {
          const mid = (from + hi) >> 1;
          if (ordered[mid]!.updateId > query.afterUpdateId) hi = mid;
          else from = mid + 1;
        }
      }
      // The caller's own entry as their report will write it (a report that changes nothing shows nothing new).
      const ownFresh = own ? await ownEntryAfterReport(db, realm, copy.entries.get(own.userId), own) : null;
      const members: string[] = [];
      let newestId = -1;
      for (let i = from; i < ordered.length; i++) {
        const entry = ordered[i]!;
        if (!entry.shown || (cutoff !== null && entry.times.connectedMs < cutoff)) continue;
        if (entry.updateId > newestId) newestId = entry.updateId;
        if (ownFresh && entry.userId === ownFresh.userId) continue;
        members.push(serialised(entry, query.format));
      }
      if (ownFresh) members.push(serialised(ownFresh, query.format));
      return answerOf(members, newestId >= 0 ? newestId : nothing);
    },
  };
}

/**
 * The caller's entry as their report not written yet will make it, or null when the report changes
 * nothing (or is not written: presence turned off). A caller without a row yet (their first report)
 * is read from the database for their address.
 */
async function ownEntryAfterReport(db: Db, realm: Realm, mine: Entry | undefined, own: OwnReport): Promise<Entry | null> {
  if (mine) {
    if (!mine.presenceEnabled || !mine.shown) return null;
    const effect = applyReport(mine.times, own.report);
    return effect.changed ? { ...mine, times: effect.next, modern: undefined, legacy: undefined } : null;
  }
  const subject = await presenceSubjectById(db, realm.id, own.userId);
  if (!subject || !subject.presenceEnabled || !subject.isActive || subject.isBot) return null;
  return {
    userId: own.userId,
    updateId: -1,
    times: applyReport(null, own.report).next,
    dateJoinedMs: subject.dateJoined.getTime(),
    email: publicEmailOf(realm, subject, subject.emailVisibility),
    shown: true,
    presenceEnabled: true,
  };
}

const copiesByListener = new WeakMap<DatabaseListener, PresenceCopies>();

/** The process's copies (one per listener connection, so per server instance). */
export function presenceCopies(listener: DatabaseListener): PresenceCopies {
  let copies = copiesByListener.get(listener);
  if (!copies) {
    copies = createPresenceCopies(listener);
    copiesByListener.set(listener, copies);
  }
  return copies;
}

/**
 * POST /register's `presences`, `presence_last_update_id` and `server_timestamp`, read in the
 * register's snapshot (Zulip's fetch_initial_state_data: no `last_update_id` from the client, so the
 * last `history_limit_days` days, 14 by default).
 */
export async function presenceState(db: RawSql, realm: Realm, options: { format: PresenceFormat; historyDays: number | null; disabled: boolean }): Promise<Record<string, unknown>> {
  const nowMs = Date.now();
  const query: PresenceQuery = { format: options.format, afterUpdateId: null, historyDays: options.historyDays, disabled: options.disabled };
  if (options.disabled || options.historyDays === 0) return { presences: {}, presence_last_update_id: -1, server_timestamp: nowMs / 1000 };
  const rows = await presenceRowsForState(db, realm.id, new Date(connectedCutoff(query, nowMs)!));
  const presences: Record<string, unknown> = {};
  let newestId = -1;
  for (const row of rows) {
    const entry = entryOf(realm, row);
    if (entry.updateId > newestId) newestId = entry.updateId;
    if (options.format === 'modern') presences[String(entry.userId)] = modernPresence(entry.times, entry.dateJoinedMs);
    else presences[entry.email] = legacyPresence(entry.times, entry.dateJoinedMs);
  }
  return { presences, presence_last_update_id: newestId, server_timestamp: nowMs / 1000 };
}

/** GET /users/{user_id_or_email}/presence (Zulip's get_presence_backend). */
export async function userPresence(db: Db, realm: Realm, viewer: User, userIdOrEmail: string, options: { slim: boolean }): Promise<{ presence: Record<string, unknown> }> {
  void viewer; // every user of the organization may read every user's presence (access/presence.ts)
  const subject = await accessPresenceSubject(db, realm, userIdOrEmail);
  const row = await presenceRowOfUser(db, subject.id);
  // Zulip names the user as the path did.
  if (!row) throw new JsonableError(`No presence data for ${userIdOrEmail}`);
  const times = { connectedMs: row.last_connected_time.getTime(), activeMs: row.last_active_time?.getTime() ?? null };
  const joined = subject.dateJoined.getTime();
  return { presence: options.slim ? modernPresence(times, joined) : singleUserLegacyPresence(times, joined, Date.now()) };
}
