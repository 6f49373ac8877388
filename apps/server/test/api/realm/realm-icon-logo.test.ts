// The organization's icon and logos: POST/DELETE /realm/icon and /realm/logo (administrators only),
// the `realm` `update_dict` event of each change, /register's realm_icon_* / realm_logo_* /
// realm_night_logo_* state, GET /server_settings's realm_icon, and the images served at their URLs.
import { describe, expect, it } from 'vitest';
import { expectJsonError, type TestServer } from '../../helpers/test-server.ts';
import { eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { download, multipart, useUploadServer, type Part } from '../../helpers/uploads.ts';
import { imageInfo, pngImage } from '../../helpers/images.ts';
import type { Person } from '../../helpers/fixtures.ts';

const env = useUploadServer('local');

async function send(path: string, as: Person, parts: Part[]) {
  const { body, contentType } = multipart(parts);
  return env.raw(path, { method: 'POST', body, headers: { 'Content-Type': contentType }, as });
}

const png = async (width: number, height: number): Promise<Part> => ({ name: 'f', filename: 'image.png', contentType: 'image/png', data: await pngImage(width, height) });

async function realmState(e: TestServer) {
  const res = await e.raw('/register', { method: 'POST', body: new URLSearchParams({ fetch_event_types: JSON.stringify(['realm']) }), as: 'hamlet' });
  expect(res.status).toBe(200);
  return res.body;
}

async function servedPng(url: string) {
  const res = await download(env.url, url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('image/png');
  return imageInfo(res.body);
}

describe('POST /realm/icon', () => {
  it('stores a 100-pixel square, tells everyone, and /register and /server_settings follow', async () => {
    const before = await realmState(env);
    expect(before.realm_icon_source).toBe('G');
    const version = Number(/version=(\d+)/.exec(before.realm_icon_url)![1]);
    const mark = await markEvents(env);
    const res = await send('/realm/icon', 'iago', [await png(300, 200)]);
    expect(res.status).toBe(200);
    const url = `/user_avatars/${env.realmId}/realm/icon.png?version=${version + 1}`;
    expect(res.body.icon_url).toBe(url);
    expect(await eventPayloadsSince(env, mark)).toEqual([{ type: 'realm', op: 'update_dict', property: 'icon', data: { icon_url: url, icon_source: 'U' } }]);
    expect(await realmState(env)).toMatchObject({ realm_icon_url: url, realm_icon_source: 'U' });
    expect((await env.raw('/server_settings', { as: 'hamlet' })).body.realm_icon).toBe(url);
    expect(await servedPng(url)).toMatchObject({ width: 100, height: 100, format: 'png' });
  });

  it('refuses members, other than one file, and what is not an image; nothing changes', async () => {
    const before = await realmState(env);
    const mark = await markEvents(env);
    expectJsonError(await send('/realm/icon', 'hamlet', [await png(50, 50)]), 400, 'Must be an organization administrator');
    expectJsonError(await send('/realm/icon', 'iago', []), 400, 'You must upload exactly one icon.');
    expectJsonError(await send('/realm/icon', 'iago', [await png(50, 50), { ...(await png(60, 60)), name: 'g', filename: 'b.png' }]), 400, 'You must upload exactly one icon.');
    expectJsonError(await send('/realm/icon', 'iago', [{ name: 'f', filename: 'notes.txt', contentType: 'text/plain', data: 'hello' }]), 400, 'Invalid image format');
    expectJsonError(await send('/realm/icon', 'iago', [{ name: 'f', filename: 'fake.png', contentType: 'image/png', data: 'not a png at all' }]), 400, 'Could not decode image; did you upload an image file?');
    expect(await eventPayloadsSince(env, mark)).toEqual([]);
    expect((await realmState(env)).realm_icon_url).toBe(before.realm_icon_url);
  });
});

describe('DELETE /realm/icon', () => {
  it('goes back to the gravatar for administrators only', async () => {
    expect((await send('/realm/icon', 'iago', [await png(80, 80)])).status).toBe(200);
    const version = Number(/version=(\d+)/.exec((await realmState(env)).realm_icon_url)![1]);
    expectJsonError(await env.raw('/realm/icon', { method: 'DELETE', as: 'hamlet' }), 400, 'Must be an organization administrator');
    const mark = await markEvents(env);
    const res = await env.raw('/realm/icon', { method: 'DELETE', as: 'desdemona' });
    expect(res.status).toBe(200);
    expect(res.body.icon_url).toMatch(new RegExp(`^https://secure\\.gravatar\\.com/avatar/[0-9a-f]{32}\\?d=identicon&version=${version + 1}$`));
    expect(await eventPayloadsSince(env, mark)).toEqual([{ type: 'realm', op: 'update_dict', property: 'icon', data: { icon_url: res.body.icon_url, icon_source: 'G' } }]);
    expect(await realmState(env)).toMatchObject({ realm_icon_url: res.body.icon_url, realm_icon_source: 'G' });
  });
});

describe('POST /realm/logo', () => {
  it('stores the day and night logos shrunk to fit 800×100, each with its own event and version', async () => {
    const before = await realmState(env);
    expect(before).toMatchObject({ realm_logo_source: 'D', realm_night_logo_source: 'D' });
    const mark = await markEvents(env);
    expect((await send('/realm/logo', 'iago', [{ name: 'night', contentType: null, data: 'false' }, await png(1600, 400)])).status).toBe(200);
    expect((await send('/realm/logo', 'iago', [{ name: 'night', contentType: null, data: 'true' }, await png(200, 50)])).status).toBe(200);
    const state = await realmState(env);
    expect(state).toMatchObject({ realm_logo_source: 'U', realm_night_logo_source: 'U', realm_icon_source: before.realm_icon_source });
    expect(state.realm_logo_url).toMatch(new RegExp(`^/user_avatars/${env.realmId}/realm/logo\\.png\\?version=\\d+$`));
    expect(state.realm_night_logo_url).toMatch(new RegExp(`^/user_avatars/${env.realmId}/realm/night_logo\\.png\\?version=\\d+$`));
    expect(await eventPayloadsSince(env, mark)).toEqual([
      { type: 'realm', op: 'update_dict', property: 'logo', data: { logo_url: state.realm_logo_url, logo_source: 'U' } },
      { type: 'realm', op: 'update_dict', property: 'night_logo', data: { night_logo_url: state.realm_night_logo_url, night_logo_source: 'U' } },
    ]);
    // Shrunk to fit, proportions kept; a small one is not enlarged.
    expect(await servedPng(state.realm_logo_url)).toMatchObject({ width: 400, height: 100 });
    expect(await servedPng(state.realm_night_logo_url)).toMatchObject({ width: 200, height: 50 });
  });

  it('refuses members, a body without the file, and what is not an image', async () => {
    expectJsonError(await send('/realm/logo', 'hamlet', [{ name: 'night', contentType: null, data: 'false' }, await png(50, 50)]), 400, 'Must be an organization administrator');
    expectJsonError(await send('/realm/logo', 'iago', [{ name: 'night', contentType: null, data: 'false' }]), 400, 'You must upload exactly one logo.');
    expectJsonError(await send('/realm/logo', 'iago', [{ name: 'night', contentType: null, data: 'false' }, { name: 'f', filename: 'x.png', contentType: 'image/png', data: 'nope' }]), 400, 'Could not decode image; did you upload an image file?');
  });
});

describe('DELETE /realm/logo', () => {
  it('leaves URLs that answer: the default logos are served, and the default icon is an absolute gravatar URL', async () => {
    for (const night of ['false', 'true']) expect((await env.raw('/realm/logo', { method: 'DELETE', body: new URLSearchParams({ night }), as: 'iago' })).status).toBe(200);
    const state = await realmState(env);
    expect([state.realm_logo_source, state.realm_night_logo_source]).toEqual(['D', 'D']);
    for (const url of [state.realm_logo_url as string, state.realm_night_logo_url as string]) {
      const res = await download(env.url, url);
      expect(res.status, url).toBe(200);
      expect(res.headers.get('content-type'), url).toBe('image/svg+xml');
      expect(res.body.toString('utf8'), url).toMatch(/^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      expect(res.body.toString('utf8'), url).not.toMatch(/<script/i);
      expect(res.headers.get('content-security-policy'), url).toContain('sandbox');
    }
    if (state.realm_icon_source === 'G') expect(state.realm_icon_url).toMatch(/^https:\/\/secure\.gravatar\.com\/avatar\//);
  });

  it('goes back to the default logo of the theme asked', async () => {
    expect((await send('/realm/logo', 'iago', [{ name: 'night', contentType: null, data: 'true' }, await png(100, 100)])).status).toBe(200);
    const before = await realmState(env);
    expectJsonError(await env.raw('/realm/logo', { method: 'DELETE', body: new URLSearchParams({ night: 'true' }), as: 'hamlet' }), 400, 'Must be an organization administrator');
    const mark = await markEvents(env);
    expect((await env.raw('/realm/logo', { method: 'DELETE', body: new URLSearchParams({ night: 'true' }), as: 'iago' })).status).toBe(200);
    const after = await realmState(env);
    expect(after.realm_night_logo_source).toBe('D');
    expect(after.realm_night_logo_url).not.toBe(before.realm_night_logo_url);
    expect(after.realm_logo_url).toBe(before.realm_logo_url);
    expect(await eventPayloadsSince(env, mark)).toEqual([{ type: 'realm', op: 'update_dict', property: 'night_logo', data: { night_logo_url: after.realm_night_logo_url, night_logo_source: 'D' } }]);
  });
});
