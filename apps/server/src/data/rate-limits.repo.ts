// Rate limits stored in PostgreSQL (rate-limiter-flexible's Prisma store), so that every server
// process sharing the database counts the same requests.
import { RateLimiterPrisma, RateLimiterRes } from 'rate-limiter-flexible';
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
  consume(key: string): Promise<RateLimitOutcome>;
}

export function createRateLimiter(db: PrismaClient, rule: RateLimitRule, keyPrefix: string): RateLimiter {
  const limiter = new RateLimiterPrisma({
    storeClient: db,
    tableName: 'rateLimiterFlexible',
    points: rule.points,
    duration: rule.durationSeconds,
    keyPrefix,
  });
  return {
    async consume(key) {
      try {
        const res = await limiter.consume(key);
        return { allowed: true, limit: rule.points, remaining: res.remainingPoints, resetSeconds: res.msBeforeNext / 1000 };
      } catch (error) {
        if (error instanceof RateLimiterRes) {
          return { allowed: false, limit: rule.points, remaining: 0, resetSeconds: error.msBeforeNext / 1000 };
        }
        throw error;
      }
    },
  };
}
