// multipart/form-data bodies (zulip-js sends every POST this way), parsed with busboy into plain
// fields: each name kept exactly as sent (`name[]` is a name of its own, not an array), a repeated
// name keeps its last value. Uploads are not accepted on these operations.
import busboy from 'busboy';
import type { NextFunction, Request, Response } from 'express';
import { JsonableError } from '../errors.ts';

const LIMITS = { fieldSize: 5 * 1024 * 1024, fields: 10_000, files: 0, fieldNameSize: 1_000 };

export function parseMultipart(req: Request, _res: Response, next: NextFunction): void {
  let parser: busboy.Busboy;
  try {
    parser = busboy({ headers: req.headers, limits: LIMITS });
  } catch {
    return next(new JsonableError('Malformed multipart body'));
  }
  const fields: Record<string, string> = Object.create(null);
  let failed = false;
  const fail = (error: JsonableError) => {
    if (failed) return;
    failed = true;
    req.unpipe(parser);
    req.resume(); // drain what is left, so that the answer can be sent
    next(error);
  };
  parser.on('field', (name, value, info) => {
    if (info.valueTruncated) return fail(new JsonableError('Request body too large', { status: 413 }));
    if (info.nameTruncated) return fail(new JsonableError('Malformed multipart body'));
    fields[name] = value;
  });
  parser.on('file', (_name, stream) => {
    stream.resume();
    fail(new JsonableError('File uploads are not accepted here'));
  });
  parser.on('fieldsLimit', () => fail(new JsonableError('Too many parameters', { status: 413 })));
  parser.on('filesLimit', () => fail(new JsonableError('File uploads are not accepted here')));
  parser.on('error', () => fail(new JsonableError('Malformed multipart body')));
  parser.on('close', () => {
    if (failed) return;
    req.body = fields;
    next();
  });
  req.on('aborted', () => fail(new JsonableError('Request aborted')));
  req.pipe(parser);
}
