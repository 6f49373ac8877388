// A multipart/form-data body read as it arrives, for the operations whose spec body is a file
// (`streamBody` in the wire plan: POST /user_uploads): the pipeline's readBody step leaves the body
// unread, and the handler takes the file parts one at a time, each a stream with backpressure, so a
// file of any size passes through memory a chunk at a time. Other operations' multipart bodies are
// small and read into parameters by http/multipart.ts.
//
// busboy splits the parts, but reports a part without a Content-Type header as `text/plain` (RFC 7578's
// default for fields) and drops the header's parameters other than the charset; Zulip keeps the header
// as sent, and guesses the type from the file name when there is none (the Python client sends none).
// So a small scanner in front of busboy (PartHeaderScanner) reads each part's header block and keeps
// its Content-Type as sent; busboy's n-th field or file is the scanner's n-th form-data part.
import { PassThrough, Transform, type TransformCallback } from 'node:stream';
import busboy from 'busboy';
import type { Request } from 'express';
import { JsonableError } from '../errors.ts';
import type { IncomingFile, StreamedMultipart } from '../lib/multipart-body.ts';

export type { IncomingFile, StreamedMultipart };

/** Header block of one part at most this long (busboy's own limit). */
const MAX_PART_HEADER_BYTES = 81_920;
/**
 * How much each stage of the way holds before the one before it waits: little, so that a chunk of the
 * body is let go soon after it arrives (storage copies it into buffers of its own) and dies young.
 */
const STREAM_BUFFER_BYTES = 64 * 1024;
/** Parts of one body at most (a file upload needs one; the rest are refused without reading them). */
const MAX_PARTS = 1_000;

const malformed = () => new JsonableError('Malformed multipart body');
const interrupted = () => new JsonableError('Request aborted');

/** The body of `req` as a StreamedMultipart (only once per request). */
export function streamMultipart(req: Request): StreamedMultipart {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (!type.startsWith('multipart/form-data')) return emptyBody(req);
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== '') throw new JsonableError('Unsupported Content-Encoding', { status: 415 });
  let parser: busboy.Busboy;
  let scanner: PartHeaderScanner;
  try {
    parser = busboy({ headers: req.headers, defParamCharset: 'utf8', highWaterMark: STREAM_BUFFER_BYTES, fileHwm: STREAM_BUFFER_BYTES, limits: { parts: MAX_PARTS, fieldSize: 1024 * 1024, headerPairs: 2_000 } });
    scanner = new PartHeaderScanner(boundaryOf(req.headers['content-type']!));
  } catch {
    throw malformed();
  }

  // What busboy reported and nobody took yet, in order; `null` is the end of the body.
  const arrived: Array<IncomingFile | null | JsonableError> = [];
  let waiting: ((item: IncomingFile | null | JsonableError) => void) | null = null;
  let ended = false;
  let current: IncomingFile | null = null;
  const deliver = (item: IncomingFile | null | JsonableError) => {
    if (ended) {
      if (item && !(item instanceof JsonableError)) item.stream.resume();
      return;
    }
    if (item === null || item instanceof JsonableError) ended = true;
    if (waiting) {
      const w = waiting;
      waiting = null;
      w(item);
    } else {
      arrived.push(item);
    }
  };

  parser.on('file', (field, stream, info) => {
    const part = scanner.takeNext();
    // Through a stream of our own, so that a failure reaches the reader as this module's error (a
    // malformed body is the client's: 400), not busboy's.
    const content = new PassThrough({ highWaterMark: STREAM_BUFFER_BYTES });
    stream.on('error', () => content.destroy(failure ?? malformed()));
    stream.pipe(content);
    deliver({ field, filename: info.filename ?? '', contentType: part?.contentType ?? null, stream: content });
  });
  parser.on('field', () => void scanner.takeNext());
  parser.on('partsLimit', () => fail(new JsonableError('Too many parameters', { status: 413 })));
  parser.on('error', () => fail(malformed()));
  parser.on('close', () => deliver(null));
  let failure: JsonableError | null = null;
  const fail = (error: JsonableError) => {
    failure ??= error;
    current?.stream.destroy(failure);
    deliver(failure);
  };
  // A client that goes away mid-body: the file being read fails (so that nothing partial is kept).
  const onClose = () => {
    if (!req.complete) fail(interrupted());
  };
  req.on('close', onClose);
  req.on('error', () => fail(interrupted()));
  req.pipe(scanner).pipe(parser);

  const next = (): Promise<IncomingFile | null | JsonableError> => {
    const item = arrived.shift();
    if (item !== undefined) return Promise.resolve(item);
    if (ended) return Promise.resolve(null);
    return new Promise((resolve) => (waiting = resolve));
  };
  const discardCurrent = () => {
    if (current && !current.stream.readableEnded) current.stream.resume();
    current = null;
  };

  return {
    async nextFile() {
      discardCurrent();
      const item = await next();
      if (item instanceof JsonableError) throw item;
      current = item;
      return item;
    },
    async discardRest() {
      discardCurrent();
      const names: string[] = [];
      for (;;) {
        const item = await next();
        if (item instanceof JsonableError) throw item;
        if (item === null) return names;
        names.push(item.filename);
        item.stream.resume();
      }
    },
    abandon(limitBytes) {
      abandonBody(req, limitBytes, () => {
        req.unpipe(scanner);
        scanner.unpipe(parser);
        current?.stream.destroy();
        for (const item of arrived.splice(0)) if (item && !(item instanceof JsonableError)) item.stream.destroy();
      });
    },
  };
}

