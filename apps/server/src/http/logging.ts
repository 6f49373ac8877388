// Structured logs (pino, one JSON line per event). Every request gets an id, echoed in the
// `X-Request-Id` response header and attached to its log lines, so a client's report of a failure can
// be found in the server's logs.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { pino, type Logger } from 'pino';
import type { RequestState } from './context.ts';

export type { Logger };

/**
 * Lines go to standard output in batches (once ~4 KB are buffered, and at least every 250 ms), not one
 * write per line: a write per request costs as much as a small request's own work. What is buffered
 * when the process exits is written then (pino flushes its destinations on exit).
 */
const destinations = new Set<ReturnType<typeof pino.destination>>();
let flusher: NodeJS.Timeout | undefined;

export function createLogger(level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false, minLength: 4096 });
  destinations.add(destination);
  destination.once('close', () => destinations.delete(destination));
  flusher ??= setInterval(() => {
    for (const d of destinations) {
      try {
        d.flush();
      } catch {
        destinations.delete(d); // closed
      }
    }
  }, 250);
  flusher.unref();
  return pino({ level, base: { service: 'parley' } }, destination);
}

/** An incoming id is reused when it is a plausible token (from a load balancer, say); otherwise a new one. */
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdOf(res: Response): string {
  return (res.locals.requestId as string | undefined) ?? '-';
}

/**
 * Assigns the request id and logs one line once the response is over: finished, or the client went
 * away before (`aborted`). Node emits `close` exactly once per response, after `finish` when it
 * finished, so one listener serves both.
 */
export function requestLogging(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && ACCEPTABLE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = id;
    res.setHeader('X-Request-Id', id);
    const started = process.hrtime.bigint();
    res.on('close', () => {
      if (!logger.isLevelEnabled('info')) return;
      const state = res.locals.parley as Partial<RequestState> | undefined;
      const line: Record<string, unknown> = {
        req_id: id,
        method: req.method,
        // The path only: query strings may carry parameters that should not sit in logs.
        path: req.path === '/' ? req.baseUrl || '/' : `${req.baseUrl}${req.path}`,
        operation: state?.operation?.operationId,
        user_id: state?.user?.id,
        status: res.statusCode,
        ms: Number(process.hrtime.bigint() - started) / 1e6,
      };
      if (!res.writableFinished) line.aborted = true;
      logger.info(line, 'request');
    });
    next();
  };
}
