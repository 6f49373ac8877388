// POST /realm/emoji/{emoji_name} on both storage backends: the image cropped to Zulip's 64-pixel square
// in its own type (an animated GIF kept animated, with a still PNG), served publicly with nosniff and a
// sandboxing CSP, listed with Zulip's EmojiInfo fields, and the `realm_emoji` event (the whole set) to
// everyone. Then Zulip's name rules, the permission (guests, can_add_custom_emoji_group, built-in names
// for administrators) and bad images, each Zulip's error with nothing left in storage or the database.
import { describe, expect, it } from 'vitest';
import { expectJsonError, type TestServer } from '../../helpers/test-server.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { BACKENDS, download, multipart, useUploadServer, type Part } from '../../helpers/uploads.ts';
import { animatedGif, imageInfo, pngBomb, pngImage } from '../../helpers/images.ts';
import type { Person } from '../../helpers/fixtures.ts';

async function addEmoji(env: TestServer, as: Person, name: string, parts: Part[]) {
  const { body, contentType } = multipart(parts);
  return env.raw(`/realm/emoji/${encodeURIComponent(name)}`, { method: 'POST', body, headers: { 'Content-Type': contentType }, as });
}

async function storedEmojiKeys(env: TestServer): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of env.running.deps.storage.list('emoji/')) keys.push(o.key);
  return keys.sort();
}

const activeIds = async (env: TestServer) =>
  (await env.running.deps.db.user.findMany({ where: { realmId: env.realmId, isActive: true }, select: { id: true } })).map((u) => u.id).sort((a, b) => a - b);

