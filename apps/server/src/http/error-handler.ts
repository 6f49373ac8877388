// The one place where failures become Zulip's error envelope. No validator message, stack trace or
// HTML page ever reaches a client.
import type { NextFunction, Request, Response } from 'express';
import type { Config } from '../config.ts';
import { JsonableError } from '../errors.ts';
import type { RequestState } from './context.ts';
import { sendError } from './respond.ts';
import { toZulipError, UnmappedValidationError, type ValidatorIssue } from './validation-errors.ts';
import type { ParamRules } from './validation-spec.ts';

export function errorHandler(rules: Map<string, ParamRules>, config: Config) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return;
    const mapped = toJsonableError(error, rules, res.locals.parley as RequestState | undefined);
    if (mapped) {
      try {
        return sendError(res, mapped);
      } catch (invalid) {
        // Development/test response validation refused the error envelope (the spec does not list it).
        error = invalid;
      }
    }
    if (!config.validateResponses || process.env.PARLEY_QUIET_ERRORS !== '1') {
      console.error(`[parley] ${req.method} ${req.originalUrl} failed:`, error);
    }
    res.status(500).json({ result: 'error', msg: 'Internal server error' });
  };
}

function toJsonableError(error: unknown, rules: Map<string, ParamRules>, state: RequestState | undefined): JsonableError | null {
  if (error instanceof JsonableError) return error;
  if (isOutOfRange(error)) return new JsonableError('Number out of range');
  const e = error as { status?: number; errors?: ValidatorIssue[]; type?: string };
  // body-parser failures (malformed bodies, too large)
  if (e && typeof e.type === 'string' && typeof e.status === 'number' && e.status < 500) {
    return new JsonableError(e.status === 413 ? 'Request body too large' : 'Malformed request body', { status: e.status });
  }
  // express-openapi-validator request failures
  if (e && typeof e.status === 'number' && e.status < 500 && Array.isArray(e.errors) && e.errors[0]) {
    if (e.status === 400) {
      try {
        return toZulipError(e.errors[0], state ? rules.get(state.operation.operationId) : undefined);
      } catch (unmapped) {
        if (unmapped instanceof UnmappedValidationError) console.error(`[parley] ${unmapped.message}`);
        return null;
      }
    }
    return new JsonableError(e.status === 404 ? 'Not Found' : e.errors[0].message, { status: e.status });
  }
  return null;
}

/** A number the database cannot hold (an id beyond PostgreSQL's integer range, say): the client's fault. */
function isOutOfRange(error: unknown): boolean {
  const e = error as { code?: string; message?: string; cause?: { code?: string; originalCode?: string } };
  const text = `${e?.code ?? ''} ${e?.cause?.code ?? ''} ${e?.cause?.originalCode ?? ''} ${e?.message ?? ''}`;
  return /\b22003\b|P2020|out of range for type (integer|smallint)|value out of range/i.test(text);
}
