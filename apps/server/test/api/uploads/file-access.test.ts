// Reading uploaded files, on both storage backends: GET /api/v1/user_uploads/{realm_id_str}/{filename}
// (a temporary URL), and the file URLs themselves (/user_uploads/…, /user_uploads/download/…,
// /user_uploads/temporary/…): who may read a file (its uploader; readers of a message linking to it,
// by role and channel privacy; spectators of web-public channels), the headers that keep a file from
// acting in Parley's origin, byte ranges, temporary URLs that expire or were altered, and a file
// uploaded through one server process read through another.
import http from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET, type Person } from '../../helpers/fixtures.ts';
import { expectJsonError, useSecondProcess, useTestServer, type TestServer } from '../../helpers/test-server.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { createChannel, subscribeDirectly } from '../../helpers/channels.ts';
import { BACKENDS, download, multipart, uploadFile, useS3rver, useUploadServer } from '../../helpers/uploads.ts';
import { createUploadTokenSigner } from '../../../src/security/upload-tokens.ts';
import { loadOrCreateSecret } from '../../../src/security/secrets.ts';

const signer = createUploadTokenSigner(loadOrCreateSecret(TEST_SECRET, '/nonexistent'));
const nowSeconds = () => Math.floor(Date.now() / 1000);

function auth(env: TestServer, p: Person): string {
  return basicAuth(env.users[p].email, env.users[p].apiKey);
}

async function sendTo(env: TestServer, as: Person, to: { channel: string } | { user: Person }, content: string): Promise<number> {
  const body = 'channel' in to ? { type: 'stream' as const, to: to.channel, topic: 'files', content } : { type: 'direct' as const, to: JSON.stringify([env.users[to.user].id]), content };
  const { data, error } = await env.client(as).POST('/messages', { body });
  if (!data) throw new Error(`setup: send failed: ${JSON.stringify(error)}`);
  return data.id;
}

