import type { Response } from 'express';
import type { JsonableError } from '../errors.ts';
import { RawJson } from '../lib/raw-json.ts';

/**
 * The success envelope. Values already serialised (RawJson) are spliced in as text; when responses are
 * validated (development, tests) the body is parsed back first, so that it is validated like any other.
 */
/** The whole answer of an operation that answers nothing more (typing, most writes). */
const EMPTY_SUCCESS = JSON.stringify({ result: 'success', msg: '' });

function hasNoKeys(data: Record<string, unknown>): boolean {
  for (const _ in data) return false;
  return true;
}

export function sendSuccess(res: Response, data: Record<string, unknown>, ignored: string[], options: { validated: boolean }): void {
  if (!options.validated && ignored.length === 0 && hasNoKeys(data)) {
    writeJsonBody(res, EMPTY_SUCCESS);
    return;
  }
  const body: Record<string, unknown> = { result: 'success', msg: '', ...data };
  if (ignored.length > 0) body.ignored_parameters_unsupported = ignored;
  if (!Object.values(body).some((v) => v instanceof RawJson)) {
    if (options.validated) {
      res.status(200);
      checkResponse(res, body);
      res.json(body);
      return;
    }
    // What res.json writes here (no JSON settings, no ETag, never fresh for a 200 without validators),
    // without its header parsing and formatting.
    writeJsonBody(res, JSON.stringify(body));
    return;
  }
  if (options.validated) {
    const parsed: unknown = JSON.parse(JSON.stringify(body));
    res.status(200);
    checkResponse(res, parsed);
    res.json(parsed);
    return;
  }
  // Text only (a long-poll's events, say): one string, written at once like any other answer.
  if (Object.values(body).every((v) => !(v instanceof RawJson) || v.chunks.every((c) => typeof c === 'string'))) {
    let json = '';
    for (const [name, value] of Object.entries(body)) {
      json += `${json === '' ? '{' : ','}${JSON.stringify(name)}:`;
      if (value instanceof RawJson) for (const c of value.chunks) json += c as string;
      else json += JSON.stringify(value);
    }
    writeJsonBody(res, `${json}}`);
    return;
  }
  // Written piece by piece: cached bytes go out as they are (not copied for this response); the text
  // between them is joined and encoded once per stretch (a registration: a handful of pieces, not one
  // per key), and the pieces leave in one write (corked).
  const buffers: Buffer[] = [];
  let text = '';
  const add = (chunk: string | Buffer) => {
    if (typeof chunk === 'string') text += chunk;
    else {
      if (text !== '') buffers.push(Buffer.from(text));
      text = '';
      buffers.push(chunk);
    }
  };
  let first = true;
  for (const [name, value] of Object.entries(body)) {
    add(`${first ? '{' : ','}${JSON.stringify(name)}:`);
    first = false;
    if (value instanceof RawJson) for (const chunk of value.chunks) add(chunk);
    else add(JSON.stringify(value));
  }
  add('}');
  buffers.push(Buffer.from(text));
  res.status(200);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(buffers.reduce((n, b) => n + b.length, 0)));
  if (res.req.method === 'HEAD') {
    res.end();
    return;
  }
  res.cork();
  for (const buffer of buffers) res.write(buffer);
  res.end();
  res.uncork();
}

/** Status 200, a JSON body: the headers res.json sets (Content-Type with charset, Content-Length); none for HEAD. */
export function writeJsonBody(res: Response, json: string): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(json)));
  if (res.req.method === 'HEAD') res.end();
  else res.end(json, 'utf8');
}

export function sendError(res: Response, error: JsonableError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  const body = { result: 'error', msg: error.message, code: error.code, ...error.data };
  res.status(error.status);
  checkResponse(res, body);
  res.json(body);
}

/**
 * Response validation (development and tests): the validate step (http/validate.ts) leaves, once a
 * request passed it, the check its operation's responses must pass. The first JSON body sent after that
 * (success or error envelope) is checked, unless its status is 5xx; a body the spec does not allow
 * throws here, before anything is written (the answer becomes a 500 on the way out: see
 * http/error-handler.ts).
 */
export type ResponseCheck = (status: number, body: unknown) => void;
const RESPONSE_CHECK = 'parleyResponseCheck';

export function checkResponsesWith(res: Response, check: ResponseCheck): void {
  res.locals[RESPONSE_CHECK] = check;
}

function checkResponse(res: Response, body: unknown): void {
  const check = res.locals?.[RESPONSE_CHECK] as ResponseCheck | undefined;
  if (check === undefined) return;
  res.locals[RESPONSE_CHECK] = undefined;
  if (res.headersSent || res.statusCode >= 500) return;
  check(res.statusCode, body);
}
