// POST /users/me/avatar on both storage backends: the image resized to Zulip's two PNG squares (100
// and 500 pixels), served publicly at Zulip's URL shape with nosniff and a sandboxing CSP, the user's
// avatar_source/avatar_version/avatar_url the same in the answer, GET /users/me, GET /users, messages
// and the `realm_user` event to everyone; the previous avatar's files deleted. Then every refusal
// (Zulip's errors) with nothing left in storage, and avatar_changes_disabled per role.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useSecondProcess, type TestServer } from '../../helpers/test-server.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { BACKENDS, download, multipart, useUploadServer, type Part } from '../../helpers/uploads.ts';
import { imageInfo, pngBomb, pngImage } from '../../helpers/images.ts';
import type { Person } from '../../helpers/fixtures.ts';

/** POST /users/me/avatar with a multipart body of `parts`. */
async function setAvatar(env: TestServer, as: Person, parts: Part[]) {
  const { body, contentType } = multipart(parts);
  return env.raw('/users/me/avatar', { method: 'POST', body, headers: { 'Content-Type': contentType }, as });
}

async function avatarKeys(env: TestServer): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of env.running.deps.storage.list('avatars/')) keys.push(o.key);
  return keys.sort();
}

const URL_SHAPE = (realmId: number, version: number) => new RegExp(`^/user_avatars/${realmId}/[0-9a-f]{40}\\.png\\?version=${version}$`);

