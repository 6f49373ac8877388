// DELETE /users/me/avatar: back to the gravatar (avatar_source G, avatar_version up by one), the
// `realm_user` event to everyone, the uploaded files deleted; /register's own avatar fields follow
// each change; refused to non-administrators when avatar changes are disabled.
import { describe, expect, it } from 'vitest';
import { expectJsonError, type TestServer } from '../../helpers/test-server.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { download, multipart, useUploadServer } from '../../helpers/uploads.ts';
import { pngImage } from '../../helpers/images.ts';
import type { Person } from '../../helpers/fixtures.ts';

async function upload(env: TestServer, as: Person): Promise<string> {
  const { body, contentType } = multipart([{ name: 'f', filename: 'a.png', contentType: 'image/png', data: await pngImage(64, 64) }]);
  const res = await env.raw('/users/me/avatar', { method: 'POST', body, headers: { 'Content-Type': contentType }, as });
  if (res.status !== 200) throw new Error(`setup: avatar upload failed: ${JSON.stringify(res.body)}`);
  return res.body.avatar_url as string;
}

async function registered(env: TestServer, as: Person) {
  const res = await env.raw('/register', { method: 'POST', body: new URLSearchParams({ fetch_event_types: JSON.stringify(['realm_user']), client_gravatar: 'true' }), as });
  expect(res.status).toBe(200);
  return res.body;
}

describe('DELETE /users/me/avatar', () => {
  const env = useUploadServer('local');

  it('goes back to the gravatar, deletes the files and tells everyone; /register follows', async () => {
    const url = await upload(env, 'othello');
    const state = await registered(env, 'othello');
    expect(state).toMatchObject({ avatar_source: 'U', avatar_url: url, avatar_url_medium: url.replace('.png?', '-medium.png?') });
    expect(state.realm_users.find((u: { user_id: number }) => u.user_id === env.users.othello.id).avatar_url).toBe(url);
    const version: number = state.avatar_version;

    const mark = await markEvents(env);
    const res = await env.raw('/users/me/avatar', { method: 'DELETE', as: 'othello' });
    expect(res.status).toBe(200);
    expect(res.body.avatar_url).toMatch(new RegExp(`^https://secure\\.gravatar\\.com/avatar/[0-9a-f]{32}\\?d=identicon&version=${version + 1}$`));
    expect(await eventPayloadsSince(env, mark)).toEqual([
      {
        type: 'realm_user',
        op: 'update',
        person: { user_id: env.users.othello.id, avatar_source: 'G', avatar_url: res.body.avatar_url, avatar_url_medium: `${res.body.avatar_url}&s=500`, avatar_version: version + 1 },
      },
    ]);
    expect((await download(env.url, url)).status).toBe(404);
    const after = await registered(env, 'othello');
    expect(after).toMatchObject({ avatar_source: 'G', avatar_url: res.body.avatar_url, avatar_version: version + 1 });
    // A gravatar is left to clients that compute them (client_gravatar), as before.
    expect(after.realm_users.find((u: { user_id: number }) => u.user_id === env.users.othello.id).avatar_url).toBeNull();
  });

  it('refuses everyone but administrators when avatar changes are disabled', async () => {
    await upload(env, 'hamlet');
    await upload(env, 'iago');
    expect((await env.raw('/realm', { method: 'PATCH', body: new URLSearchParams({ avatar_changes_disabled: 'true' }), as: 'desdemona' })).status).toBe(200);
    try {
      expectJsonError(await env.raw('/users/me/avatar', { method: 'DELETE', as: 'hamlet' }), 400, 'Avatar changes are disabled in this organization.');
      expect((await env.raw('/users/me', { as: 'hamlet' })).body.avatar_url).toMatch(/^\/user_avatars\//);
      expect((await env.raw('/users/me/avatar', { method: 'DELETE', as: 'iago' })).status).toBe(200);
    } finally {
      await env.raw('/realm', { method: 'PATCH', body: new URLSearchParams({ avatar_changes_disabled: 'false' }), as: 'desdemona' });
    }
  });
});
