// Uploaded files in tests: both storage backends (a temporary folder, and a real S3-compatible server,
// s3rver, started by the test file itself on loopback), multipart bodies built byte by byte (so that a
// test says exactly which headers a part has), and raw downloads.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import S3rver from 's3rver';
import type { Config } from '../../src/config.ts';
import type { StorageConfig } from '../../src/storage/types.ts';
import { basicAuth } from './auth.ts';
import type { Person } from './fixtures.ts';
import { useTestServer, type TestServer, type TestServerOptions } from './test-server.ts';

export type Backend = 'local' | 's3';
/** Every test of files runs on both backends. */
export const BACKENDS: readonly Backend[] = ['local', 's3'];

export const S3_BUCKET = 'parley-test-uploads';

/**
 * A real S3-compatible server (s3rver: the S3 REST API over a folder) on loopback for the file's tests,
 * with one bucket; `storage` is the configuration pointing Parley at it (read in hooks and tests).
 */
export function useS3rver(): { readonly storage: Extract<StorageConfig, { kind: 's3' }>; readonly endpoint: string } {
  let server: S3rver | undefined;
  let dir: string | undefined;
  let endpoint = '';
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'parley-s3rver-'));
    server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: S3_BUCKET, configs: [] }] });
    const { port } = await server.run();
    endpoint = `http://127.0.0.1:${port}`;
  });
  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get endpoint() {
      return endpoint;
    },
    get storage(): Extract<StorageConfig, { kind: 's3' }> {
      if (!endpoint) throw new Error('s3rver is not running: read it in a hook or a test');
      return { kind: 's3', bucket: S3_BUCKET, endpoint, region: 'us-east-1', forcePathStyle: true, presignedDownloads: false, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } };
    },
  };
}

/** A test server storing files on `backend` (for S3, an s3rver of its own), with extra configuration. */
export function useUploadServer(backend: Backend, config: Partial<Config> = {}, options: Omit<TestServerOptions, 'config'> = {}): TestServer {
  if (backend === 'local') return useTestServer({ ...options, config });
  const s3 = useS3rver();
  return useTestServer({ ...options, config: () => ({ storage: s3.storage, ...config }) });
}

/** One part of a multipart/form-data body; `contentType: null` sends no Content-Type header. */
export interface Part {
  name: string;
  filename?: string;
  contentType?: string | null;
  data: string | Buffer;
  /** Raw Content-Disposition to send instead of the one made from name and filename. */
  disposition?: string;
}

/** A multipart/form-data body and its Content-Type header. */
export function multipart(parts: Part[], boundary = `----parley${randomBytes(8).toString('hex')}`): { body: Buffer; contentType: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    const disposition = part.disposition ?? `form-data; name="${part.name}"${part.filename !== undefined ? `; filename="${part.filename}"` : ''}`;
    let head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n`;
    if (part.contentType !== null) head += `Content-Type: ${part.contentType ?? 'application/octet-stream'}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`, 'utf8'), Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data, 'utf8'), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** POST /api/v1/user_uploads with a multipart body of `parts`, as `as`. */
export async function postUpload(env: TestServer, as: Person | { auth: string }, parts: Part[]) {
  const { body, contentType } = multipart(parts);
  const auth = typeof as === 'string' ? basicAuth(env.users[as].email, env.users[as].apiKey) : as.auth;
  return env.raw('/user_uploads', { method: 'POST', body, headers: { 'Content-Type': contentType, Authorization: auth } });
}

/** Uploads one file as `as` (answer checked): its URL and path id. */
export async function uploadFile(env: TestServer, as: Person | { auth: string }, name: string, data: string | Buffer, contentType: string | null = 'text/plain'): Promise<{ url: string; pathId: string }> {
  const res = await postUpload(env, as, [{ name: 'file', filename: name, contentType, data }]);
  if (res.status !== 200) throw new Error(`setup: upload failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { url: res.body.url as string, pathId: (res.body.url as string).slice('/user_uploads/'.length) };
}

export interface Download {
  status: number;
  headers: Headers;
  body: Buffer;
  text: string;
  json: any;
}

/** GET (or HEAD) of a file URL relative to the server (`/user_uploads/…`), as someone, with a key, or without credentials. */
export async function download(
  baseUrl: string,
  url: string,
  options: { auth?: string; range?: string; method?: 'GET' | 'HEAD'; redirect?: 'manual' | 'follow' } = {},
): Promise<Download> {
  const headers: Record<string, string> = {};
  if (options.auth) headers['Authorization'] = options.auth;
  if (options.range) headers['Range'] = options.range;
  const res = await fetch(baseUrl + url, { method: options.method ?? 'GET', headers, redirect: options.redirect ?? 'manual' });
  const body = Buffer.from(await res.arrayBuffer());
  const text = body.toString('utf8');
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, body, text, json };
}

/** The storage keys under `files/` (what is stored, whatever the backend). */
export async function storedKeys(env: TestServer): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of env.running.deps.storage.list('files/')) keys.push(o.key);
  return keys.sort();
}
