// The one storage interface for files (uploads now; avatars and custom emoji build on it): a flat
// space of keys, each an object of bytes with a content type, written and read as streams, never
// held whole in memory. Two backends implement it: a folder on local disk (storage/local.ts, the
// default, under $PARLEY_DATA_DIR/uploads) and an S3-compatible bucket (storage/s3.ts). Nothing
// outside src/storage knows which one is in use.
//
// Keys are `/`-separated paths, each area of the server under its own first segment: `files/<path_id>`
// for uploaded files (Zulip's LOCAL_UPLOADS_DIR/files). Avatars and emoji take `avatars/…` and `emoji/…`.
import type { Readable } from 'node:stream';

export interface ObjectWrite {
  /** Stored with the object and answered by get (and by S3 to readers of presigned URLs). */
  contentType: string;
  /** Stored with the object on S3 (served to readers of the bucket directly); ignored on disk. */
  contentDisposition?: string;
  /** Aborts the write: the promise rejects and nothing is left under the key. */
  signal?: AbortSignal;
}

/** A byte range as a Range header asks for it: from `start` (to `end`, inclusive), or the last `suffix` bytes. */
export type RangeRequest = { start: number; end?: number } | { suffix: number };

export interface ObjectRead {
  /** The whole object's size in bytes. */
  size: number;
  /** The stored content type (null when the backend does not keep one: local files). */
  contentType: string | null;
  /** The bytes asked for (the whole object, or the range); the reader must consume or destroy it. */
  body: Readable;
  /** The range served (inclusive), or null for the whole object. */
  range: { start: number; end: number } | null;
}

export interface ListedObject {
  key: string;
  size: number;
  lastModified: Date;
}

export interface ObjectStorage {
  readonly kind: 'local' | 's3';
  /**
   * Stores `body` under `key` as it arrives, replacing any object there, and resolves with its size
   * once it is stored whole. If `body` fails (a file over its limit, a client gone) or the signal
   * aborts, the promise rejects with that failure and nothing of it is left in storage.
   */
  put(key: string, body: Readable, options: ObjectWrite): Promise<{ size: number }>;
  /**
   * Reads an object, or a range of it: null when there is no such object, `unsatisfiable` (with the
   * object's size) when the range lies outside it.
   */
  get(key: string, range?: RangeRequest | null): Promise<ObjectRead | { unsatisfiable: true; size: number } | null>;
  /** The object's size and type, or null when there is none. */
  head(key: string): Promise<{ size: number; contentType: string | null } | null>;
  /** Deletes the objects (keys without an object are fine). */
  delete(keys: readonly string[]): Promise<void>;
  /** Every object whose key starts with `prefix`. */
  list(prefix: string): AsyncIterable<ListedObject>;
  /** Removes what interrupted writes may have left (temporary files, unfinished multipart uploads) older than `before`. */
  removeIncomplete(before: Date): Promise<number>;
  /**
   * Where to send a reader of the object instead of passing its bytes through Parley: a presigned URL
   * of the bucket answering with the given headers until it expires, when S3 is configured so
   * (PARLEY_S3_PRESIGNED_DOWNLOADS); null otherwise (Parley serves the bytes itself).
   */
  redirectUrl(key: string, options: { expiresInSeconds: number; contentType: string; contentDisposition: string }): Promise<string | null>;
  close(): Promise<void>;
}

/** How storage is configured (config.ts, from the environment: see storage/index.ts). */
export type StorageConfig =
  | { kind: 'local'; dir: string }
  | {
      kind: 's3';
      bucket: string;
      /** An S3-compatible endpoint (MinIO, Ceph, R2 …); null for AWS S3 itself. */
      endpoint: string | null;
      region: string;
      /** Path-style addressing (`endpoint/bucket/key`), which most S3-compatible servers need. */
      forcePathStyle: boolean;
      /** File downloads answer a redirect to a presigned URL of the bucket instead of passing the bytes through Parley. */
      presignedDownloads: boolean;
      /** Explicit credentials (tests); otherwise the SDK's usual chain (AWS_ACCESS_KEY_ID …, profiles, instance roles). */
      credentials?: { accessKeyId: string; secretAccessKey: string };
    };

/** Keys are paths of non-empty segments without `.`/`..`, backslashes or control characters. */
export function checkKey(key: string): void {
  // eslint-disable-next-line no-control-regex
  if (key.length === 0 || Buffer.byteLength(key) > 1024 || /[\u0000-\u001f\u007f\\]/.test(key)) throw new StorageKeyError(key);
  for (const segment of key.split('/')) if (segment === '' || segment === '.' || segment === '..') throw new StorageKeyError(key);
}

export class StorageKeyError extends Error {
  constructor(key: string) {
    super(`invalid storage key ${JSON.stringify(key.slice(0, 100))}`);
  }
}
