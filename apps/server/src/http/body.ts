// Reading a request body into memory without body-parser, for the common case only: a body that is
// not compressed and says its length (Content-Length, within the limit). Everything else (compressed,
// chunked, oversized bodies) still goes through body-parser (`express.raw`), whose answers this
// reproduces for the failures that can happen here: a connection that closes before the whole body
// arrived is `request aborted` (400), as raw-body reports it.
import type { NextFunction, Request } from 'express';

/** A failure shaped as body-parser's (http-errors: status, expose, type), for http/error-handler.ts. */
function bodyError(status: number, message: string, type: string): Error {
  return Object.assign(new Error(message), { status, statusCode: status, expose: true, type });
}

const DIGITS = /^\d+$/;

/**
 * Reads the body when it is plain and of a declared length of at most `limit` bytes, then calls `done`
 * with it (or `next` with the error); returns false, having done nothing, when the request is not such
 * a case (the caller then uses body-parser).
 */
export function readPlainBody(req: Request, limit: number, next: NextFunction, done: (body: Buffer) => void): boolean {
  const headers = req.headers;
  const declared = headers['content-length'];
  if (declared === undefined || headers['transfer-encoding'] !== undefined || !DIGITS.test(declared)) return false;
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
  const length = Number(declared);
  if (length > limit || !req.readable || req.readableEncoding !== null) return false;

  // Usually the whole body came with the headers: once the socket read that brought them has been
  // processed (the check phase after it), Node's parser has buffered all of it and marked the request
  // complete. It is then taken at once, without listeners; otherwise it is read as it arrives.
  setImmediate(takeBody, req, length, next, done);
  return true;
}

function takeBody(req: Request, length: number, next: NextFunction, done: (body: Buffer) => void): void {
  if (length > 0 && req.complete && req.readableLength === length && !req.readableFlowing) {
    const body = req.read() as Buffer | null;
    if (body !== null && body.length === length) return done(body);
    // (not expected: buffered bytes are read whole) what was read is the start of the body
    return listen(req, length, next, done, body === null ? [] : [body], body?.length ?? 0);
  }
  listen(req, length, next, done, [], 0);
}

/** The rest of the body as it arrives. */
function listen(req: Request, length: number, next: NextFunction, done: (body: Buffer) => void, chunks: Buffer[], receivedBefore: number): void {
  let received = receivedBefore;
  let settled = false;
  const cleanup = () => {
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    req.removeListener('close', onClose);
  };
  const onData = (chunk: Buffer) => {
    received += chunk.length;
    chunks.push(chunk);
  };
  const onEnd = () => {
    if (settled) return;
    settled = true;
    cleanup();
    // Node's parser delivers exactly Content-Length bytes; kept as raw-body checks it.
    if (received !== length) return next(bodyError(400, 'request size did not match content length', 'request.size.invalid'));
    done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
  };
  const onClose = () => {
    if (settled) return;
    settled = true;
    cleanup();
    next(bodyError(400, 'request aborted', 'request.aborted'));
  };
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('close', onClose);
  if (req.readableEnded) onEnd(); // (not expected) ended before the listeners came
  else if (req.destroyed) onClose(); // the client went away before the listeners came: `close` is past
}
