import type { Response } from 'express';
import type { JsonableError } from '../errors.ts';
import { RawJson } from '../lib/raw-json.ts';

/**
 * The success envelope. Values already serialised (RawJson) are spliced in as text; when responses are
 * validated (development, tests) the body is parsed back first, so that it is validated like any other.
 */
export function sendSuccess(res: Response, data: Record<string, unknown>, ignored: string[], options: { validated: boolean }): void {
  const body: Record<string, unknown> = { result: 'success', msg: '', ...data };
  if (ignored.length > 0) body.ignored_parameters_unsupported = ignored;
  if (!Object.values(body).some((v) => v instanceof RawJson)) {
    res.status(200).json(body);
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

export function sendError(res: Response, error: JsonableError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json({ result: 'error', msg: error.message, code: error.code, ...error.data });
}
