// Admission control: at most `limit` API requests run at once in this process; the rest wait in line
// (first come, first served) for up to `queueTimeoutMs`, and are then answered at once with 503 and
// Retry-After rather than piling onto the database pool until transactions time out. A line longer
// than `maxQueue` refuses newcomers immediately.
import type { NextFunction, Request, Response } from 'express';
import { ServerOverloadedError } from '../errors.ts';

export interface AdmissionOptions {
  limit: number;
  queueTimeoutMs: number;
  maxQueue?: number;
}

/** The admission step, and a way in without a line (http/events-route.ts): `enter` takes a free slot or says false, `leave` gives it back. */
export type Admission = ((req: Request, res: Response, next: NextFunction) => void) & { enter(): boolean; leave(): void };

export function admission(options: AdmissionOptions): Admission {
  const maxQueue = options.maxQueue ?? 10_000;
  let running = 0;
  const waiting: Array<{ admit: () => void; timer: NodeJS.Timeout }> = [];
  const retryAfter = Math.max(1, Math.ceil(options.queueTimeoutMs / 1000));

  const release = () => {
    const next = waiting.shift();
    if (next) {
      clearTimeout(next.timer);
      next.admit(); // the slot passes straight to the next in line
    } else {
      running--;
    }
  };

  const step = (_req: Request, res: Response, next: NextFunction) => {
    let released = false;
    const releaseOnce = () => {
      if (released) return;
      released = true;
      release();
    };
    const admit = () => {
      res.on('close', releaseOnce); // a response closes once
      // A long-poll gives its slot back while it waits (see HandlerContext.detachFromAdmission).
      res.locals['releaseAdmission'] = releaseOnce;
      next();
    };
    if (running < options.limit) {
      running++;
      return admit();
    }
    if (waiting.length >= maxQueue) return next(new ServerOverloadedError(retryAfter));
    const entry = {
      admit,
      timer: setTimeout(() => {
        const i = waiting.indexOf(entry);
        if (i >= 0) waiting.splice(i, 1);
        next(new ServerOverloadedError(retryAfter));
      }, options.queueTimeoutMs),
    };
    // A client that gives up while waiting leaves the line.
    res.on('close', () => {
      const i = waiting.indexOf(entry);
      if (i >= 0) {
        waiting.splice(i, 1);
        clearTimeout(entry.timer);
      }
    });
    waiting.push(entry);
  };
  return Object.assign(step, {
    // Only when nobody waits in line (who came first goes first) and a slot is free.
    enter: () => {
      if (running >= options.limit || waiting.length > 0) return false;
      running++;
      return true;
    },
    leave: release,
  });
}
