// Presence, as Zulip models it (zerver/actions/presence.py, zerver/lib/presence.py): each user has a
// time they were last connected (any report, `idle` or `active`) and a time they were last active (an
// `active` report). These are Zulip's server settings and rules, and the two formats in which clients
// read presence. Pure functions: no I/O.

/** How often clients report (register's `server_presence_ping_interval_seconds`; Zulip's PRESENCE_PING_INTERVAL_SECS). */
export const PRESENCE_PING_INTERVAL_SECS = 60;
/** After how long without a report clients show a user offline (Zulip's OFFLINE_THRESHOLD_SECS, 3 × 60 + 20). */
export const OFFLINE_THRESHOLD_SECS = 200;
/** A report within this long of the stored time changes nothing (Zulip's PRESENCE_UPDATE_MIN_FREQ_SECONDS). */
export const PRESENCE_UPDATE_MIN_FREQ_SECS = 55;
/** Legacy format: `active` when last active within this long of last connected (PRESENCE_LEGACY_EVENT_OFFSET_FOR_ACTIVITY_SECONDS). */
export const LEGACY_ACTIVE_OFFSET_SECS = 70;
/**
 * A user counts as coming back online (and is announced with a `presence` event) when they report
 * `active` this long after they were last active: they missed two reports and are about to be shown
 * offline (OFFLINE_THRESHOLD_SECS − PRESENCE_PING_INTERVAL_SECS − 10, as Zulip computes it).
 */
export const BACK_ONLINE_AFTER_SECS = OFFLINE_THRESHOLD_SECS - PRESENCE_PING_INTERVAL_SECS - 10;
/** Organizations with more active users than this get no `presence` events (USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS). */
export const USER_LIMIT_FOR_PRESENCE_EVENTS = 100;
/** How far back presence is answered when the client does not say (days; Zulip's default of get_presence_dict_by_realm). */
export const DEFAULT_HISTORY_LIMIT_DAYS = 14;
/**
 * Turning `presence_enabled` off leaves the user last connected this long ago (and never active), so
 * that every client shows them offline (OFFLINE_THRESHOLD_SECS + 120, Zulip's do_change_user_setting).
 */
export const DISABLED_PRESENCE_AGE_SECS = OFFLINE_THRESHOLD_SECS + 120;
/**
 * Push notifications: a user's event queue that accepts messages counts as a client of theirs on
 * Zulip only if it was polled this recently (Zulip's EVENT_QUEUE_OFFLINE_TIMEOUT_SECS, zerver/tornado).
 */
export const EVENT_QUEUE_OFFLINE_TIMEOUT_SECS = 600;

/** A user's stored presence: milliseconds since the epoch. */
export interface PresenceTimes {
  /** Last `active` report; null when the user never reported being active. */
  activeMs: number | null;
  /** Last report of either kind. */
  connectedMs: number;
}

/**
 * One or more reports of a user, as received between two writes: the time of the newest, and of the
 * newest `active` one (null when every report was `idle`).
 */
export interface PresenceReport {
  atMs: number;
  activeAtMs: number | null;
}

/** Adds a report to the reports not written yet (null: none so far). */
export function mergeReports(pending: PresenceReport | null | undefined, atMs: number, active: boolean): PresenceReport {
  return {
    atMs: Math.max(pending?.atMs ?? atMs, atMs),
    activeAtMs: active ? Math.max(pending?.activeAtMs ?? atMs, atMs) : (pending?.activeAtMs ?? null),
  };
}

export interface ReportEffect {
  next: PresenceTimes;
  /** Whether the stored presence changes (a write, with a new update id). */
  changed: boolean;
  /** Whether the user is announced with a `presence` event: first report ever, or back online. */
  announce: boolean;
}

/**
 * What a report does to a user's stored presence (Zulip's do_update_user_presence): the first report
 * creates it; later, each time moves forward only when it is more than 55 s newer than the stored one
 * (so that several open windows do not each write every minute). A user is announced when first seen
 * and when they report `active` after BACK_ONLINE_AFTER_SECS without being active.
 */
export function applyReport(current: PresenceTimes | null, report: PresenceReport): ReportEffect {
  if (current === null) {
    return { next: { connectedMs: report.atMs, activeMs: report.activeAtMs }, changed: true, announce: true };
  }
  const minGap = PRESENCE_UPDATE_MIN_FREQ_SECS * 1000;
  let { connectedMs, activeMs } = current;
  let changed = false;
  if (report.atMs - current.connectedMs > minGap) {
    connectedMs = report.atMs;
    changed = true;
  }
  let announce = false;
  if (report.activeAtMs !== null) {
    const sinceActive = current.activeMs === null ? Infinity : report.activeAtMs - current.activeMs;
    announce = sinceActive > BACK_ONLINE_AFTER_SECS * 1000;
    if (sinceActive > minGap) {
      activeMs = report.activeAtMs;
      // Last connected is never before last active.
      if (connectedMs < report.activeAtMs) connectedMs = report.activeAtMs;
      changed = true;
    }
  }
  return { next: { connectedMs, activeMs }, changed, announce };
}

