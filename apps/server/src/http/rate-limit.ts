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
      const outcome = limiter.consume(key);
      res.setHeader('X-RateLimit-Limit', String(outcome.limit));
      res.setHeader('X-RateLimit-Remaining', String(outcome.remaining));
      res.setHeader('X-RateLimit-Reset', String(Math.ceil(Date.now() / 1000 + outcome.resetSeconds)));
      if (!outcome.allowed) return next(new RateLimitedError(Math.max(outcome.resetSeconds, 0.001)));
      next();
    } catch (error) {
      next(error);
    }
  };
}