describe('GET /user_uploads/{realm_id_str}/{filename}', () => {
  for (const backend of BACKENDS) {
    describe(`on ${backend} storage`, () => {
      const env = useUploadServer(backend);
      const second = useSecondProcess(env);
      const statusFor = async (url: string, p: Person | null) => (await download(env.url, url, p ? { auth: auth(env, p) } : {})).status;
      const channels = { open: { id: 0, name: '' }, shared: { id: 0, name: '' }, protectedHistory: { id: 0, name: '' } };

      beforeAll(async () => {
        channels.open = await createChannel(env, 'iago', {}, ['hamlet']);
        channels.shared = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: true }, ['hamlet']);
        channels.protectedHistory = await createChannel(env, 'iago', { invite_only: true, history_public_to_subscribers: false }, ['hamlet']);
      });

      it('lets only the uploader read a file no message links to', async () => {
        const { url } = await uploadFile(env, 'hamlet', 'mine.txt', 'private notes');
        expect(await statusFor(url, 'hamlet')).toBe(200);
        for (const p of ['iago', 'othello', 'polonius'] as const) expect(await statusFor(url, p), p).toBe(403);
        const anonymous = await download(env.url, url);
        expect(anonymous.status).toBe(401);
        expect(anonymous.json).toMatchObject({ result: 'error', code: 'UNAUTHORIZED' });
      });

      it('shares a file with those who may read a message linking to it, by role and channel privacy', async () => {
        const open = await uploadFile(env, 'hamlet', 'open.txt', 'for everyone');
        await sendTo(env, 'hamlet', { channel: channels.open.name }, `[open.txt](${open.url})`);
        // Public channel: every member, subscribed or not; not a guest who is not subscribed.
        expect(await statusFor(open.url, 'othello')).toBe(200);
        expect(await statusFor(open.url, 'polonius')).toBe(403);
        await subscribeDirectly(env, env.users.polonius.id, channels.open.id);
        expect(await statusFor(open.url, 'polonius')).toBe(200);

        // Private channel with shared history: subscribers, also those who join later; not others.
        const shared = await uploadFile(env, 'hamlet', 'shared.txt', 'for the members');
        // An absolute link on the organization's own host counts too.
        await sendTo(env, 'hamlet', { channel: channels.shared.name }, `see ${env.running.deps.config.publicUrl}${shared.url}`);
        expect(await statusFor(shared.url, 'iago')).toBe(200);
        expect(await statusFor(shared.url, 'othello')).toBe(403);
        await subscribeDirectly(env, env.users.cordelia.id, channels.shared.id);
        expect(await statusFor(shared.url, 'cordelia')).toBe(200);

        // Private channel with protected history: who received the message; not who joined after it.
        const guarded = await uploadFile(env, 'hamlet', 'guarded.txt', 'for who was there');
        await sendTo(env, 'hamlet', { channel: channels.protectedHistory.name }, `[guarded.txt](${guarded.url})`);
        await subscribeDirectly(env, env.users.cordelia.id, channels.protectedHistory.id);
        expect(await statusFor(guarded.url, 'iago')).toBe(200);
        expect(await statusFor(guarded.url, 'cordelia')).toBe(403);
        expect(await statusFor(guarded.url, 'othello')).toBe(403);

        // Direct message: its participants, an administrator not.
        const direct = await uploadFile(env, 'hamlet', 'direct.txt', 'between us');
        await sendTo(env, 'hamlet', { user: 'othello' }, `[direct.txt](${direct.url})`);
        expect(await statusFor(direct.url, 'othello')).toBe(200);
        expect(await statusFor(direct.url, 'iago')).toBe(403);
      });

      it('shares nothing through a message of someone who may not read the file', async () => {
        const secret = await uploadFile(env, 'hamlet', 'secret.txt', 'hamlet only');
        await sendTo(env, 'othello', { channel: channels.open.name }, `[guess](${secret.url})`);
        expect(await statusFor(secret.url, 'iago')).toBe(403);
        expect(await statusFor(secret.url, 'othello')).toBe(403);
      });

      it('takes the access away when the message linking to the file is deleted', async () => {
        const file = await uploadFile(env, 'hamlet', 'fleeting.txt', 'soon gone');
        const id = await sendTo(env, 'hamlet', { user: 'othello' }, `[fleeting.txt](${file.url})`);
        expect(await statusFor(file.url, 'othello')).toBe(200);
        expect((await env.client('hamlet').DELETE('/messages/{message_id}', { params: { path: { message_id: id } } })).response.status).toBe(200);
        expect(await statusFor(file.url, 'othello')).toBe(403);
        expect(await statusFor(file.url, 'hamlet')).toBe(200);
      });

      it('lets spectators read the files of web-public channels when the organization admits them', async () => {
        const db = env.running.deps.db;
        const webPublic = await createChannel(env, 'iago', {}, ['hamlet']);
        await db.channel.update({ where: { id: webPublic.id }, data: { isWebPublic: true } });
        const shown = await uploadFile(env, 'hamlet', 'poster.png', Buffer.from('89504e47', 'hex'), 'image/png');
        await sendTo(env, 'hamlet', { channel: webPublic.name }, `[poster](${shown.url})`);
        const members = await uploadFile(env, 'hamlet', 'members.txt', 'members only');
        await sendTo(env, 'hamlet', { channel: channels.open.name }, `[members](${members.url})`);
        expect(await statusFor(shown.url, null)).toBe(401);
        await db.realm.update({ where: { id: env.realmId }, data: { enableSpectatorAccess: true } });
        await env.running.deps.listener.barrier();
        try {
          expect(await statusFor(shown.url, null)).toBe(200);
          expect(await statusFor(members.url, null)).toBe(401);
        } finally {
          await db.realm.update({ where: { id: env.realmId }, data: { enableSpectatorAccess: false } });
          await env.running.deps.listener.barrier();
        }
      });

      it('takes the API key in an api_key query parameter', async () => {
        const { url } = await uploadFile(env, 'hamlet', 'key.txt', 'by key');
        expect((await download(env.url, `${url}?api_key=${env.users.hamlet.apiKey}`)).text).toBe('by key');
        expect((await download(env.url, `${url}?api_key=${env.users.othello.apiKey}`)).status).toBe(403);
        const invalid = await download(env.url, `${url}?api_key=invalid`);
        expect(invalid.status).toBe(401);
        expect(invalid.json).toMatchObject({ result: 'error', msg: 'Invalid API key' });
        expect((await download(env.url, url, { auth: basicAuth(env.users.hamlet.email, 'y'.repeat(32)) })).status).toBe(401);
      });

      it('answers 404 for files that do not exist, whatever the path', async () => {
        expect(await statusFor(`/user_uploads/${env.realmId}/71/QYB7LA-ULMYEad-QfLMxmI2e/zulip-non-existent.txt`, 'hamlet')).toBe(404);
        const { pathId } = await uploadFile(env, 'hamlet', 'real.txt', 'x');
        // Another organization's id in front of a real path, and paths that try to leave the folder.
        expect(await statusFor(`/user_uploads/${env.realmId + 1000}/${pathId.split('/').slice(1).join('/')}`, 'hamlet')).toBe(404);
        for (const path of [`/user_uploads/${env.realmId}/%2e%2e/%2e%2e/etc/passwd`, `/user_uploads/${env.realmId}/..%2f..%2fsecret.key`, `/user_uploads/${env.realmId}/%00`]) {
          expect(await rawStatus(env.url, path, auth(env, 'hamlet')), path).toBe(404);
        }
      });

      it('serves dangerous types as downloads, sandboxed and never sniffed; safe ones inline', async () => {
        const cases: Array<[string, string, string, boolean]> = [
          ['page.html', 'text/html', '<script>alert(document.cookie)</script>', true],
          ['drawing.svg', 'image/svg+xml', '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>', true],
          ['data.xml', 'text/xml', '<x/>', true],
          ['script.js', 'application/javascript', 'alert(1)', true],
          ['photo.png', 'image/png', '\x89PNG', false],
          ['notes.txt', 'text/plain', 'notes', false],
          ['paper.pdf', 'application/pdf', '%PDF-1.4', false],
        ];
        for (const [name, type, data, asAttachment] of cases) {
          const { url } = await uploadFile(env, 'hamlet', name, data, type);
          const got = await download(env.url, url, { auth: auth(env, 'hamlet') });
          expect(got.status, name).toBe(200);
          expect(got.headers.get('content-type')!.split(';')[0], name).toBe(type);
          expect(got.headers.get('content-disposition'), name).toBe(`${asAttachment ? 'attachment' : 'inline'}; filename="${name}"`);
          expect(got.headers.get('x-content-type-options'), name).toBe('nosniff');
          const csp = got.headers.get('content-security-policy')!;
          expect(csp, name).toContain("default-src 'none'");
          expect(csp, name).not.toContain('script-src');
          if (type === 'application/pdf') expect(csp).not.toContain('sandbox');
          else expect(csp.split(';').map((d) => d.trim()), name).toContain('sandbox');
          // The download form is always an attachment.
          const forced = await download(env.url, url.replace('/user_uploads/', '/user_uploads/download/'), { auth: auth(env, 'hamlet') });
          expect(forced.headers.get('content-disposition'), name).toBe(`attachment; filename="${name}"`);
          expect(forced.body.equals(got.body), name).toBe(true);
        }
      });

      it('answers byte ranges', async () => {
        const content = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
        const { url } = await uploadFile(env, 'hamlet', 'range.bin', content, 'application/octet-stream');
        const as = auth(env, 'hamlet');
        const part = await download(env.url, url, { auth: as, range: 'bytes=10-19' });
        expect(part.status).toBe(206);
        expect(part.headers.get('content-range')).toBe('bytes 10-19/1000');
        expect(part.body.equals(content.subarray(10, 20))).toBe(true);
        const tail = await download(env.url, url, { auth: as, range: 'bytes=-5' });
        expect([tail.status, tail.headers.get('content-range')]).toEqual([206, 'bytes 995-999/1000']);
        expect(tail.body.equals(content.subarray(995))).toBe(true);
        const open = await download(env.url, url, { auth: as, range: 'bytes=990-' });
        expect(open.body.equals(content.subarray(990))).toBe(true);
        const beyond = await download(env.url, url, { auth: as, range: 'bytes=1000-1010' });
        expect([beyond.status, beyond.headers.get('content-range')]).toEqual([416, 'bytes */1000']);
        // Several ranges, or a malformed header: the whole file.
        for (const range of ['bytes=0-1,5-6', 'lines=1-2', 'bytes=9-3']) {
          const whole = await download(env.url, url, { auth: as, range });
          expect([whole.status, whole.body.length], range).toEqual([200, 1000]);
        }
        const head = await download(env.url, url, { auth: as, method: 'HEAD' });
        expect([head.status, head.headers.get('content-length'), head.headers.get('accept-ranges'), head.body.length]).toEqual([200, '1000', 'bytes', 0]);
      });

      it('answers a temporary URL that needs no credentials, refused once expired or altered', async () => {
        const { url, pathId } = await uploadFile(env, 'hamlet', 'temp.txt', 'temporary');
        await sendTo(env, 'hamlet', { user: 'othello' }, `[temp.txt](${url})`);
        const [realmId, ...rest] = pathId.split('/');
        const res = await env.client('othello').GET('/user_uploads/{realm_id_str}/{filename}', { params: { path: { realm_id_str: Number(realmId), filename: rest.join('/') } } });
        expect(res.data?.url).toMatch(/^\/user_uploads\/temporary\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\/temp\.txt$/);
        const temporary = res.data!.url;
        const got = await download(env.url, temporary);
        expect([got.status, got.text]).toEqual([200, 'temporary']);
        expect(got.headers.get('content-security-policy')).toContain('sandbox');

        const token = temporary.split('/')[3]!;
        const altered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;
        expect((await download(env.url, `/user_uploads/temporary/${altered}/temp.txt`)).json).toMatchObject({ result: 'error', msg: 'Invalid token' });
        expect((await download(env.url, `/user_uploads/temporary/${token}/other.exe`)).json).toMatchObject({ result: 'error', msg: 'Invalid filename' });
        expect((await download(env.url, '/user_uploads/temporary/badtoken/file.png')).status).toBe(400);
        // Zulip's tokens last 60 seconds: one made 61 seconds ago is refused, one made 59 seconds ago is not.
        const expired = signer.sign(pathId, nowSeconds() - 61);
        const expiredAnswer = await download(env.url, `/user_uploads/temporary/${expired}/temp.txt`);
        expect([expiredAnswer.status, expiredAnswer.json?.msg]).toEqual([400, 'Invalid token']);
        expect((await download(env.url, `/user_uploads/temporary/${signer.sign(pathId, nowSeconds() - 59)}/temp.txt`)).text).toBe('temporary');
        // A token for another path does not open this one.
        expect((await download(env.url, `/user_uploads/temporary/${signer.sign(`${pathId}x`)}/temp.txt`)).status).toBe(400);
      });

      it('refuses a temporary URL to who may not read the file, or for a file that does not exist', async () => {
        const { pathId } = await uploadFile(env, 'hamlet', 'nope.txt', 'x');
        const [realmId, ...rest] = pathId.split('/');
        const path = { realm_id_str: Number(realmId), filename: rest.join('/') };
        expectJsonError(await env.client('othello').GET('/user_uploads/{realm_id_str}/{filename}', { params: { path } }), 403, 'You are not authorized to view this file.');
        expectJsonError(await env.client('hamlet').GET('/user_uploads/{realm_id_str}/{filename}', { params: { path: { ...path, filename: `${path.filename}-gone` } } }), 404, 'This file does not exist or has been deleted.');
        expectJsonError(await env.anonymous().GET('/user_uploads/{realm_id_str}/{filename}', { params: { path } }), 401, 'Missing authorization header for basic auth');
      });

      it('serves through one server process a file uploaded through another', async () => {
        const through = (url: string) => ({ url, auth: auth(env, 'hamlet') });
        const { body, contentType } = multipart([{ name: 'file', filename: 'elsewhere.txt', contentType: 'text/plain', data: 'from the other process' }]);
        const res = await fetch(`${second.running.url}/api/v1/user_uploads`, { method: 'POST', body, headers: { 'Content-Type': contentType, Authorization: auth(env, 'hamlet') } });
        expect(res.status).toBe(200);
        const { url } = (await res.json()) as { url: string };
        const here = through(env.url);
        expect((await download(here.url, url, { auth: here.auth })).text).toBe('from the other process');
        const back = await uploadFile(env, 'hamlet', 'here.txt', 'from the first process');
        expect((await download(second.running.url, back.url, { auth: here.auth })).text).toBe('from the first process');
        // A temporary URL made by one process is served by the other.
        const [realmId, ...rest] = back.pathId.split('/');
        const temp = await env.client('hamlet').GET('/user_uploads/{realm_id_str}/{filename}', { params: { path: { realm_id_str: Number(realmId), filename: rest.join('/') } } });
        expect((await download(second.running.url, temp.data!.url)).text).toBe('from the first process');
      });
    });
  }

  describe('on S3 storage with presigned downloads', () => {
    const s3 = useS3rver();
    const env = useTestServer({ config: () => ({ storage: { ...s3.storage, presignedDownloads: true } }) });

    it('redirects readers to a short-lived URL of the bucket that answers with the same type and disposition', async () => {
      const { url } = await uploadFile(env, 'hamlet', 'page.html', '<b>hi</b>', 'text/html');
      const redirect = await download(env.url, url, { auth: auth(env, 'hamlet') });
      expect(redirect.status).toBe(302);
      const location = redirect.headers.get('location')!;
      expect(location.startsWith(`${s3.endpoint}/`)).toBe(true);
      expect(location).toContain('X-Amz-Expires=60');
      const direct = await fetch(location);
      expect(direct.status).toBe(200);
      expect(await direct.text()).toBe('<b>hi</b>');
      expect(direct.headers.get('content-disposition')).toBe('attachment; filename="page.html"');
      expect(direct.headers.get('content-type')).toBe('text/html');
      // Access is decided first, as for files served through Parley.
      expect((await download(env.url, url, { auth: auth(env, 'othello') })).status).toBe(403);
    });
  });
});

/** The status of a GET of a path sent exactly as written (fetch would normalise dot segments). */
function rawStatus(baseUrl: string, path: string, authorization: string): Promise<number> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path, method: 'GET', headers: { Authorization: authorization } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}
