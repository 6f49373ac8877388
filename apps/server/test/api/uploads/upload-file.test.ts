// POST /user_uploads on both storage backends (a folder, and a real S3-compatible server): the body's
// file streamed into storage, Zulip's answer (`url`, `uri`, `filename`) and `attachment` event, the
// name and type Zulip keeps, the Python client's request shape, and every refusal — no file, several
// files, a file over the limit, the organization's quota, an interrupted body, a body of another type —
// each Zulip's error, and nothing left in storage.
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { expectJsonError } from '../../helpers/test-server.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { BACKENDS, download, multipart, postUpload, storedKeys, useUploadServer } from '../../helpers/uploads.ts';

/** The limit of these servers: 1 MiB, so that "too large" needs little data. */
const LIMIT_MIB = 1;

describe('POST /user_uploads', () => {
  for (const backend of BACKENDS) {
    describe(`on ${backend} storage`, () => {
      const env = useUploadServer(backend, { maxFileUploadSizeMib: LIMIT_MIB });
      const hamlet = () => basicAuth(env.users.hamlet.email, env.users.hamlet.apiKey);

      it("stores the file, answers Zulip's url, uri and filename, and tells the uploader's clients", async () => {
        const mark = await markEvents(env);
        const res = await postUpload(env, 'hamlet', [{ name: 'file', filename: 'zulip.txt', contentType: 'text/plain', data: 'zulip!' }]);
        expect(res.status).toBe(200);
        expect(res.body.url).toMatch(new RegExp(`^/user_uploads/${env.realmId}/[0-9a-f]{1,2}/[A-Za-z0-9_-]{24}/zulip\\.txt$`));
        expect(res.body.uri).toBe(res.body.url);
        expect(res.body.filename).toBe('zulip.txt');
        const got = await download(env.url, res.body.url, { auth: hamlet() });
        expect(got.status).toBe(200);
        expect(got.text).toBe('zulip!');
        // Plain text gets the charset Zulip detects.
        expect(got.headers.get('content-type')).toBe('text/plain; charset="ascii"');
        const events = await eventPayloadsSince(env, mark);
        expect(events).toEqual([
          {
            type: 'attachment',
            op: 'add',
            attachment: { id: expect.any(Number), name: 'zulip.txt', path_id: res.body.url.slice('/user_uploads/'.length), size: 6, create_time: expect.any(Number), messages: [] },
            upload_space_used: expect.any(Number),
          },
        ]);
        expect(events[0].attachment.create_time % 1000).toBe(0);
        expect(await storedKeys(env)).toContain(`files/${events[0].attachment.path_id}`);
      });

      it("accepts the Python client's request: the field named after the file's path, no part Content-Type", async () => {
        // requests' encoding of client.upload_file(open('/tmp/report.pdf', 'rb')): field name f.name,
        // file name its basename, no Content-Type in the part; the type is then guessed from the name.
        const { body, contentType } = multipart([{ name: '/tmp/report.pdf', filename: 'report.pdf', contentType: null, data: '%PDF-1.4 fake' }]);
        const res = await rawPost(env.url, body, { 'Content-Type': contentType, Authorization: hamlet(), 'User-Agent': 'ZulipPython/0.9.1' });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ result: 'success', filename: 'report.pdf' });
        const got = await download(env.url, res.body.uri, { auth: hamlet() });
        expect(got.headers.get('content-type')).toBe('application/pdf');
        // A name without an extension and no type: application/octet-stream (Zulip's fallback).
        const bare = await postUpload(env, 'hamlet', [{ name: 'x', filename: 'somefile', contentType: null, data: 'zulip!' }]);
        expect((await download(env.url, bare.body.url, { auth: hamlet() })).headers.get('content-type')).toBe('application/octet-stream');
      });

      it('keeps the content type as sent, its parameters quoted, and a charset the client gave', async () => {
        const res = await postUpload(env, 'hamlet', [{ name: 'file', filename: 'big5.txt', contentType: 'text/plain; test-key=test_value; charset=big5', data: 'text' }]);
        const got = await download(env.url, res.body.url, { auth: hamlet() });
        expect(got.headers.get('content-type')).toBe('text/plain; test-key="test_value"; charset="big5"');
        const utf8 = await postUpload(env, 'hamlet', [{ name: 'file', filename: 'hindi.txt', contentType: 'text/plain', data: 'नाम में क्या रक्खा हे' }]);
        expect((await download(env.url, utf8.body.url, { auth: hamlet() })).headers.get('content-type')).toBe('text/plain; charset="utf-8"');
      });

      it('stores an empty file', async () => {
        const res = await postUpload(env, 'hamlet', [{ name: 'file', filename: 'empty.bin', data: '' }]);
        expect(res.status).toBe(200);
        const got = await download(env.url, res.body.url, { auth: hamlet() });
        expect(got.status).toBe(200);
        expect(got.body.length).toBe(0);
      });

      it("keeps the name as uploaded and puts Zulip's sanitized name in the path", async () => {
        const cases: Array<[string, string, string]> = [
          // [file name sent, name kept (answer), last path component]
          ['my report (final).txt', 'my report (final).txt', 'my-report-final.txt'],
          ['../../etc/passwd', 'passwd', 'passwd'],
          ['C:\\Users\\x\\secret.txt', 'secret.txt', 'secret.txt'],
          ['caf\u00e9 \u00fcber.txt', 'caf\u00e9 \u00fcber.txt', 'caf\u00e9-\u00fcber.txt'],
          ['%E2%9C%93 done%0A.txt', '\u2713 done.txt', 'done.txt'],
          ['***', '***', 'uploaded-file'],
        ];
        for (const [sent, kept, last] of cases) {
          const res = await postUpload(env, 'hamlet', [{ name: 'file', filename: sent, data: 'x' }]);
          expect(res.status, sent).toBe(200);
          expect(res.body.filename, sent).toBe(kept);
          expect(decodeURIComponent(res.body.url.split('/').pop()), sent).toBe(last);
          expect(res.body.url.split('/').length, sent).toBe(6);
        }
        // Control characters (NUL, BEL, ESC) of a name given as RFC 8187 `filename*` are dropped; sent
        // raw in a header they make the part malformed (a clean 400).
        const encoded = await postUpload(env, 'hamlet', [{ name: 'file', disposition: "form-data; name=\"file\"; filename*=UTF-8''na%00me%07%1B.txt", data: 'x' }]);
        expect(encoded.status).toBe(200);
        expect(encoded.body.filename).toBe('name.txt');
        expectJsonError(await postUpload(env, 'hamlet', [{ name: 'file', filename: 'na\u0000me.txt', data: 'x' }]), 400, 'Malformed multipart body');
        // The kept name is the download's name; one that is not plain ASCII as RFC 8187 says.
        const res = await postUpload(env, 'hamlet', [{ name: 'file', filename: 'caf\u00e9.txt', contentType: 'text/plain', data: 'x' }]);
        expect((await download(env.url, res.body.url, { auth: hamlet() })).headers.get('content-disposition')).toBe("inline; filename*=utf-8''caf%C3%A9.txt");
      });

      it('refuses a body without a file, and a body that is not multipart/form-data', async () => {
        const before = await storedKeys(env);
        expectJsonError(await postUpload(env, 'hamlet', [{ name: 'note', data: 'just a field' }]), 400, 'You must specify a file to upload');
        // A part whose file name is empty, `.` or `..` is no file (Django's parser skips it).
        expectJsonError(await postUpload(env, 'hamlet', [{ name: 'file', filename: '', data: 'x' }, { name: 'f2', filename: '..', data: 'y' }]), 400, 'You must specify a file to upload');
        const form = await env.raw('/user_uploads', { method: 'POST', as: 'hamlet', body: 'file=zulip', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
        expectJsonError(form, 400, 'You must specify a file to upload');
        const json = await env.raw('/user_uploads', { method: 'POST', as: 'hamlet', body: '{"file": "x"}', headers: { 'Content-Type': 'application/json' } });
        expectJsonError(json, 400, 'You must specify a file to upload');
        expectJsonError(await env.raw('/user_uploads', { method: 'POST', as: 'hamlet' }), 400, 'You must specify a file to upload');
        // A multipart type without a boundary, and a body cut before its end.
        const noBoundary = await env.raw('/user_uploads', { method: 'POST', as: 'hamlet', body: 'x', headers: { 'Content-Type': 'multipart/form-data' } });
        expectJsonError(noBoundary, 400, 'Malformed multipart body');
        const { body, contentType } = multipart([{ name: 'file', filename: 'cut.txt', data: 'abcdef' }]);
        const cut = await env.raw('/user_uploads', { method: 'POST', as: 'hamlet', body: body.subarray(0, body.length - 20), headers: { 'Content-Type': contentType } });
        expectJsonError(cut, 400, 'Malformed multipart body');
        expect(await storedKeys(env)).toEqual(before);
      });

      it('refuses several files, keeping none of them', async () => {
        const before = await storedKeys(env);
        const res = await postUpload(env, 'hamlet', [
          { name: 'f1', filename: 'a.txt', data: 'bah!' },
          { name: 'f2', filename: 'b.txt', data: 'pshaw!' },
        ]);
        expectJsonError(res, 400, 'You may only upload one file at a time');
        expect(await storedKeys(env)).toEqual(before);
      });

      it('refuses a file over the limit while it streams, and keeps nothing of it', async () => {
        const before = await storedKeys(env);
        const mark = await markEvents(env);
        const exact = Buffer.alloc(LIMIT_MIB * 1024 * 1024, 1);
        expect((await postUpload(env, 'hamlet', [{ name: 'file', filename: 'exact.bin', data: exact }])).status).toBe(200);
        const tooBig = Buffer.alloc(LIMIT_MIB * 1024 * 1024 + 1, 2);
        expectJsonError(await postUpload(env, 'hamlet', [{ name: 'file', filename: 'big.bin', data: tooBig }]), 400, `File is larger than this server's configured maximum upload size (${LIMIT_MIB} MiB).`);
        // Refused long before the end of a body far over the limit (the answer comes while it is sent).
        const huge = Buffer.alloc(8 * LIMIT_MIB * 1024 * 1024, 3);
        expectJsonError(await postUpload(env, 'hamlet', [{ name: 'file', filename: 'huge.bin', data: huge }]), 400, `File is larger than this server's configured maximum upload size (${LIMIT_MIB} MiB).`);
        const added = (await storedKeys(env)).filter((k) => !before.includes(k));
        expect(added).toHaveLength(1);
        expect(added[0]).toMatch(/exact\.bin$/);
        expect((await eventPayloadsSince(env, mark)).map((e) => e.attachment.name)).toEqual(['exact.bin']);
      });

      it("refuses a file that would exceed the organization's quota", async () => {
        const db = env.running.deps.db;
        const used = Number((await db.attachment.aggregate({ where: { realmId: env.realmId }, _sum: { size: true } }))._sum.size ?? 0n);
        // A quota of 1 GiB, nearly used up by a record without a file (only its size counts here).
        await db.realm.update({ where: { id: env.realmId }, data: { customUploadQuotaGb: 1 } });
        const filler = await db.attachment.create({ data: { realmId: env.realmId, ownerId: env.users.iago.id, pathId: `${env.realmId}/00/filler/filler.bin`, fileName: 'filler.bin', size: BigInt(2 ** 30 - used - 10) } });
        await env.running.deps.listener.barrier();
        try {
          const register = await env.client('hamlet').POST('/register', { body: { fetch_event_types: ['realm'] } });
          expect(register.data).toMatchObject({ realm_upload_quota_mib: 1024, max_file_upload_size_mib: LIMIT_MIB });
          const before = await storedKeys(env);
          expect((await postUpload(env, 'hamlet', [{ name: 'file', filename: 'fits.txt', data: '0123456789' }])).status).toBe(200);
          expectJsonError(await postUpload(env, 'hamlet', [{ name: 'file', filename: 'over.txt', data: 'x' }]), 400, "Upload would exceed your organization's upload quota.", 'REALM_UPLOAD_QUOTA');
          expect((await storedKeys(env)).filter((k) => !before.includes(k))).toHaveLength(1);
        } finally {
          await db.attachment.delete({ where: { id: filler.id } });
          await db.realm.update({ where: { id: env.realmId }, data: { customUploadQuotaGb: null } });
          await env.running.deps.listener.barrier();
        }
      });

      it('keeps nothing of a body whose client goes away mid-file', async () => {
        const before = await storedKeys(env);
        const { body, contentType } = multipart([{ name: 'file', filename: 'gone.bin', data: Buffer.alloc(600 * 1024, 5) }]);
        await new Promise<void>((resolve) => {
          const url = new URL(`${env.url}/api/v1/user_uploads`);
          const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { 'Content-Type': contentType, 'Content-Length': String(body.length), Authorization: hamlet() } });
          req.on('error', () => resolve());
          req.on('close', () => resolve());
          // Half the body, then the connection closes.
          req.write(body.subarray(0, body.length / 2), () => setImmediate(() => req.destroy()));
        });
        // The upload fails on the server once it sees the connection close: poll until its partial write is gone too.
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline && (await storedKeys(env)).length !== before.length) await new Promise((r) => setTimeout(r, 50));
        expect(await storedKeys(env)).toEqual(before);
        expect(await env.running.deps.db.attachment.count({ where: { fileName: 'gone.bin' } })).toBe(0);
      });

      it('refuses requests without valid credentials', async () => {
        const { body, contentType } = multipart([{ name: 'file', filename: 'a.txt', data: 'x' }]);
        expectJsonError(await env.raw('/user_uploads', { method: 'POST', body, headers: { 'Content-Type': contentType } }), 401, 'Missing authorization header for basic auth');
        const wrong = await env.raw('/user_uploads', { method: 'POST', body, headers: { 'Content-Type': contentType, Authorization: basicAuth(env.users.hamlet.email, 'x'.repeat(32)) } });
        expectJsonError(wrong, 401, 'Invalid API key');
      });
    });
  }
});

/** A POST of a raw body to /api/v1/user_uploads with exactly these headers (node:http, nothing added). */
function rawPost(baseUrl: string, body: Buffer, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const url = new URL(`${baseUrl}/api/v1/user_uploads`);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
