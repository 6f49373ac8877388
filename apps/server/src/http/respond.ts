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
      res.status(200).json(body); // through the validator's res.json hook
      return;
    }
    // What res.json writes here (no JSON settings, no ETag, never fresh for a 200 without validators),
    // without its header parsing and formatting.
    writeJsonBody(res, JSON.stringify(body));
    return;
  }
  if (options.validated) {
    res.status(200).json(JSON.parse(JSON.stringify(body)));
    return;
  }
  // Written chunk by chunk: cached bytes go out without being copied for this response.
  const chunks: Array<string | Buffer> = [];
  let first = true;
  for (const [name, value] of Object.entries(body)) {
    chunks.push(`${first ? '{' : ','}${JSON.stringify(name)}:`);
    first = false;
    if (value instanceof RawJson) chunks.push(...value.chunks);
    else chunks.push(JSON.stringify(value));
  }
  chunks.push('}');
  const buffers = chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c));
  res.status(200);
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(buffers.reduce((n, b) => n + b.length, 0)));
  for (const buffer of buffers) res.write(buffer);
  res.end();
}

/** Status 200, a JSON body: the headers res.json sets (Content-Type with charset, Content-Length); none for HEAD. */
function writeJsonBody(res: Response, json: string): void {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(json)));
  if (res.req.method === 'HEAD') res.end();
  else res.end(json, 'utf8');
}

export function sendError(res: Response, error: JsonableError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json({ result: 'error', msg: error.message, code: error.code, ...error.data });
}
