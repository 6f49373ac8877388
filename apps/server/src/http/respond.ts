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
  const parts: string[] = [];
  for (const [name, value] of Object.entries(body)) {
    parts.push(`${JSON.stringify(name)}:${value instanceof RawJson ? value.text : JSON.stringify(value)}`);
  }
  const text = `{${parts.join(',')}}`;
  if (options.validated) {
    res.status(200).json(JSON.parse(text));
    return;
  }
  res.status(200).type('application/json; charset=utf-8').send(text);
}

export function sendError(res: Response, error: JsonableError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json({ result: 'error', msg: error.message, code: error.code, ...error.data });
}