/** A body with no multipart parts: whatever it holds is read and dropped. */
function emptyBody(req: Request): StreamedMultipart {
  let drained: Promise<void> | null = null;
  const drain = () =>
    (drained ??= new Promise<void>((resolve) => {
      if (req.readableEnded || req.complete) return resolve();
      req.on('end', resolve);
      req.on('close', resolve);
      req.resume();
    }));
  return {
    async nextFile() {
      await drain();
      return null;
    },
    async discardRest() {
      await drain();
      return [];
    },
    abandon(limitBytes) {
      abandonBody(req, limitBytes, () => {});
    },
  };
}

/** Drops what is left of a request body as it arrives, up to a limit; the answer closes the connection. */
function abandonBody(req: Request, limitBytes: number, detach: () => void): void {
  if (req.res && !req.res.headersSent) req.res.setHeader('Connection', 'close');
  if (req.complete) return;
  detach();
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > limitBytes) req.destroy();
  });
  req.resume();
}

/** The boundary parameter of a multipart Content-Type (busboy has checked that there is one). */
function boundaryOf(contentType: string): string {
  const m = /;\s*boundary\s*=\s*(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary) throw malformed();
  return boundary;
}

/**
 * Passes the body through unchanged, reading the header block of each part on the way: for each
 * part whose Content-Disposition is `form-data` (the parts busboy reports), its Content-Type header
 * as sent (null when absent), in order.
 */
export class PartHeaderScanner extends Transform {
  private readonly delimiter: Buffer;
  /** Bytes not yet settled: a possible start of a delimiter, or a header block still arriving. */
  private carry: Buffer;
  private state: 'body' | 'after-delimiter' | 'headers' | 'done' = 'body';
  private readonly parts: Array<{ contentType: string | null }> = [];

  constructor(boundary: string) {
    super({ highWaterMark: STREAM_BUFFER_BYTES });
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    // The first delimiter may open the body without a line break before it.
    this.carry = Buffer.from('\r\n', 'latin1');
  }

  /** The next part busboy reports, or null if none was seen (should not happen). */
  takeNext(): { contentType: string | null } | null {
    return this.parts.shift() ?? null;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.state !== 'done') this.scan(chunk);
    callback(null, chunk);
  }

  private scan(chunk: Buffer): void {
    if (this.state === 'body' && this.carry.length > 0 && this.carry.length < this.delimiter.length) {
      // Inside a part's content: the common case is a chunk without a delimiter. It is searched where
      // it lies, and only the few bytes that straddle the previous chunk are copied to be looked at.
      const straddle = Buffer.concat([this.carry, chunk.subarray(0, this.delimiter.length - 1)]);
      const across = straddle.indexOf(this.delimiter);
      if (across < 0 && chunk.indexOf(this.delimiter) < 0) {
        this.carry = Buffer.from(chunk.length >= this.delimiter.length - 1 ? chunk.subarray(chunk.length - (this.delimiter.length - 1)) : straddle.subarray(Math.max(0, straddle.length - (this.delimiter.length - 1))));
        return;
      }
    }
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    this.carry = EMPTY;
    let pos = 0;
    for (;;) {
      if (this.state === 'body') {
        const at = data.indexOf(this.delimiter, pos);
        if (at < 0) {
          const keep = Math.max(pos, data.length - (this.delimiter.length - 1));
          this.carry = Buffer.from(data.subarray(keep));
          return;
        }
        pos = at + this.delimiter.length;
        this.state = 'after-delimiter';
      } else if (this.state === 'after-delimiter') {
        if (data.length - pos < 2) {
          this.carry = Buffer.from(data.subarray(pos));
          return;
        }
        if (data[pos] === 0x2d && data[pos + 1] === 0x2d) {
          this.state = 'done'; // the closing delimiter: the rest is epilogue
          return;
        }
        this.state = 'headers';
      } else if (this.state === 'headers') {
        // The rest of the delimiter line (transport padding), then the header lines, then an empty line.
        const lineEnd = data.indexOf('\r\n', pos, 'latin1');
        const end = lineEnd < 0 ? -1 : data.indexOf('\r\n\r\n', lineEnd, 'latin1');
        const blockEnd = lineEnd >= 0 && data[lineEnd + 2] === 0x0d && data[lineEnd + 3] === 0x0a ? lineEnd : end;
        if (blockEnd < 0) {
          if (data.length - pos > MAX_PART_HEADER_BYTES) {
            this.state = 'done'; // busboy refuses the body; nothing more to learn
            return;
          }
          this.carry = Buffer.from(data.subarray(pos));
          return;
        }
        this.record(lineEnd === blockEnd ? '' : data.toString('latin1', lineEnd + 2, blockEnd));
        pos = blockEnd + 4;
        this.state = 'body';
      } else {
        return;
      }
    }
  }

  private record(block: string): void {
    // Header lines; a line starting with white space continues the previous one.
    const headers = new Map<string, string>();
    let last: string | null = null;
    for (const line of block.split('\r\n')) {
      if ((line.startsWith(' ') || line.startsWith('\t')) && last !== null) {
        headers.set(last, `${headers.get(last)} ${line.trim()}`);
        continue;
      }
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      last = line.slice(0, colon).trim().toLowerCase();
      if (!headers.has(last)) headers.set(last, line.slice(colon + 1).trim());
    }
    const disposition = headers.get('content-disposition');
    if (disposition === undefined || disposition.split(';')[0]!.trim().toLowerCase() !== 'form-data') return;
    const contentType = headers.get('content-type');
    // Header bytes are UTF-8 in practice (browsers send raw UTF-8 parameters).
    this.parts.push({ contentType: contentType === undefined || contentType === '' ? null : Buffer.from(contentType, 'latin1').toString('utf8') });
  }
}

const EMPTY = Buffer.alloc(0);
