// Presence reports are the most frequent request (every client, every minute) and each one is small:
// writing each in a transaction of its own would make them the bulk of the database's work. Instead
// every process keeps the reports it received and not yet written, one per user (later reports of a
// user merge into it), and writes them every flush interval, one transaction per organization with one
// multi-row upsert (actions/presence.ts flushPresenceReports). Memory holds only the reports of the
// last interval. A report is written at most one interval after it arrived (then every process reads
// it: queries/presence.ts); a write that fails is tried again with the next one; stopping the server
// writes what is left.
import type { Realm } from '../data/models.ts';
import type { Logger } from '../http/logging.ts';
import { mergeReports, type PresenceReport } from '../lib/presence.ts';

/** Writes one organization's reports (the buffer hands them over and forgets them). */
export type FlushReports = (realm: Realm, reports: Map<number, PresenceReport>) => Promise<void>;

export interface PresenceBuffer {
  /** Takes a report of `userId` (`active` or not) made at `atMs`. */
  report(realm: Realm, userId: number, active: boolean, atMs: number): void;
  /** The user's reports taken by this process and not written yet. */
  pending(userId: number): PresenceReport | undefined;
  /** Forgets the user's reports not written yet (their presence was just written otherwise). */
  forget(userId: number): void;
  /** Writes every report taken so far; resolves once they are written (or failed and kept). */
  flush(): Promise<void>;
  /** Writes what is left and takes no more reports into the background (each one is then written at once). */
  close(): Promise<void>;
  /** Counters since start (tests, benchmarks). */
  readonly stats: { reports: number; flushes: number; transactions: number; failures: number };
}

export function createPresenceBuffer(write: FlushReports, options: { intervalMs: number; logger: Logger }): PresenceBuffer {
  /** Reports not written yet, by organization then user. */
  let waiting = new Map<number, Map<number, PresenceReport>>();
  /** Reports being written now (still shown by `pending`). */
  let writing = new Map<number, Map<number, PresenceReport>>();
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  /** The organizations reports were taken for, as the latest request saw them (their URL shapes addresses). */
  const realms = new Map<number, Realm>();
  let closed = false;
  const stats = { reports: 0, flushes: 0, transactions: 0, failures: 0 };

  const schedule = () => {
    if (timer || closed) return;
    timer = setTimeout(() => {
      timer = null;
      void flush();
    }, options.intervalMs);
    timer.unref();
  };

  function take(realmId: number, userId: number, report: PresenceReport): void {
    let users = waiting.get(realmId);
    if (!users) waiting.set(realmId, (users = new Map()));
    users.set(userId, report);
  }

  async function writeAll(): Promise<void> {
    if (waiting.size === 0) return;
    writing = waiting;
    waiting = new Map();
    stats.flushes++;
    await Promise.all(
      [...writing].map(async ([realmId, reports]) => {
        stats.transactions++;
        try {
          await write(realms.get(realmId)!, reports);
        } catch (error) {
          stats.failures++;
          options.logger.error({ err: error, realm_id: realmId, reports: reports.size }, 'presence write failed; kept for the next one');
          // Kept, merged with what arrived meanwhile, for the next write.
          for (const [userId, report] of reports) {
            const later = waiting.get(realmId)?.get(userId);
            take(realmId, userId, later ? { atMs: Math.max(later.atMs, report.atMs), activeAtMs: maxOrNull(later.activeAtMs, report.activeAtMs) } : report);
          }
        }
      }),
    );
    writing = new Map();
  }

  function flush(): Promise<void> {
    // One write at a time; a flush asked for during one waits for it, then writes what came since.
    const previous = running ?? Promise.resolve();
    const next = previous.then(writeAll).finally(() => {
      if (running === next) running = null;
      if (waiting.size > 0) schedule();
    });
    running = next;
    return next;
  }

  return {
    stats,
    report(realm, userId, active, atMs) {
      stats.reports++;
      realms.set(realm.id, realm);
      take(realm.id, userId, mergeReports(waiting.get(realm.id)?.get(userId), atMs, active));
      if (closed) void flush();
      else schedule();
    },
    pending(userId) {
      let found: PresenceReport | undefined;
      for (const users of [writing, waiting]) {
        for (const reports of users.values()) {
          const report = reports.get(userId);
          if (report) found = found ? { atMs: Math.max(found.atMs, report.atMs), activeAtMs: maxOrNull(found.activeAtMs, report.activeAtMs) } : report;
        }
      }
      return found;
    },
    forget(userId) {
      for (const reports of waiting.values()) reports.delete(userId);
    },
    flush,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      await flush();
    },
  };
}

const maxOrNull = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));
