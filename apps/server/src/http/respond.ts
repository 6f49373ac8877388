import type { Response } from 'express';
import type { JsonableError } from '../errors.ts';

export function sendSuccess(res: Response, data: Record<string, unknown>, ignored: string[]): void {
  const body: Record<string, unknown> = { result: 'success', msg: '', ...data };
  if (ignored.length > 0) body.ignored_parameters_unsupported = ignored;
  res.status(200).json(body);
}

export function sendError(res: Response, error: JsonableError): void {
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json({ result: 'error', msg: error.message, code: error.code, ...error.data });
}
