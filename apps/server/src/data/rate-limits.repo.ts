// Rate limits shared by every server process through PostgreSQL (rate-limiter-flexible's Prisma
// store), without a database round trip per request. Each process decides locally from the shared
// count it last learned plus what it accepted since, and writes its new consumption behind the
// request, coalesced per key; every write returns the shared count, which the next decision uses.
// The shared budget can be overshot only by what other processes accepted since this process's last
// write for that key (for sequential traffic: one request per process), which is the bounded error
// we accept for removing two statements from every request.
import { RateLimiterPrisma } from 'rate-limiter-flexible';
import type { PrismaClient } from './db.ts';

export interface RateLimitRule {
  points: number;
  durationSeconds: number;
}

export interface RateLimitOutcome {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

export interface RateLimiter {
  consume(key: string): RateLimitOutcome;
  /** Resolves once every accepted request was written to the shared store. */
  flush(): Promise<void>;
  /** Writes what is left and stops the limiter's timers (the process, or this server in it, is closing). */
  close(): Promise<void>;
}

/** Rows whose window ended more than an hour ago serve nobody (the library's own sweep keeps the same hour). */
const PRUNE_EVERY_MS = 5 * 60_000;

/** Deletes the shared store's rows whose window ended over an hour ago. */
export async function pruneExpiredRateLimits(db: PrismaClient): Promise<number> {
  const { count } = await db.rateLimiterFlexible.deleteMany({ where: { expire: { lt: new Date(Date.now() - 3_600_000) } } });
  return count;
}

interface KeyState {
  /** The shared count as of this process's last write. */
  shared: number;
  /** Accepted here and not written yet. */
  unwritten: number;
  /** Accepted here and being written now (not in `shared` until the write answers). */
  writingPoints: number;
  /** When the current window ends (ms since epoch). */
  resetAt: number;
  writing: boolean;
}

export function createRateLimiter(db: PrismaClient, rule: RateLimitRule, keyPrefix: string, onError: (error: unknown) => void = () => {}): RateLimiter {
  const store = new RateLimiterPrisma({
    storeClient: db,
    tableName: 'rateLimiterFlexible',
    points: rule.points,
    duration: rule.durationSeconds,
    keyPrefix,
    // Its own timer could not be stopped when a server closes; ours (below) can.
    clearExpiredByTimeout: false,
  });
  const states = new Map<string, KeyState>();
  const inFlight = new Set<Promise<void>>();
  const windowMs = rule.durationSeconds * 1000;

  async function write(key: string, state: KeyState): Promise<void> {
    state.writing = true;
    try {
      while (state.unwritten > 0) {
        const points = state.unwritten;
        state.unwritten = 0;
        state.writingPoints = points;
        try {
          // penalty() adds points without refusing, and answers the shared total and the window's end.
          const res = await store.penalty(key, points);
          state.shared = res.consumedPoints;
          state.resetAt = Date.now() + res.msBeforeNext;
        } catch (error) {
          onError(error);
          state.shared += points; // keep counting locally; the next write catches up
        } finally {
          state.writingPoints = 0;
        }
      }
    } finally {
      state.writing = false;
      if (state.resetAt <= Date.now() && state.unwritten === 0) states.delete(key);
    }
  }

  // Windows that ended are forgotten, so memory follows the active keys only.
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, state] of states) if (state.resetAt <= now && !state.writing && state.unwritten === 0) states.delete(key);
  }, Math.max(1_000, Math.min(windowMs, 60_000)));
  sweep.unref();
  const prune = setInterval(() => void pruneExpiredRateLimits(db).catch(onError), PRUNE_EVERY_MS);
  prune.unref();

  return {
    consume(key) {
      const now = Date.now();
      let state = states.get(key);
      if (!state || (state.resetAt <= now && !state.writing)) {
        state = { shared: 0, unwritten: 0, writingPoints: 0, resetAt: now + windowMs, writing: false };
        states.set(key, state);
      }
      const used = state.shared + state.writingPoints + state.unwritten;
      const resetSeconds = Math.max((state.resetAt - now) / 1000, 0.001);
      if (used >= rule.points) return { allowed: false, limit: rule.points, remaining: 0, resetSeconds };
      state.unwritten++;
      if (!state.writing) {
        const writing = write(key, state);
        inFlight.add(writing);
        void writing.finally(() => inFlight.delete(writing));
      }
      return { allowed: true, limit: rule.points, remaining: rule.points - used - 1, resetSeconds };
    },
    async flush() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
    async close() {
      clearInterval(sweep);
      clearInterval(prune);
      await this.flush();
    },
  };
}
