// The one place where failures become Zulip's error envelope. It is total: whatever is thrown (a
// JsonableError, a validator or body-parser failure, a database error, a bug), the client gets JSON in
// the envelope with a `code`, never an HTML page, a stack trace or a file path.
import type { NextFunction, Request, Response } from 'express';
import { JsonableError, ServerOverloadedError } from '../errors.ts';
import type { RequestState } from './context.ts';
import type { Logger } from './logging.ts';
import { requestIdOf } from './logging.ts';
import { sendError } from './respond.ts';
import { RequestValidationError, toZulipError, UnmappedValidationError } from './validation-errors.ts';
import type { ParamRules } from './validation-spec.ts';
import { outOfResources } from '../data/database-errors.ts';

const internalError = () => new JsonableError('Internal server error', { status: 500, code: 'INTERNAL_SERVER_ERROR' });

export function errorHandler(rules: Map<string, ParamRules>, logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return abandon(res);
    let mapped: JsonableError | null = null;
    try {
      mapped = toJsonableError(error, rules, res.locals.parley as RequestState | undefined, logger, requestIdOf(res));
    } catch (mappingFailure) {
      error = mappingFailure;
    }
    if (!mapped || mapped.status >= 500) {
      logger.error({ req_id: requestIdOf(res), method: req.method, path: req.path, err: error }, 'request failed');
    }
    // Development and tests validate this envelope against the operation's responses in the spec
    // (http/respond.ts); an envelope the spec does not list throws, on to finalErrorHandler.
    sendError(res, mapped ?? internalError());
  };
}

/**
 * Last resort, after errorHandler: reached only when the envelope itself could not be sent (in
 * development and tests, an error the operation's spec does not list). Writes without res.json, so
 * nothing can intercept it.
 */
export function finalErrorHandler(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    logger.error({ req_id: requestIdOf(res), method: req.method, path: req.path, err: error }, 'error response failed');
    if (res.headersSent) return abandon(res);
    writeJson(res, 500, { result: 'error', msg: 'Internal server error', code: 'INTERNAL_SERVER_ERROR' });
  };
}

/** Writes a JSON body directly (no res.json hooks). */
export function writeJson(res: Response, status: number, body: Record<string, unknown>): void {
  try {
    res.statusCode = status;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body));
  } catch {
    abandon(res);
  }
}

/** The response was already under way: nothing valid can be added, so end the connection. */
function abandon(res: Response): void {
  res.destroy();
}

function toJsonableError(
  error: unknown,
  rules: Map<string, ParamRules>,
  state: RequestState | undefined,
  logger: Logger,
  requestId: string,
): JsonableError | null {
  if (error instanceof JsonableError) return error;
  // Request validation failures (http/validate.ts): the first, in Zulip's wording. (Before the database
  // failures, which are recognised by their text: a failure's path holds the client's own JSON keys.)
  if (error instanceof RequestValidationError && error.errors[0]) {
    const issue = error.errors[0];
    try {
      return toZulipError(issue, state ? rules.get(state.operation.operationId) : undefined);
    } catch (unmapped) {
      if (!(unmapped instanceof UnmappedValidationError)) throw unmapped;
      // A validator failure without a Zulip wording yet: still the client's error.
      logger.error({ req_id: requestId, issue }, unmapped.message);
      return new JsonableError(`Invalid ${issue.path.split('/').filter(Boolean).slice(1).join('.') || 'request'}`);
    }
  }
  const databaseFailure = databaseErrorOf(error);
  if (databaseFailure) return databaseFailure;
  const e = error as { status?: number; statusCode?: number; expose?: boolean; type?: string; code?: string };
  if (!e || typeof e !== 'object') return null;
  // Body parsing failures (http-errors with expose: malformed or oversized bodies, bad encodings).
  const status = e.status ?? e.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500 && e.expose !== false) {
    return new JsonableError(bodyFailureMessage(e), { status: status === 413 || status === 415 ? status : 400 });
  }
  return null;
}

function bodyFailureMessage(e: { type?: string; code?: string; status?: number; statusCode?: number }): string {
  if (e.type === 'entity.too.large' || e.status === 413) return 'Request body too large';
  if (e.type === 'encoding.unsupported') return 'Unsupported Content-Encoding';
  if (e.type === 'charset.unsupported') return 'Unsupported charset';
  // zlib (Z_DATA_ERROR …) and brotli (ERR__ERROR_FORMAT_… ) decoding failures
  if (typeof e.code === 'string' && /^(Z_|ERR__|ERR_BROTLI)/.test(e.code)) return 'Request body does not match its Content-Encoding';
  if (e.type === 'request.aborted') return 'Request aborted';
  return 'Malformed request body';
}

/** Seconds a client is asked to wait when the database is out of space or memory (an operator has to act). */
const OUT_OF_RESOURCES_RETRY_SECONDS = 30;

/** Database failures that are not bugs: numbers out of range (the client's), and overload (ours, transient). */
function databaseErrorOf(error: unknown): JsonableError | null {
  const e = error as { code?: string; message?: string; cause?: { code?: string; originalCode?: string; message?: string } } | null;
  if (!e || typeof e !== 'object') return null;
  const text = `${e.code ?? ''} ${e.cause?.code ?? ''} ${e.cause?.originalCode ?? ''} ${e.message ?? ''} ${e.cause?.message ?? ''}`;
  if (/\b22003\b|P2020|out of range for type (integer|smallint|bigint)|value out of range/i.test(text)) return new JsonableError('Number out of range');
  // The database cannot write (disk full, out of memory): 503, as overload. The failure is the server's
  // and passes (space returns, nothing to change in the request); the transaction rolled back, so
  // nothing was written and the client may retry. (507 Insufficient Storage is WebDAV's, unknown to
  // Zulip's clients, which retry 503 and show other 5xx as failures.)
  const lacking = outOfResources(error);
  if (lacking) {
    const msg = lacking === 'disk' ? 'The server is out of storage space; retry later' : 'The server is out of resources; retry later';
    return new JsonableError(msg, { status: 503, code: 'SERVER_OVERLOADED', data: { 'retry-after': OUT_OF_RESOURCES_RETRY_SECONDS }, headers: { 'Retry-After': String(OUT_OF_RESOURCES_RETRY_SECONDS) } });
  }
  // Transaction or connection not obtained in time, too many connections, statement timeout, shutdown.
  if (/P2024|P2028|\b53300\b|\b57014\b|\b57P0[123]\b|Unable to start a transaction in the given time|timed out fetching a new connection|timeout exceeded when trying to connect|waiting for a database connection/i.test(text)) {
    return new ServerOverloadedError(1);
  }
  return null;
}