describe('POST /realm/emoji/{emoji_name}', () => {
  for (const backend of BACKENDS) {
    describe(`on ${backend} storage`, () => {
      const env = useUploadServer(backend);

      it('stores a 64-pixel square in its type, lists it and tells everyone', async () => {
        const mark = await markEvents(env);
        const res = await addEmoji(env, 'hamlet', ' green tick ', [{ name: 'f', filename: 'tick.png', contentType: 'image/png', data: await pngImage(200, 100) }]);
        expect(res.status).toBe(200);
        const list = (await env.raw('/realm/emoji', { as: 'polonius' })).body.emoji;
        const [emoji] = Object.values(list) as any[];
        expect(emoji).toEqual({
          id: expect.stringMatching(/^\d+$/),
          name: 'green_tick',
          source_url: expect.stringMatching(new RegExp(`^/user_avatars/${env.realmId}/emoji/images/[0-9a-f]{8}\\.png$`)),
          still_url: null,
          deactivated: false,
          author_id: env.users.hamlet.id,
          date_created: expect.any(Number),
        });
        const image = await download(env.url, emoji.source_url);
        expect(image.status).toBe(200);
        expect(image.headers.get('content-type')).toBe('image/png');
        expect(image.headers.get('x-content-type-options')).toBe('nosniff');
        expect(image.headers.get('content-security-policy')).toContain('sandbox');
        expect(await imageInfo(image.body)).toMatchObject({ width: 64, height: 64, format: 'png' });
        expect(await eventsSince(env, mark)).toEqual([{ userIds: await activeIds(env), payload: { type: 'realm_emoji', op: 'update', realm_emoji: list } }]);
      });

      it('keeps an animated GIF animated, with a still PNG of its first frame', async () => {
        const res = await addEmoji(env, 'iago', 'party', [{ name: 'f', filename: 'party.gif', contentType: 'image/gif', data: await animatedGif(100, 3) }]);
        expect(res.status).toBe(200);
        const emoji = (Object.values((await env.raw('/realm/emoji', { as: 'hamlet' })).body.emoji) as any[]).find((e) => e.name === 'party');
        expect(emoji.source_url).toMatch(/\.gif$/);
        expect(emoji.still_url).toMatch(new RegExp(`^/user_avatars/${env.realmId}/emoji/images/still/[0-9a-f]{8}\\.png$`));
        const animated = await download(env.url, emoji.source_url);
        expect(animated.headers.get('content-type')).toBe('image/gif');
        expect(await imageInfo(animated.body)).toEqual({ width: 64, height: 64, format: 'gif', pages: 3 });
        expect(await imageInfo((await download(env.url, emoji.still_url)).body)).toEqual({ width: 64, height: 64, format: 'png', pages: 1 });
      });
    });
  }

  describe('refusals', () => {
    const env = useUploadServer('local');

    it("applies Zulip's name rules and refuses a name already taken", async () => {
      const png = await pngImage(10, 10);
      const file = [{ name: 'f', filename: 'e.png', contentType: 'image/png', data: png }];
      expectJsonError(await addEmoji(env, 'hamlet', ' ', file), 400, 'Emoji name is missing');
      expectJsonError(await addEmoji(env, 'hamlet', 'Caps', file), 400, 'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.');
      expectJsonError(await addEmoji(env, 'hamlet', 'dot.name', file), 400, 'Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores.');
      expectJsonError(await addEmoji(env, 'hamlet', 'trailing_', file), 400, 'Emoji names must end with either a letter or digit.');
      expect((await addEmoji(env, 'hamlet', 'taken-1', file)).status).toBe(200);
      expectJsonError(await addEmoji(env, 'othello', 'taken-1', file), 400, 'A custom emoji with this name already exists.');
    });

    it('refuses guests, users outside can_add_custom_emoji_group, and built-in names to non-administrators', async () => {
      const png = await pngImage(10, 10);
      const file = [{ name: 'f', filename: 'e.png', contentType: 'image/png', data: png }];
      expectJsonError(await addEmoji(env, 'polonius', 'guest_emoji', file), 400, 'Not allowed for guest users');
      expectJsonError(await addEmoji(env, 'hamlet', 'smile', file), 400, 'Only administrators can override built-in emoji.');
      expect((await addEmoji(env, 'iago', 'smile', file)).status).toBe(200);
      const admins = await env.running.deps.db.userGroup.findFirst({ where: { realmId: env.realmId, name: 'role:administrators' } });
      const patch = (group: number | string) =>
        env.raw('/realm', { method: 'PATCH', body: new URLSearchParams({ can_add_custom_emoji_group: JSON.stringify({ new: group }) }), as: 'desdemona' });
      expect((await patch(admins!.id)).status).toBe(200);
      try {
        expectJsonError(await addEmoji(env, 'shiva', 'mod_emoji', file), 400, 'Insufficient permission');
        expect((await addEmoji(env, 'iago', 'admin_emoji', file)).status).toBe(200);
      } finally {
        const members = await env.running.deps.db.userGroup.findFirst({ where: { realmId: env.realmId, name: 'role:members' } });
        await patch(members!.id);
      }
      expect((await addEmoji(env, 'shiva', 'mod_emoji', file)).status).toBe(200);
    });

    it("refuses what is not one decodable image of an accepted type, with Zulip's errors, leaving nothing", async () => {
      const keys = await storedEmojiKeys(env);
      const rows = await env.running.deps.db.realmEmoji.count();
      const png = await pngImage(10, 10);
      const cases: Array<[Part[], string]> = [
        [[], 'You must upload exactly one file.'],
        [
          [
            { name: 'a', filename: 'a.png', contentType: 'image/png', data: png },
            { name: 'b', filename: 'b.png', contentType: 'image/png', data: png },
          ],
          'You must upload exactly one file.',
        ],
        [[{ name: 'f', filename: 'x.txt', contentType: 'text/plain', data: 'hello' }], 'Invalid image format'],
        [[{ name: 'f', filename: 'x.svg', contentType: 'image/svg+xml', data: '<svg xmlns="http://www.w3.org/2000/svg"/>' }], 'Invalid image format'],
        [[{ name: 'f', filename: 'x.png', contentType: 'image/png', data: '<script>alert(1)</script>' }], 'Could not decode image; did you upload an image file?'],
        [[{ name: 'f', filename: 'x.png', contentType: 'image/png', data: '' }], 'Could not decode image; did you upload an image file?'],
        [[{ name: 'f', filename: 'x.png', contentType: 'image/png', data: pngBomb(20000, 20000) }], 'Image size exceeds limit.'],
        [[{ name: 'f', filename: 'x.png', contentType: 'image/png', data: Buffer.alloc(5 * 1024 * 1024 + 1) }], 'Uploaded file is larger than the allowed limit of 5 MiB'],
      ];
      for (const [parts, msg] of cases) expectJsonError(await addEmoji(env, 'hamlet', 'bad_one', parts), 400, msg);
      expect(await storedEmojiKeys(env)).toEqual(keys);
      expect(await env.running.deps.db.realmEmoji.count()).toBe(rows);
    });
  });
});
