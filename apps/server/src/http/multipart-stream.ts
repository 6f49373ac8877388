// A multipart/form-data body read as it arrives, for the operations whose spec body is a file
// (`streamBody` in the wire plan: POST /user_uploads, avatars, emoji): the pipeline's readBody step
// leaves the body unread, and the handler takes the file parts one at a time, each a stream with
// backpressure, so a file of any size passes through memory a chunk at a time. Other operations'
// multipart bodies are small and read into parameters by http/multipart.ts (busboy).
//
// The parts are split here (MultipartSplitter) rather than by busboy, for speed: the delimiter is
// searched with Buffer#indexOf (native) instead of busboy's JavaScript search, and a file's bytes go
// from the request's chunks (as views, not copies) straight into the file's stream, the only stage
// between the socket and storage, which copies them into buffers of its own at once. A chunk of the
// body so lives for a moment; held longer (busboy, a scanner and two more streams buffered ~1 MB of
// them), chunks outlived two scavenges, were promoted, and their external memory made V8 collect the
// whole heap about every 15 MB of upload (bench/uploads.bench.ts). What a part is follows busboy's
// rules, with busboy's own parsers for the Content-Disposition and Content-Type headers (its utils:
// RFC 2231/5987 file names, UTF-8 parameters, the name's last path component): a `form-data` part
// with a file name, or of type application/octet-stream, is a file; other parts are skipped. The
// part's Content-Type is kept as sent (null when absent): Zulip guesses the type from the file name
// when there is none (the Python client sends none), where busboy would say `text/plain`.
import { createRequire } from 'node:module';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import type { Request } from 'express';
import { JsonableError } from '../errors.ts';
import type { IncomingFile, StreamedMultipart } from '../lib/multipart-body.ts';
import { transferred } from './idle-collection.ts';

export type { IncomingFile, StreamedMultipart };

/** Header block of one part at most this long (busboy's own limit). */
const MAX_PART_HEADER_BYTES = 81_920;
/** The header block of a part of a streamed body at most (busboy's limit for it, as Node's for requests). */
const MAX_STREAMED_HEADER_BYTES = 16 * 1024;
/** Header lines of one part kept at most (busboy's; the rest are ignored). */
const MAX_HEADER_PAIRS = 2_000;
/**
 * How much a file's stream holds before the request is paused: little, so that a chunk of the body is
 * let go soon after it arrives (storage copies it into buffers of its own) and dies young.
 */
const STREAM_BUFFER_BYTES = 64 * 1024;
/** Parts of one body at most (a file upload needs one; the rest are refused without reading them). */
const MAX_PARTS = 1_000;

const malformed = () => new JsonableError('Malformed multipart body');
const interrupted = () => new JsonableError('Request aborted');

/** busboy's header parsers (lib/utils.js of busboy 1.6, which it does not export by name). */
interface BusboyUtils {
  parseDisposition(header: string, decoder: unknown): { type: string; params: Record<string, string | undefined> } | undefined;
  parseContentType(header: string): { type: string; subtype: string; params: Record<string, string | undefined> } | undefined;
  getDecoder(charset: string): unknown;
  basename(path: string): string;
}
const busboyUtils = createRequire(import.meta.url)('busboy/lib/utils.js') as BusboyUtils;
const utf8Params = busboyUtils.getDecoder('utf8');

/** The file part being read, as the splitter sees it. */
interface PartSink {
  data(bytes: Buffer): void;
  end(): void;
}

interface PartHeaders {
  /** Header values by lower-case name, in order (folded lines joined). */
  get(name: string): string | undefined;
}

/**
 * Splits a multipart body into parts as its chunks arrive: `part` is told of each part's headers and
 * answers where its content goes (null: nowhere). Content is passed on as views of the chunks.
 */
export class MultipartSplitter {
  private readonly delimiter: Buffer;
  private state: 'body' | 'after-delimiter' | 'headers' | 'done' | 'failed' = 'body';
  /** In the body: the end of the previous chunk, when it may be the start of a delimiter (copied: a few bytes). */
  private carry: Buffer;
  /** Elsewhere: bytes not yet enough to decide on (a header block still arriving). */
  private pending: Buffer = EMPTY;
  private sink: PartSink | null = null;
  private parts = 0;

