// The thumbnails of an uploaded image go with it, on local storage (checked by listing the storage):
// when its owner deletes it (DELETE /attachments/{id}), when the clean-up job deletes it because the
// message linking it was deleted, and when a thumbnail is left without its file (the clean-up's sweep).
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { useChannel } from '../../helpers/channels.ts';
import { pngImage } from '../../helpers/images.ts';
import { uploadFile, useUploadServer } from '../../helpers/uploads.ts';
import { waitFor } from '../../helpers/wait.ts';
import { doDeleteOldUnclaimedAttachments } from '../../../src/actions/attachments.ts';

const env = useUploadServer('local');
const channel = useChannel(env, 'iago', {}, ['hamlet']);
const WEEK_MS = 7 * 24 * 3600 * 1000;

/** Uploads an image as hamlet and waits for its thumbnail: its path id and attachment id. */
async function thumbnailedImage(name: string): Promise<{ pathId: string; url: string; id: number }> {
  const upload = await uploadFile(env, 'hamlet', name, await pngImage(900, 600), 'image/png');
  await waitFor(async () => (await env.running.deps.storage.head(`thumbnails/${upload.pathId}/840x560.webp`)) !== null, { what: 'the thumbnail job' });
  const row = await env.running.deps.db.attachment.findUniqueOrThrow({ where: { pathId: upload.pathId } });
  return { ...upload, id: row.id };
}

/** Every stored file and thumbnail (the storage listed, not the database). */
async function fileAndThumbnailKeys(): Promise<string[]> {
  const keys: string[] = [];
  for (const prefix of ['files/', 'thumbnails/']) for await (const o of env.running.deps.storage.list(prefix)) keys.push(o.key);
  return keys.sort();
}

describe('DELETE /attachments/{attachment_id}: thumbnails', () => {
  it('deletes the thumbnails with the file', async () => {
    const image = await thumbnailedImage('deleted.png');
    expect(await fileAndThumbnailKeys()).toEqual([`files/${image.pathId}`, `thumbnails/${image.pathId}/840x560.webp`]);
    const res = await env.client('hamlet').DELETE('/attachments/{attachment_id}', { params: { path: { attachment_id: image.id } } });
    expect(res.response.status).toBe(200);
    expect(await fileAndThumbnailKeys()).toEqual([]);
  });
});

describe('The clean-up of unclaimed files: thumbnails', () => {
  it('deletes the thumbnails of a file whose message was deleted', async () => {
    const image = await thumbnailedImage('linked.png');
    const { data } = await env.client('hamlet').POST('/messages', { body: { type: 'stream', to: channel.name, topic: 'pictures', content: `[linked](${image.url})` } });
    expect((await env.client('iago').DELETE('/messages/{message_id}', { params: { path: { message_id: data!.id } } })).response.status).toBe(200);
    await env.running.deps.db.attachment.update({ where: { pathId: image.pathId }, data: { createTime: new Date(Date.now() - 6 * WEEK_MS) } });
    const result = await doDeleteOldUnclaimedAttachments(env.running.deps);
    expect(result.deletedAttachments).toBe(1);
    expect(await fileAndThumbnailKeys()).toEqual([]);
  });

  it('sweeps a thumbnail whose file has no record', async () => {
    const key = `thumbnails/${env.realmId}/ab/strayStrayStrayStrayStr/gone.png/840x560.webp`;
    await env.running.deps.storage.put(key, Readable.from([Buffer.from('webp')]), { contentType: 'image/webp' });
    const kept = await thumbnailedImage('kept.png');
    const result = await doDeleteOldUnclaimedAttachments(env.running.deps, { strayBefore: new Date(Date.now() + 60_000) });
    expect(result.strayObjects).toBe(1);
    expect(await fileAndThumbnailKeys()).toEqual([`files/${kept.pathId}`, `thumbnails/${kept.pathId}/840x560.webp`]);
  });
});
