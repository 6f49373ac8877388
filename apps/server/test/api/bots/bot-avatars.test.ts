// Bots' avatars as Zulip takes them: the one image file part of the multipart body that carries the
// bot's other parameters, at creation (POST /bots) and on change (PATCH /bots/{bot_id}); resized to
// the two PNG squares of POST /users/me/avatar and announced with avatar_url in the realm_user and
// realm_bot events. Refusals (several files, not an image) change nothing and leave nothing stored.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { expectJsonError } from '../../helpers/test-server.ts';
import { eventsSince, markEvents, type StoredEvent } from '../../helpers/events.ts';
import { download, multipart, useUploadServer, type Part } from '../../helpers/uploads.ts';
import { imageInfo, pngImage } from '../../helpers/images.ts';
import type { Person } from '../../helpers/fixtures.ts';

const env = useUploadServer('local');
const ofType = (events: StoredEvent[], type: string, op?: string) => events.filter((e) => e.payload.type === type && (op === undefined || e.payload.op === op));
const URL_SHAPE = (version: number) => new RegExp(`^/user_avatars/${env.realmId}/[0-9a-f]{40}\\.png\\?version=${version}$`);

async function send(method: 'POST' | 'PATCH', path: string, as: Person, parts: Part[]) {
  const { body, contentType } = multipart(parts);
  return env.raw(path, { method, body, headers: { 'Content-Type': contentType }, as });
}

async function avatarKeys(): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of env.running.deps.storage.list('avatars/')) keys.push(o.key);
  return keys.sort();
}

const fields = (short: string): Part[] => [
  { name: 'full_name', data: `Bot ${short}`, contentType: null },
  { name: 'short_name', data: short, contentType: null },
];

describe('POST /bots', () => {
  it('creates a bot whose avatar is the body’s image, in the answer and the add events', async () => {
    const short = `av${randomBytes(3).toString('hex')}`;
    const mark = await markEvents(env);
    const res = await send('POST', '/bots', 'hamlet', [...fields(short), { name: 'avatar', filename: 'bot.png', contentType: 'image/png', data: await pngImage(120, 80) }]);
    expect(res.status).toBe(200);
    expect(res.body.avatar_url).toMatch(URL_SHAPE(1));
    const small = await download(env.url, res.body.avatar_url as string);
    expect(small.status).toBe(200);
    expect(await imageInfo(small.body)).toMatchObject({ width: 100, height: 100, format: 'png' });
    const row = await env.running.deps.db.user.findUniqueOrThrow({ where: { id: res.body.user_id as number } });
    expect(row).toMatchObject({ avatarSource: 'U', avatarVersion: 1 });
    const events = await eventsSince(env, mark);
    expect(ofType(events, 'realm_user', 'add')[0]!.payload.person).toMatchObject({ user_id: row.id, avatar_url: res.body.avatar_url });
    expect(ofType(events, 'realm_bot', 'add')[0]!.payload.bot).toMatchObject({ user_id: row.id, avatar_url: res.body.avatar_url });
    expect(ofType(events, 'realm_user', 'update')).toEqual([]);
  });

  it('refuses two files and creates nothing', async () => {
    const short = `two${randomBytes(3).toString('hex')}`;
    const before = await avatarKeys();
    const png = await pngImage(20, 20);
    const res = await send('POST', '/bots', 'hamlet', [...fields(short), { name: 'a', filename: 'a.png', contentType: 'image/png', data: png }, { name: 'b', filename: 'b.png', contentType: 'image/png', data: png }]);
    expectJsonError(res, 400, 'You may only upload one file at a time');
    expect(await env.running.deps.db.user.count({ where: { realmId: env.realmId, fullName: `Bot ${short}` } })).toBe(0);
    expect(await avatarKeys()).toEqual(before);
  });
});

describe('PATCH /bots/{bot_id}', () => {
  it('replaces the avatar after the other changes, with Zulip’s events, and deletes the previous files', async () => {
    const short = `up${randomBytes(3).toString('hex')}`;
    const created = await send('POST', '/bots', 'hamlet', [...fields(short), { name: 'f', filename: 'one.png', contentType: 'image/png', data: await pngImage(50, 50) }]);
    expect(created.status).toBe(200);
    const botId = created.body.user_id as number;
    const firstKeys = await avatarKeys();
    const mark = await markEvents(env);
    const res = await send('PATCH', `/bots/${botId}`, 'hamlet', [
      { name: 'full_name', data: `Renamed ${short}`, contentType: null },
      { name: 'f', filename: 'two.bin', contentType: 'image/png', data: await pngImage(300, 200, '#aa3300') }, // the part's own type counts
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ full_name: `Renamed ${short}`, avatar_url: expect.stringMatching(URL_SHAPE(2)) });
    const url = res.body.avatar_url as string;
    expect(await imageInfo((await download(env.url, url.replace('.png?', '-medium.png?'))).body)).toMatchObject({ width: 500, height: 500 });
    const events = await eventsSince(env, mark);
    const updates = ofType(events, 'realm_user', 'update').map((e) => e.payload.person);
    expect(updates).toEqual([
      { user_id: botId, full_name: `Renamed ${short}` },
      { user_id: botId, avatar_source: 'U', avatar_url: url, avatar_url_medium: url.replace('.png?', '-medium.png?'), avatar_version: 2 },
    ]);
    const botUpdates = ofType(events, 'realm_bot', 'update');
    expect(botUpdates.map((e) => e.payload.bot)).toEqual([
      { user_id: botId, full_name: `Renamed ${short}` },
      { user_id: botId, avatar_url: url },
    ]);
    expect(botUpdates[1]!.userIds).toContain(env.users.hamlet.id);
    expect(botUpdates[1]!.userIds).not.toContain(env.users.othello.id);
    // The first avatar's files are gone; the new ones are there.
    const now = await avatarKeys();
    expect(now.filter((k) => !firstKeys.includes(k))).toHaveLength(2);
    expect(firstKeys.filter((k) => !now.includes(k))).toHaveLength(2);
  });

  it('refuses a file that is not an image before changing anything', async () => {
    const short = `bad${randomBytes(3).toString('hex')}`;
    const created = await send('POST', '/bots', 'hamlet', fields(short));
    const botId = created.body.user_id as number;
    const before = await avatarKeys();
    const res = await send('PATCH', `/bots/${botId}`, 'hamlet', [
      { name: 'full_name', data: 'Not Renamed', contentType: null },
      { name: 'f', filename: 'notes.txt', contentType: 'text/plain', data: 'hello' },
    ]);
    expectJsonError(res, 400, 'Invalid image format');
    expect(await env.running.deps.db.user.findUniqueOrThrow({ where: { id: botId } })).toMatchObject({ fullName: `Bot ${short}`, avatarSource: 'G' });
    expect(await avatarKeys()).toEqual(before);
  });

  it("refuses another user's bot", async () => {
    const created = await send('POST', '/bots', 'hamlet', fields(`oth${randomBytes(3).toString('hex')}`));
    const res = await send('PATCH', `/bots/${created.body.user_id as number}`, 'othello', [{ name: 'f', filename: 'x.png', contentType: 'image/png', data: await pngImage(20, 20) }]);
    expectJsonError(res, 400, 'Insufficient permission');
  });
});