  constructor(
    boundary: string,
    private readonly handlers: { part(headers: PartHeaders): PartSink | null; fail(error: JsonableError): void },
  ) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    // The first delimiter may open the body without a line break before it (the preamble is the
    // content of no part).
    this.carry = Buffer.from('\r\n', 'latin1');
  }

  /** Whether the closing delimiter has been seen. */
  get complete(): boolean {
    return this.state === 'done';
  }

  write(chunk: Buffer): void {
    if (this.state === 'done' || this.state === 'failed' || chunk.length === 0) return;
    if (this.state !== 'body') {
      const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
      this.pending = EMPTY;
      return this.run(data, 0);
    }
    const carry = this.carry;
    if (carry.length === 0) return this.run(chunk, 0);
    this.carry = EMPTY;
    const reach = this.delimiter.length - 1;
    if (chunk.length < reach) return this.run(Buffer.concat([carry, chunk]), 0); // small: simply joined
    // Does a delimiter begin in the carried bytes? Only they and the chunk's first bytes are joined.
    const at = Buffer.concat([carry, chunk.subarray(0, reach)]).indexOf(this.delimiter);
    if (at >= 0 && at < carry.length) {
      if (at > 0) this.sink?.data(carry.subarray(0, at));
      this.endPart();
      this.state = 'after-delimiter';
      return this.run(chunk, at + this.delimiter.length - carry.length);
    }
    this.sink?.data(carry);
    this.run(chunk, 0);
  }

  private run(data: Buffer, pos: number): void {
    const length = this.delimiter.length;
    for (;;) {
      if (this.state === 'body') {
        const at = data.indexOf(this.delimiter, pos);
        if (at < 0) {
          // What may begin a delimiter (from a CR among the last bytes) waits for the next chunk.
          let keep = data.indexOf(0x0d, Math.max(pos, data.length - (length - 1)));
          if (keep < 0) keep = data.length;
          if (keep > pos) this.sink?.data(data.subarray(pos, keep));
          this.carry = keep < data.length ? Buffer.from(data.subarray(keep)) : EMPTY;
          return;
        }
        if (at > pos) this.sink?.data(data.subarray(pos, at));
        this.endPart();
        pos = at + length;
        this.state = 'after-delimiter';
      } else if (this.state === 'after-delimiter') {
        if (data.length - pos < 2) {
          this.pending = Buffer.from(data.subarray(pos));
          return;
        }
        if (data[pos] === 0x2d && data[pos + 1] === 0x2d) {
          this.state = 'done'; // the closing delimiter: the rest is epilogue
          return;
        }
        if (data[pos] === 0x0d && data[pos + 1] === 0x0a) {
          if (++this.parts > MAX_PARTS) return this.fail(new JsonableError('Too many parameters', { status: 413 }));
          pos += 2;
          this.state = 'headers';
        } else {
          this.state = 'body'; // not a delimiter line (as busboy: what follows belongs to no part)
        }
      } else if (this.state === 'headers') {
        if (data.length - pos < 2) {
          this.pending = Buffer.from(data.subarray(pos));
          return;
        }
        let block: Buffer = EMPTY;
        if (data[pos] === 0x0d && data[pos + 1] === 0x0a) {
          pos += 2; // no headers
        } else {
          const end = data.indexOf(HEADER_END, pos);
          if (end < 0 || end - pos > MAX_STREAMED_HEADER_BYTES) {
            if (data.length - pos > MAX_STREAMED_HEADER_BYTES) return this.fail(malformed());
            this.pending = Buffer.from(data.subarray(pos));
            return;
          }
          block = data.subarray(pos, end);
          pos = end + 4;
        }
        const headers = parseHeaderBlock(block);
        if (headers === null) return this.fail(malformed());
        this.state = 'body';
        this.sink = this.handlers.part(headers);
      } else {
        return;
      }
    }
  }

  private endPart(): void {
    const sink = this.sink;
    this.sink = null;
    sink?.end();
  }

  fail(error: JsonableError): void {
    if (this.state === 'failed') return;
    this.state = 'failed';
    this.sink = null;
    this.carry = this.pending = EMPTY;
    this.handlers.fail(error);
  }
}

const HEADER_END = Buffer.from('\r\n\r\n', 'latin1');
/** RFC 9110 token characters (a header's name). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What a header's value may not hold (busboy's rule: visible characters, obs-text, space and tab). */
// eslint-disable-next-line no-control-regex
const NOT_FIELD_CONTENT = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** A part's header lines (latin1, as sent), or null when they are malformed (busboy refuses them too). */
function parseHeaderBlock(block: Buffer): PartHeaders | null {
  const headers = new Map<string, string[]>();
  let pairs = 0;
  let last: string[] | null = null;
  if (block.length > 0) {
    for (const line of block.toString('latin1').split('\r\n')) {
      if (line.startsWith(' ') || line.startsWith('\t')) {
        // A folded line continues the previous header's value.
        if (last === null || NOT_FIELD_CONTENT.test(line)) return null;
        if (last.length > 0) last[last.length - 1] += line;
        continue;
      }
      const colon = line.indexOf(':');
      if (colon <= 0 || !TOKEN.test(line.slice(0, colon))) return null;
      const value = line.slice(colon + 1).replace(/^[ \t]+/, '');
      if (NOT_FIELD_CONTENT.test(value)) return null;
      const name = line.slice(0, colon).toLowerCase();
      let values = headers.get(name);
      if (!values) headers.set(name, (values = []));
      // Beyond the limit, lines are read but not kept.
      if (++pairs < MAX_HEADER_PAIRS) values.push(value);
      last = values;
    }
  }
  return { get: (name) => headers.get(name)?.[0] };
}

