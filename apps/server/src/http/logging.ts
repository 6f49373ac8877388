// Structured logs (pino, one JSON line per event). Every request gets an id, echoed in the
// `X-Request-Id` response header and attached to its log lines, so a client's report of a failure can
// be found in the server's logs.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { pino, type Logger } from 'pino';
import type { RequestState } from './context.ts';
import { observeRequest } from '../metrics/metrics.ts';

export type { Logger };

/**
 * Lines go to standard output in batches (once ~12 KB are buffered, and at least every 250 ms), not one
 * write per line: a write per request costs as much as a small request's own work. What is buffered
 * when the process exits is written then (pino flushes its destinations on exit). With `sink` (tests),
 * lines go there instead, one write per line.
 *
 * Every line passes redactSecrets on its way out, whoever logged it and whatever the fields: the one
 * place that keeps secrets out of the logs.
 */
const destinations = new Set<ReturnType<typeof pino.destination>>();
let flusher: NodeJS.Timeout | undefined;

export function createLogger(level: string, sink?: pino.DestinationStream): Logger {
  const options = { level, base: { service: 'parley' }, hooks: { streamWrite: redactSecrets } };
  if (sink) return pino(options, sink);
  const destination = pino.destination({ dest: 1, sync: false, minLength: 12288 });
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
  return pino(options, destination);
}

const REDACTED = '<redacted>';

/**
 * Paths whose next segment is a secret: the keys of sign-up links (an invitation, a reusable link and
 * its confirmation e-mail), of e-mail change confirmations and of uploaded files' temporary URLs. Whoever holds one can use it. Express
 * routes paths case-insensitively, so they are matched so.
 */
const SECRET_PATH_SEGMENT = /(\/accounts\/(?:do_confirm|join|confirm_new_email)\/|\/user_uploads\/temporary\/)[^/?#"\\\s]+/gi;

/** Names whose values are secrets, as query or form parameters (`api_key=` of webhooks …) or cookies. */
const SECRET_NAMES = 'api_key|apikey|key|password|new_password|old_password|passwd|token|access_token|refresh_token|id_token|secret|client_secret|otp|signature|sessionid|csrftoken|csrfmiddlewaretoken';
const SECRET_PARAMETER = new RegExp(`((?:^|[?&;,\\s"'])(?:${SECRET_NAMES})=)[^&#;,"'\\\\\\s]*`, 'gi');

/** JSON fields whose values are secrets wherever they appear (headers, bodies, objects). */
const SECRET_FIELD = new RegExp(
  `"(authorization|proxy-authorization|cookie|set-cookie|x-api-key|${SECRET_NAMES})"\\s*:\\s*(?:"(?:[^"\\\\]|\\\\.)*"|\\[(?:[^\\]"\\\\]|"(?:[^"\\\\]|\\\\.)*")*\\]|\\{(?:[^{}"\\\\]|"(?:[^"\\\\]|\\\\.)*")*\\}|[^,}\\]\\s]+)`,
  'gi',
);

/** HTTP credentials in text (`Authorization: Basic …`): a token is long, or has a digit or a symbol, unlike words. */
const CREDENTIALS = /\b(Basic|Bearer|Token|Digest) +(?:[A-Za-z0-9+/=._~-]{16,}|(?=[A-Za-z0-9+/=._~-]*[0-9+/=._~-])[A-Za-z0-9+/=._~-]{8,})/gi;

/**
 * Removes secrets from a log line (a JSON line, or any text): link keys in paths and URLs, secret
 * query and form parameters, secret JSON fields (Authorization and Cookie headers, passwords, API
 * keys, tokens), and HTTP credentials. Applies to every field, messages and error stacks included,
 * so that an error quoting a request's URL keeps its key out too.
 */
export function redactSecrets(text: string): string {
  return text
    .replace(SECRET_FIELD, (_match, name: string) => `"${name}":"${REDACTED}"`)
    .replace(SECRET_PATH_SEGMENT, `$1${REDACTED}`)
    .replace(SECRET_PARAMETER, `$1${REDACTED}`)
    .replace(CREDENTIALS, `$1 ${REDACTED}`);
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
      const state = res.locals.parley as Partial<RequestState> | undefined;
      // Metrics (src/metrics): 499 when the client went away before the answer (nginx's convention).
      observeRequest(state?.operation?.operationId, res.writableFinished ? res.statusCode : 499, Number(process.hrtime.bigint() - started) / 1e9);
      if (!logger.isLevelEnabled('info')) return;
      const line: Record<string, unknown> = {
        req_id: id,
        method: req.method,
        // The path only: query strings may carry parameters that should not sit in logs (and the path's
        // secrets are redacted on the way out, see redactSecrets).
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

/** An incoming request id that can be reused (requestLogging's rule), or null. */
export function acceptableRequestId(incoming: string | string[] | undefined): string | null {
  return typeof incoming === 'string' && ACCEPTABLE_REQUEST_ID.test(incoming) ? incoming : null;
}

/** The fields of requestLogging's line, in its order (undefined fields are left out, as pino does). */
export interface RequestLine {
  reqId: string;
  method: string;
  path: string;
  operation: string;
  userId: number | undefined;
  status: number;
  ms: number;
  aborted: boolean;
}

/**
 * requestLogging's line written without pino's object walk and redaction: the same JSON text that
 * `logger.info(line, 'request')` writes (level, time, the logger's bindings, the fields, msg), to the
 * logger's own destination. Only for lines whose every text is known not to hold a secret or need
 * escaping (a fixed path and operation, an id from randomUUID or ACCEPTABLE_REQUEST_ID: letters,
 * digits and `._:-`, so redactSecrets would change nothing). Returns false when the level is off.
 */
export function createRequestLineWriter(logger: Logger): (line: RequestLine) => boolean {
  const symbols = pino.symbols;
  const holder = logger as unknown as Record<symbol, unknown>;
  const stream = holder[symbols.streamSym] as { write(text: string): unknown };
  const time = holder[symbols.timeSym] as () => string;
  const level = logger.levels.values['info']!;
  return (line) => {
    if (!logger.isLevelEnabled('info')) return false;
    // (read each time: a child logger made later has its own bindings, this one keeps its own)
    const bindings = holder[symbols.chindingsSym] as string;
    stream.write(
      `{"level":${level}${time()}${bindings},"req_id":"${line.reqId}","method":"${line.method}","path":"${line.path}","operation":"${line.operation}"` +
        `${line.userId === undefined ? '' : `,"user_id":${line.userId}`},"status":${line.status},"ms":${JSON.stringify(line.ms)}${line.aborted ? ',"aborted":true' : ''},"msg":"request"}\n`,
    );
    return true;
  };
}