/** UNIX seconds of a time in milliseconds, as Zulip's datetime_to_timestamp (whole seconds, rounded down). */
export const unixSeconds = (ms: number): number => Math.floor(ms / 1000);

/** The modern format: never-active users show the time they joined (Zulip's date_joined default). */
export function modernPresence(times: PresenceTimes, dateJoinedMs: number): { active_timestamp: number; idle_timestamp: number } {
  return { active_timestamp: unixSeconds(times.activeMs ?? dateJoinedMs), idle_timestamp: unixSeconds(times.connectedMs) };
}

export interface LegacyClientPresence {
  client: 'website';
  status: 'active' | 'idle';
  timestamp: number;
  pushable: false;
}

/**
 * The legacy format's one entry (Zulip's format_legacy_presence_dict): `active`, with the time last
 * active, when that is within 70 s of the time last connected; otherwise `idle` with the latter.
 */
export function legacyClientPresence(times: PresenceTimes, dateJoinedMs: number): LegacyClientPresence {
  const activeMs = times.activeMs ?? dateJoinedMs;
  return activeMs + LEGACY_ACTIVE_OFFSET_SECS * 1000 >= times.connectedMs
    ? { client: 'website', status: 'active', timestamp: unixSeconds(activeMs), pushable: false }
    : { client: 'website', status: 'idle', timestamp: unixSeconds(times.connectedMs), pushable: false };
}

/** The legacy format: the same data under `aggregated` and `website` (Zulip feature level 178). */
export function legacyPresence(times: PresenceTimes, dateJoinedMs: number) {
  const website = legacyClientPresence(times, dateJoinedMs);
  return { aggregated: { client: website.client, status: website.status, timestamp: website.timestamp }, website };
}

/**
 * GET /users/{user_id_or_email}/presence in the legacy format: without `client` and `pushable`, and
 * `aggregated` says `offline` once the report it shows is older than OFFLINE_THRESHOLD_SECS.
 */
export function singleUserLegacyPresence(times: PresenceTimes, dateJoinedMs: number, nowMs: number) {
  const { status, timestamp } = legacyClientPresence(times, dateJoinedMs);
  const stale = unixSeconds(nowMs) - timestamp > OFFLINE_THRESHOLD_SECS;
  return { aggregated: { status: stale ? ('offline' as const) : status, timestamp }, website: { status, timestamp } };
}

/** The `presence` event of a user's presence: stored in the legacy form, the modern one beside it for delivery. */
export function presenceEventPayload(user: { id: number; email: string }, times: PresenceTimes, dateJoinedMs: number, nowMs: number): Record<string, unknown> {
  return {
    type: 'presence',
    user_id: user.id,
    email: user.email,
    server_timestamp: nowMs / 1000,
    presence: { website: legacyClientPresence(times, dateJoinedMs) },
    _presences: { [String(user.id)]: modernPresence(times, dateJoinedMs) },
  };
}

/**
 * A stored `presence` event as one queue receives it (Zulip's process_presence_event): the modern form
 * for clients with the `simplified_presence_events` capability, the legacy form without `email` for
 * queues registered with `slim_presence`, the legacy form otherwise. `event` is the stored payload
 * with the queue's event id, delivery-only fields already removed; `stored` the payload as stored.
 */
export function presenceEventForQueue(event: Record<string, unknown>, stored: Record<string, unknown>, capabilities: Record<string, boolean>): Record<string, unknown> {
  if (capabilities['simplified_presence_events'] === true) return { id: event['id'], type: 'presence', presences: stored['_presences'] };
  if (capabilities[SLIM_PRESENCE_QUEUE_FLAG] === true) {
    const { email: _email, ...slim } = event;
    return slim;
  }
  return event;
}

/**
 * Where a queue keeps that it was registered with `slim_presence` (Zulip's ClientDescriptor field of the
 * same name): beside its client capabilities, set by the server from the register parameter.
 */
export const SLIM_PRESENCE_QUEUE_FLAG = 'slim_presence';

/**
 * A user named by `GET /users/{user_id_or_email}/presence`: an integer as Python's int() reads one
 * (surrounding spaces, a sign, underscores between digits), else an e-mail address.
 */
export function parseUserIdOrEmail(value: string): { id: number } | { email: string } {
  const m = /^\s*([+-]?)(\d+(?:_\d+)*)\s*$/.exec(value);
  if (!m) return { email: value };
  const n = Number(m[2]!.replaceAll('_', ''));
  return { id: m[1] === '-' ? -n : n };
}