/** The file a part's headers describe, or null when the part is not a file (busboy's rules). */
function filePart(headers: PartHeaders): { field: string; filename: string; contentType: string | null } | null {
  const dispositionHeader = headers.get('content-disposition');
  if (dispositionHeader === undefined) return null;
  const disposition = busboyUtils.parseDisposition(dispositionHeader, utf8Params);
  if (!disposition || disposition.type !== 'form-data') return null;
  const params = disposition.params;
  let filename = params['filename*'] || params['filename'] || undefined;
  if (filename !== undefined) filename = busboyUtils.basename(filename);
  const contentType = headers.get('content-type');
  const parsedType = contentType === undefined ? undefined : busboyUtils.parseContentType(contentType);
  const isOctetStream = parsedType !== undefined && `${parsedType.type}/${parsedType.subtype}` === 'application/octet-stream';
  if (filename === undefined && !isOctetStream) return null;
  const sent = contentType?.trim();
  return {
    field: params['name'] || '',
    filename: filename ?? '',
    // Header bytes are UTF-8 in practice (browsers send raw UTF-8 parameters).
    contentType: sent === undefined || sent === '' ? null : Buffer.from(sent, 'latin1').toString('utf8'),
  };
}

/** A file part's content: the splitter pushes it, and the request waits while it is full. */
class FileContent extends Readable {
  constructor(private readonly wanted: () => void) {
    super({ highWaterMark: STREAM_BUFFER_BYTES });
    // A failure reaches whoever reads the file (their iterator or pipe listens too); a part nobody
    // reads (skipped, or after the one taken) must not take the process down with it.
    this.on('error', () => {});
  }

  override _read(): void {
    this.wanted();
  }
}

/** The body of `req` as a StreamedMultipart (only once per request). */
export function streamMultipart(req: Request): StreamedMultipart {
  const type = (req.headers['content-type'] ?? '').toLowerCase();
  if (!type.startsWith('multipart/form-data')) return emptyBody(req);
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== '') throw new JsonableError('Unsupported Content-Encoding', { status: 415 });
  const boundary = busboyUtils.parseContentType(req.headers['content-type']!)?.params['boundary'];
  if (typeof boundary !== 'string' || boundary === '') throw malformed();

  // What the splitter found and nobody took yet, in order; `null` is the end of the body.
  const arrived: Array<IncomingFile | null | JsonableError> = [];
  let waiting: ((item: IncomingFile | null | JsonableError) => void) | null = null;
  let ended = false;
  let current: IncomingFile | null = null;
  /** The file being received, while the splitter feeds it. */
  let receiving: FileContent | null = null;
  let failure: JsonableError | null = null;
  let detached = false;
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

  // The request is paused while the file being received holds what it may, and goes on when it is read.
  let paused = false;
  const resumeRequest = () => {
    if (!paused) return;
    paused = false;
    if (!detached) req.resume();
  };
  const fail = (error: JsonableError) => {
    failure ??= error;
    splitter.fail(failure);
  };
  const splitter = new MultipartSplitter(boundary, {
    part(headers) {
      const file = filePart(headers);
      if (file === null) return null;
      const stream = new FileContent(resumeRequest);
      receiving = stream;
      deliver({ ...file, stream });
      return {
        data(bytes) {
          if (stream.destroyed) return; // given up by its reader: the rest is dropped
          if (!stream.push(bytes) && !paused) {
            paused = true;
            req.pause();
          }
        },
        end() {
          receiving = null;
          if (!stream.destroyed) stream.push(null);
          resumeRequest();
        },
      };
    },
    fail(error) {
      failure ??= error;
      receiving?.destroy(failure);
      receiving = null;
      current?.stream.destroy(failure);
      deliver(failure);
      resumeRequest();
    },
  });
  const onData = (chunk: Buffer) => {
    splitter.write(chunk);
    transferred(chunk.length); // young collections at the pace of the body (http/idle-collection.ts)
  };
  req.on('data', onData);
  req.on('end', () => {
    if (detached) return;
    if (splitter.complete) deliver(null);
    else fail(malformed()); // the body ended before its closing delimiter
  });
  // A client that goes away mid-body: the file being read fails (so that nothing partial is kept).
  req.on('close', () => {
    if (!req.complete) fail(interrupted());
  });
  req.on('error', () => fail(interrupted()));

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
        detached = true;
        req.off('data', onData);
        splitter.fail(failure ?? interrupted());
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
