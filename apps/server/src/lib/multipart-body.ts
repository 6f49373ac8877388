// A request body of file parts, read as it arrives (http/multipart-stream.ts makes one for the
// operations whose body is a file): what actions see of it, without depending on HTTP.
import type { Readable } from 'node:stream';

export interface IncomingFile {
  /** The part's field name (any: the Python client names it after the file's path). */
  field: string;
  /** The file name of the part's Content-Disposition (its last path component, UTF-8); '' when it has none. */
  filename: string;
  /** The part's Content-Type header as sent, parameters included; null when it has none. */
  contentType: string | null;
  /** The part's content. Read it to the end, or leave it and call nextFile/discardRest. */
  stream: Readable;
}

export interface StreamedMultipart {
  /**
   * The next file part (fields are skipped), or null once the body is over (a body that is not
   * multipart/form-data has none). A file part left unread is discarded. Rejects with a 400 for a
   * malformed or interrupted body.
   */
  nextFile(): Promise<IncomingFile | null>;
  /** Reads and discards the rest of the body; resolves with the file names of the file parts still in it. */
  discardRest(): Promise<string[]>;
  /**
   * Gives up on the body after a failure: what is left is discarded as it arrives (at most `limitBytes`
   * more, then the connection is closed), and the answer closes the connection.
   */
  abandon(limitBytes: number): void;
}

/**
 * A file part of a multipart body whose other parts are parameters (`filesInBody` in the wire plan:
 * a bot's avatar, sent with the bot's other settings). Held in memory: at most BODY_FILE_MAX_BYTES of
 * the first file; `truncated` when it had more (the rest was read and dropped).
 */
export interface BodyFile {
  field: string;
  /** As IncomingFile's: the last path component of the part's file name; '' when it has none. */
  filename: string;
  /** The part's Content-Type header as sent; null when it has none. */
  contentType: string | null;
  /** The content (empty for files after the first, which are only counted). */
  bytes: Buffer;
  truncated: boolean;
}

/** Zulip's largest image of this kind (MAX_AVATAR_FILE_SIZE_MIB): no more of a body file is kept. */
export const BODY_FILE_MAX_BYTES = 5 * 1024 * 1024;
