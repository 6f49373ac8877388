// Zulip-style rate limiting: per authenticated user (or per client address for anonymous calls),
// 429 RATE_LIMIT_HIT with `retry-after`, and X-RateLimit-* headers on limited endpoints.
import type { NextFunction, Request, Response } from 'express';
import type { RateLimiter } from '../data/rate-limits.repo.ts';
import { RateLimitedError } from '../errors.ts';
import type { RequestState } from './context.ts';

export function rateLimit(limiter: RateLimiter | null) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!limiter) return next();
    const state = res.locals.parley as RequestState;
    const key = state.user ? `user:${state.user.id}` : `ip:${req.ip ?? 'unknown'}`;
    try {
      consumeRateLimit(limiter, key, res);
      next();
    } catch (error) {
      next(error);
    }
  };
}

/** Counts one request against `key`: the X-RateLimit-* headers set, RateLimitedError thrown when over the limit (also http/events-route.ts). */
export function consumeRateLimit(limiter: RateLimiter, key: string, res: Response): void {
  const outcome = limiter.consume(key);
  res.setHeader('X-RateLimit-Limit', String(outcome.limit));
  res.setHeader('X-RateLimit-Remaining', String(outcome.remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil(Date.now() / 1000 + outcome.resetSeconds)));
  if (!outcome.allowed) throw new RateLimitedError(Math.max(outcome.resetSeconds, 0.001));
}