describe('POST /users/me/avatar', () => {
  for (const backend of BACKENDS) {
    describe(`on ${backend} storage`, () => {
      const env = useUploadServer(backend);
      const second = useSecondProcess(env);

      it('stores two PNG squares, serves them to anyone, and tells the whole organization', async () => {
        const before = (await env.client('hamlet').GET('/users/me')).data!;
        expect(before.avatar_url).toMatch(/^https:\/\/secure\.gravatar\.com\/avatar\//);
        const mark = await markEvents(env);
        const res = await setAvatar(env, 'hamlet', [{ name: 'file', filename: 'me.jpg', contentType: 'image/png', data: await pngImage(300, 200) }]);
        expect(res.status).toBe(200);
        const version = before.avatar_version + 1;
        expect(res.body.avatar_url).toMatch(URL_SHAPE(env.realmId, version));
        const url: string = res.body.avatar_url;
        const medium = url.replace('.png?', '-medium.png?');

        // Public, as Zulip's: no credentials needed. Re-encoded PNGs with safe headers.
        const small = await download(env.url, url);
        expect(small.status).toBe(200);
        expect(small.headers.get('content-type')).toBe('image/png');
        expect(small.headers.get('x-content-type-options')).toBe('nosniff');
        expect(small.headers.get('content-security-policy')).toContain('sandbox');
        expect(await imageInfo(small.body)).toMatchObject({ width: 100, height: 100, format: 'png' });
        expect(await imageInfo((await download(env.url, medium)).body)).toMatchObject({ width: 500, height: 500, format: 'png' });

        const events = await eventsSince(env, mark);
        const everyone = (await env.running.deps.db.user.findMany({ where: { realmId: env.realmId, isActive: true }, select: { id: true } })).map((u) => u.id).sort((a, b) => a - b);
        expect(events).toEqual([
          {
            userIds: everyone,
            payload: { type: 'realm_user', op: 'update', person: { user_id: env.users.hamlet.id, avatar_source: 'U', avatar_url: url, avatar_url_medium: medium, avatar_version: version } },
          },
        ]);

        // The same URL everywhere: the user, the list of users (also with client_gravatar: it is not a gravatar).
        const me = (await env.client('hamlet').GET('/users/me')).data!;
        expect(me).toMatchObject({ avatar_url: url, avatar_version: version });
        const listed = await env.raw('/users?client_gravatar=true', { as: 'othello' });
        expect(listed.body.members.find((u: { user_id: number }) => u.user_id === env.users.hamlet.id)).toMatchObject({ avatar_url: url, avatar_version: version });

        // A second avatar: a new path, and the first one's files are gone.
        const again = await setAvatar(env, 'hamlet', [{ name: 'file', filename: 'me2.png', contentType: 'image/png', data: await pngImage(50, 50, '#ff0000') }]);
        expect(again.status).toBe(200);
        expect(again.body.avatar_url).toMatch(URL_SHAPE(env.realmId, version + 1));
        expect((await download(env.url, url)).status).toBe(404);
        expect(await avatarKeys(env)).toHaveLength(2);
      });

      it('is uploaded through one process and seen, at the same URL, through another', async () => {
        const { body, contentType } = multipart([{ name: 'f', filename: 'o.png', contentType: 'image/png', data: await pngImage(40, 40) }]);
        const auth = basicAuth(env.users.othello.email, env.users.othello.apiKey);
        const res = await fetch(`${second.running.url}/api/v1/users/me/avatar`, { method: 'POST', body, headers: { 'Content-Type': contentType, Authorization: auth } });
        expect(res.status).toBe(200);
        const { avatar_url: url } = (await res.json()) as { avatar_url: string };
        expect((await env.raw('/users/me', { as: 'othello' })).body.avatar_url).toBe(url);
        expect(await imageInfo((await download(env.url, url)).body)).toMatchObject({ width: 100, height: 100 });
      });
    });
  }

  describe('elsewhere and refusals', () => {
    const env = useUploadServer('local');

    it("shows the uploaded avatar as the sender's in messages, for every client", async () => {
      const res = await setAvatar(env, 'cordelia', [{ name: 'file', filename: 'c.png', contentType: 'image/png', data: await pngImage(120, 120) }]);
      expect(res.status).toBe(200);
      const sent = await env.raw('/messages', { method: 'POST', body: new URLSearchParams({ type: 'private', to: JSON.stringify([env.users.othello.id]), content: 'hi' }), as: 'cordelia' });
      expect(sent.status).toBe(200);
      for (const clientGravatar of ['true', 'false']) {
        const got = await env.raw(`/messages/${sent.body.id}?client_gravatar=${clientGravatar}`, { as: 'othello' });
        expect(got.body.message.avatar_url).toBe(res.body.avatar_url);
      }
      const got = await env.raw(`/messages?anchor=${sent.body.id}&num_before=0&num_after=0&client_gravatar=true`, { as: 'othello' });
      expect(got.body.messages[0].avatar_url).toBe(res.body.avatar_url);
    });

    it("refuses what is not one decodable image of an accepted type, with Zulip's errors, storing nothing", async () => {
      const before = await avatarKeys(env);
      const png = await pngImage(10, 10);
      const cases: Array<[Part[], string]> = [
        [[], 'You must upload exactly one avatar.'],
        [[{ name: 'a', data: 'not a file' }], 'You must upload exactly one avatar.'],
        [
          [
            { name: 'a', filename: 'a.png', contentType: 'image/png', data: png },
            { name: 'b', filename: 'b.png', contentType: 'image/png', data: png },
          ],
          'You must upload exactly one avatar.',
        ],
        [[{ name: 'f', filename: 'notes.txt', contentType: 'text/plain', data: 'hello' }], 'Invalid image format'],
        [[{ name: 'f', filename: 'icon.svg', contentType: 'image/svg+xml', data: '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>' }], 'Invalid image format'],
        [[{ name: 'f', filename: 'fake.png', contentType: 'image/png', data: '<html><script>alert(1)</script></html>' }], 'Could not decode image; did you upload an image file?'],
        [[{ name: 'f', filename: 'cut.png', contentType: 'image/png', data: png.subarray(0, 40) }], 'Could not decode image; did you upload an image file?'],
        [[{ name: 'f', filename: 'empty.png', contentType: 'image/png', data: '' }], 'Could not decode image; did you upload an image file?'],
        [[{ name: 'f', filename: 'bomb.png', contentType: 'image/png', data: pngBomb(20000, 20000) }], 'Image size exceeds limit.'],
        [[{ name: 'f', filename: 'huge.png', contentType: 'image/png', data: Buffer.alloc(5 * 1024 * 1024 + 1) }], 'Uploaded file is larger than the allowed limit of 5 MiB'],
      ];
      const version = (await env.client('hamlet').GET('/users/me')).data!.avatar_version;
      for (const [parts, msg] of cases) expectJsonError(await setAvatar(env, 'hamlet', parts), 400, msg);
      expect(await avatarKeys(env)).toEqual(before);
      expect((await env.client('hamlet').GET('/users/me')).data!.avatar_version).toBe(version);
    });

    it('refuses everyone but administrators when avatar changes are disabled', async () => {
      const png = await pngImage(10, 10);
      const patched = await env.raw('/realm', { method: 'PATCH', body: new URLSearchParams({ avatar_changes_disabled: 'true' }), as: 'desdemona' });
      expect(patched.status).toBe(200);
      try {
        for (const who of ['polonius', 'hamlet', 'shiva'] as const) {
          expectJsonError(await setAvatar(env, who, [{ name: 'f', filename: 'a.png', contentType: 'image/png', data: png }]), 400, 'Avatar changes are disabled in this organization.');
        }
        for (const who of ['iago', 'desdemona'] as const) {
          expect((await setAvatar(env, who, [{ name: 'f', filename: 'a.png', contentType: 'image/png', data: png }])).status).toBe(200);
        }
      } finally {
        await env.raw('/realm', { method: 'PATCH', body: new URLSearchParams({ avatar_changes_disabled: 'false' }), as: 'desdemona' });
      }
      // A guest may otherwise change theirs (Zulip has no role rule for avatars).
      expect((await setAvatar(env, 'polonius', [{ name: 'f', filename: 'a.png', contentType: 'image/png', data: png }])).status).toBe(200);
    });

    it('answers 404 for an avatar path that holds nothing, and for paths of another shape', async () => {
      expect((await download(env.url, `/user_avatars/${env.realmId}/${'0'.repeat(40)}.png`)).status).toBe(404);
      expect((await download(env.url, `/user_avatars/${env.realmId}/../files/x.png`)).status).toBe(404);
      expect((await download(env.url, `/user_avatars/${env.realmId}/${'0'.repeat(40)}.svg`)).status).toBe(404);
    });
  });
});
