// multipart/form-data bodies (zulip-js sends every POST this way), parsed with busboy into plain
// fields: each name kept exactly as sent (`name[]` is a name of its own, not an array), a repeated
// name keeps its last value. Uploads are not accepted on these operations, except on those whose spec
// body has a file beside the parameters (`filesInBody` in the wire plan: a bot's avatar), whose file
// parts are held for the handler (bodyFilesOf): the first up to BODY_FILE_MAX_BYTES, the others
// only counted. Their Content-Type headers are read as sent (PartHeaderScanner, as for uploads).
import busboy from 'busboy';
import type { NextFunction, Request, Response } from 'express';
import { JsonableError } from '../errors.ts';
import { BODY_FILE_MAX_BYTES, type BodyFile } from '../lib/multipart-body.ts';
import { PartHeaderScanner } from './multipart-stream.ts';

const LIMITS = { fieldSize: 5 * 1024 * 1024, fields: 10_000, files: 0, fieldNameSize: 1_000 };
/** File parts of one body at most, where files are taken (one is used; the rest only refused). */
const MAX_BODY_FILES = 10;

const bodyFiles = new WeakMap<Request, BodyFile[]>();

/** The file parts of the request's multipart body (operations with `filesInBody`); none otherwise. */
export const bodyFilesOf = (req: Request): readonly BodyFile[] => bodyFiles.get(req) ?? [];

export function parseMultipart(req: Request, _res: Response, next: NextFunction, options: { files?: boolean } = {}): void {
  let parser: busboy.Busboy;
  let scanner: PartHeaderScanner | null = null;
  try {
    parser = busboy({ headers: req.headers, limits: options.files ? { ...LIMITS, files: MAX_BODY_FILES, fileSize: BODY_FILE_MAX_BYTES } : LIMITS });
    if (options.files) scanner = new PartHeaderScanner(/;\s*boundary\s*=\s*(?:"([^"]+)"|([^;\s]+))/i.exec(req.headers['content-type'] ?? '')?.slice(1).find(Boolean) ?? '');
  } catch {
    return next(new JsonableError('Malformed multipart body'));
  }
  const files: BodyFile[] = [];
  const fields: Record<string, string> = Object.create(null);
  let failed = false;
  const fail = (error: JsonableError) => {
    if (failed) return;
    failed = true;
    req.unpipe();
    req.resume(); // drain what is left, so that the answer can be sent
    next(error);
  };
  parser.on('field', (name, value, info) => {
    scanner?.takeNext();
    if (info.valueTruncated) return fail(new JsonableError('Request body too large', { status: 413 }));
    if (info.nameTruncated) return fail(new JsonableError('Malformed multipart body'));
    fields[name] = value;
  });
  parser.on('file', (name, stream, info) => {
    if (!scanner) {
      stream.resume();
      return fail(new JsonableError('File uploads are not accepted here'));
    }
    const header = scanner.takeNext();
    const file: BodyFile = { field: name, filename: info.filename ?? '', contentType: header?.contentType ?? null, bytes: Buffer.alloc(0), truncated: false };
    files.push(file);
    const keep = files.filter((f) => f.filename !== '').length === 1 && file.filename !== '';
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => void (keep && chunks.push(chunk)));
    stream.on('limit', () => void (file.truncated = true));
    stream.on('end', () => void (file.bytes = Buffer.concat(chunks)));
  });
  parser.on('fieldsLimit', () => fail(new JsonableError('Too many parameters', { status: 413 })));
  parser.on('filesLimit', () => fail(new JsonableError(scanner ? 'You may only upload one file at a time' : 'File uploads are not accepted here')));
  parser.on('error', () => fail(new JsonableError('Malformed multipart body')));
  parser.on('close', () => {
    if (failed) return;
    if (scanner) bodyFiles.set(req, files);
    req.body = fields;
    next();
  });
  req.on('aborted', () => fail(new JsonableError('Request aborted')));
  if (scanner) req.pipe(scanner).pipe(parser);
  else req.pipe(parser);
}
