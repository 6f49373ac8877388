// Thumbnails of uploaded images (issue 24 part 2): an image upload records the image and queues a
// thumbnail job; the job's thumbnail is stored and served (to those who may read the image only, with
// the files' headers); messages linking the image render Zulip's inline preview, a placeholder while
// the thumbnail is pending, and are re-rendered with an `update_message` (rendering_only) to those who
// may see them when it is made; what is not an image, a decompression bomb or a corrupt image gets no
// thumbnail and no 5xx, and the message keeps a plain link.
import { beforeAll, describe, expect, it } from 'vitest';
import sharp from 'sharp';
import type { Person } from '../../helpers/fixtures.ts';
import type { TestServer } from '../../helpers/test-server.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { createChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { registerQueue } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';
import { pngBomb, pngImage } from '../../helpers/images.ts';
import { BACKENDS, download, uploadFile, useUploadServer } from '../../helpers/uploads.ts';
import { doMakeThumbnails } from '../../../src/actions/thumbnails.ts';

const auth = (env: TestServer, p: Person) => basicAuth(env.users[p].email, env.users[p].apiKey);

async function send(env: TestServer, as: Person, channel: string, content: string): Promise<number> {
  const { data, error } = await env.client(as).POST('/messages', { body: { type: 'stream', to: channel, topic: 'pictures', content } });
  if (!data) throw new Error(`setup: send failed: ${JSON.stringify(error)}`);
  return data.id;
}

async function renderedOf(env: TestServer, as: Person, id: number): Promise<string> {
  const { data } = await env.client(as).GET('/messages/{message_id}', { params: { path: { message_id: id } } });
  if (!data) throw new Error('setup: could not read the message');
  return data.message.content;
}

async function imageRow(env: TestServer, pathId: string): Promise<{ attachment_id: number; thumbnails: unknown[] } | null> {
  const rows = await env.running.deps.db.$queryRaw<Array<{ attachment_id: number; thumbnails: unknown[] }>>`
    SELECT attachment_id, thumbnail_metadata AS thumbnails FROM image_attachment WHERE path_id = ${pathId}`;
  return rows[0] ?? null;
}

/** Waits until the thumbnail job stored the still thumbnail of the upload. */
const thumbnailStored = (env: TestServer, pathId: string) =>
  waitFor(async () => (await env.running.deps.storage.head(`thumbnails/${pathId}/840x560.webp`)) !== null, { what: 'the thumbnail job' });

describe('POST /user_uploads: image thumbnails', () => {
  for (const backend of BACKENDS) {
    describe(`on ${backend} storage`, () => {
      const env = useUploadServer(backend);

      it('records an uploaded image and makes its thumbnail off the request, served as the files are', async () => {
        const upload = await uploadFile(env, 'hamlet', 'photo.png', await pngImage(1200, 900), 'image/png');
        await thumbnailStored(env, upload.pathId);
        const row = await imageRow(env, upload.pathId);
        expect(row?.thumbnails).toHaveLength(1);

        const served = await download(env.url, `/user_uploads/thumbnail/${upload.pathId}/840x560.webp`, { auth: auth(env, 'hamlet') });
        expect(served.status).toBe(200);
        expect(served.headers.get('content-type')).toBe('image/webp');
        expect(served.headers.get('x-content-type-options')).toBe('nosniff');
        expect(served.headers.get('content-security-policy')).toContain("default-src 'none'");
        const info = await sharp(served.body).metadata();
        expect([info.format, info.width, info.height]).toEqual(['webp', 747, 560]);
      });
    });
  }

  describe('rendering, events, access and bad input', () => {
    const env = useUploadServer('local');
    let secret = { id: 0, name: '' };
    beforeAll(async () => {
      secret = await createChannel(env, 'hamlet', { invite_only: true }, ['othello']);
    });

    it('announces the thumbnail formats in /register', async () => {
      const state = (await registerQueue(env.client('hamlet'), { fetch_event_types: ['realm'] })) as Record<string, unknown>;
      expect(state['server_thumbnail_formats']).toEqual([
        { name: '840x560-anim.webp', max_width: 840, max_height: 560, format: 'webp', animated: true },
        { name: '840x560.webp', max_width: 840, max_height: 560, format: 'webp', animated: false },
      ]);
    });

    it('renders a placeholder while the thumbnail is pending, then the thumbnail, telling only those who may see the message', async () => {
      const upload = await uploadFile(env, 'hamlet', 'chart.png', await pngImage(400, 300), 'image/png');
      await thumbnailStored(env, upload.pathId);
      const row = (await imageRow(env, upload.pathId))!;
      // Made already: a message sent now shows the thumbnail.
      const later = await send(env, 'hamlet', secret.name, `[chart.png](${upload.url})`);
      expect(await renderedOf(env, 'hamlet', later)).toBe(
        `<p><a href="${upload.url}">chart.png</a></p>\n<div class="message_inline_image"><a href="${upload.url}" title="chart.png">` +
          `<img data-original-content-type="image/png" data-original-dimensions="400x300" src="/user_uploads/thumbnail/${upload.pathId}/840x560.webp"></a></div>`,
      );

      // Pending (as if the job had not run yet): the message is sent with the placeholder, and queues
      // the image's job again, which re-renders it and tells its readers (not cordelia).
      await env.running.deps.db.$executeRaw`UPDATE image_attachment SET thumbnail_metadata = '[]' WHERE attachment_id = ${row.attachment_id}::int`;
      const mark = await markEvents(env);
      const id = await send(env, 'hamlet', secret.name, `look [chart.png](${upload.url})`);
      const done = `<p>look <a href="${upload.url}">chart.png</a></p>\n<div class="message_inline_image"><a href="${upload.url}" title="chart.png">` +
        `<img data-original-content-type="image/png" data-original-dimensions="400x300" src="/user_uploads/thumbnail/${upload.pathId}/840x560.webp"></a></div>`;
      await waitFor(async () => (await renderedOf(env, 'othello', id)) === done, { what: 'the message re-rendered' });
      const events = await eventsSince(env, mark);
      const sent = events.find((e) => e.payload.type === 'message' && e.payload.message.id === id);
      expect(sent?.payload.message.content).toBe(
        `<p>look <a href="${upload.url}">chart.png</a></p>\n<div class="message_inline_image"><a href="${upload.url}" title="chart.png">` +
          `<img class="image-loading-placeholder" data-original-content-type="image/png" data-original-dimensions="400x300" src="/static/images/loading/loader-black.svg"></a></div>`,
      );
      const updates = events.filter((e) => e.payload.type === 'update_message');
      expect(updates.map((e) => e.userIds)).toEqual([[env.users.hamlet.id, env.users.othello.id].sort((a, b) => a - b)]);
      expect(updates[0]!.payload).toMatchObject({ user_id: null, message_id: id, message_ids: [id], rendering_only: true, rendered_content: done });
      // A second run finds nothing to do.
      expect(await doMakeThumbnails(env.running.deps, row.attachment_id)).toEqual({ made: 0, failed: false });
    });

    it('serves a thumbnail only to those who may read the image: not a non-subscriber of its private channel', async () => {
      const upload = await uploadFile(env, 'hamlet', 'plan.png', await pngImage(64, 48), 'image/png');
      await send(env, 'hamlet', secret.name, `[plan.png](${upload.url})`);
      const url = `/user_uploads/thumbnail/${upload.pathId}/840x560.webp`;
      expect((await download(env.url, url, { auth: auth(env, 'othello') })).status).toBe(200);
      expect((await download(env.url, url, { auth: auth(env, 'cordelia') })).status).toBe(403);
      expect((await download(env.url, url)).status).toBe(401);
      expect((await download(env.url, `/user_uploads/thumbnail/${upload.pathId}/nonsense`, { auth: auth(env, 'othello') })).status).toBe(404);
    });

    it('gives no thumbnail to what is not an image, an image of the wrong claimed type, a decompression bomb or a corrupt image; the message keeps a plain link', async () => {
      const png = await pngImage(300, 200);
      const uploads = [
        await uploadFile(env, 'hamlet', 'notes.png', 'not an image at all', 'image/png'),
        await uploadFile(env, 'hamlet', 'raw.png', png, 'application/octet-stream'),
        await uploadFile(env, 'hamlet', 'bomb.png', pngBomb(20_000, 20_000), 'image/png'),
      ];
      for (const u of uploads) expect(await imageRow(env, u.pathId)).toBeNull();
      // A header that decodes over data that does not: recorded at upload, dropped by the job.
      const corrupt = await uploadFile(env, 'hamlet', 'broken.png', png.subarray(0, Math.floor(png.length / 2)), 'image/png');
      const id = await send(env, 'hamlet', secret.name, [...uploads, corrupt].map((u) => `[${u.pathId.split('/').pop()}](${u.url})`).join('\n'));
      await waitFor(async () => (await imageRow(env, corrupt.pathId)) === null, { what: 'the corrupt image dropped' });
      const rendered = await waitFor(async () => {
        const html = await renderedOf(env, 'hamlet', id);
        return html.includes('message_inline_image') ? null : html;
      });
      expect(rendered).toContain(`<a href="${corrupt.url}">broken.png</a>`);
      const thumb = await download(env.url, `/user_uploads/thumbnail/${corrupt.pathId}/840x560.webp`, { auth: auth(env, 'hamlet') });
      expect(thumb.status).toBe(404);
    });
  });
});
