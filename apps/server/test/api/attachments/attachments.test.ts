// A user's uploaded files, on both storage backends: GET /attachments (with the messages linking to
// each file and the organization's used space), the links a message makes at sending and editing
// (Zulip's claims: `attachment` update events, `detached_uploads`), DELETE /attachments/{id}, and the
// periodic clean-up of files no message links to.
import { utimes } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Person } from '../../helpers/fixtures.ts';
import { expectJsonError, type TestServer } from '../../helpers/test-server.ts';
import { basicAuth } from '../../helpers/auth.ts';
import { createChannel, useChannel } from '../../helpers/channels.ts';
import { eventPayloadsSince, eventsSince, markEvents } from '../../helpers/events.ts';
import { BACKENDS, download, storedKeys, uploadFile, useUploadServer } from '../../helpers/uploads.ts';
import { doDeleteOldUnclaimedAttachments } from '../../../src/actions/attachments.ts';

const auth = (env: TestServer, p: Person) => basicAuth(env.users[p].email, env.users[p].apiKey);
const WEEK_MS = 7 * 24 * 3600 * 1000;

async function send(env: TestServer, as: Person, body: { type: 'stream'; to: string; topic: string; content: string } | { type: 'direct'; to: string; content: string }): Promise<number> {
  const { data, error } = await env.client(as).POST('/messages', { body });
  if (!data) throw new Error(`setup: send failed: ${JSON.stringify(error)}`);
  return data.id;
}

async function attachmentsOf(env: TestServer, p: Person) {
  const res = await env.client(p).GET('/attachments');
  if (!res.data) throw new Error(`GET /attachments failed: ${JSON.stringify(res.error)}`);
  return res.data;
}

// One server per backend for the whole file.
const servers = BACKENDS.map((backend) => {
  const env = useUploadServer(backend);
  return { backend, env, channel: useChannel(env, 'iago', {}, ['hamlet', 'othello']) };
});

describe('GET /attachments', () => {
  for (const { backend, env, channel } of servers) describe(`on ${backend} storage`, () => {

    it("lists the user's own uploads, each with the messages linking to it, and the organization's used space", async () => {
      const { pathId, url } = await uploadFile(env, 'cordelia', 'list.txt', 'listed');
      const mark = await markEvents(env);
      const id = await send(env, 'cordelia', { type: 'stream', to: channel.name, topic: 'files', content: `[list.txt](${url})` });
      const date = (await env.running.deps.db.message.findUniqueOrThrow({ where: { id } })).dateSent;
      const mine = await attachmentsOf(env, 'cordelia');
      expect(mine.attachments).toEqual([
        { id: expect.any(Number), name: 'list.txt', path_id: pathId, size: 6, create_time: expect.any(Number), messages: [{ id, date_sent: Math.floor(date.getTime() / 1000) * 1000 }] },
      ]);
      const total = Number((await env.running.deps.db.attachment.aggregate({ where: { realmId: env.realmId }, _sum: { size: true } }))._sum.size);
      expect(mine.upload_space_used).toBe(total);
      // Someone else's list does not show it.
      expect((await attachmentsOf(env, 'othello')).attachments.map((a) => a.path_id)).not.toContain(pathId);
      // The uploader's clients hear that a message now links to it.
      const events = await eventsSince(env, mark);
      const updates = events.filter((e) => e.payload.type === 'attachment');
      expect(updates).toEqual([{ userIds: [env.users.cordelia.id], payload: { type: 'attachment', op: 'update', attachment: mine.attachments[0], upload_space_used: total } }]);
      expectJsonError(await env.anonymous().GET('/attachments'), 401, 'Missing authorization header for basic auth');
    });

    it('links a forwarded file of someone else that the sender may read, and tells its uploader only', async () => {
      const { url, pathId } = await uploadFile(env, 'hamlet', 'forward.txt', 'pass it on');
      await send(env, 'hamlet', { type: 'direct', to: JSON.stringify([env.users.othello.id]), content: `[forward.txt](${url})` });
      const mark = await markEvents(env);
      // Othello may read it (he received it) and shares it on; the channel's readers may now read it.
      await send(env, 'othello', { type: 'stream', to: channel.name, topic: 'fwd', content: `[look](${url})` });
      expect((await download(env.url, url, { auth: auth(env, 'iago') })).status).toBe(200);
      const updates = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'attachment');
      expect(updates.map((e) => [e.userIds, e.payload.attachment.path_id, e.payload.attachment.messages.length])).toEqual([[[env.users.hamlet.id], pathId, 2]]);
    });

    it('shows its uploader only the linking messages they may read (not a forward into a channel they are not in)', async () => {
      const { url, pathId } = await uploadFile(env, 'hamlet', 'hidden-forward.txt', 'where does it go');
      const shared = await send(env, 'hamlet', { type: 'direct', to: JSON.stringify([env.users.othello.id]), content: `[f](${url})` });
      const secret = await createChannel(env, 'iago', { invite_only: true }, ['iago', 'othello']);
      const mark = await markEvents(env);
      const forwarded = await send(env, 'othello', { type: 'stream', to: secret.name, topic: 'fwd', content: `[f](${url})` });
      // The file is linked from both (iago may read it now), but hamlet is told only of his own message.
      expect((await download(env.url, url, { auth: auth(env, 'iago') })).status).toBe(200);
      const listed = (await attachmentsOf(env, 'hamlet')).attachments.find((a) => a.path_id === pathId)!;
      expect(listed.messages.map((m) => m.id)).toEqual([shared]);
      const updates = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'attachment');
      expect(updates.map((e) => [e.userIds, e.payload.attachment.messages.map((m: { id: number }) => m.id)])).toEqual([[[env.users.hamlet.id], [shared]]]);
      expect(forwarded).toBeGreaterThan(shared);
    });

    it('follows edits: a new link is claimed, a dropped one detached and answered as detached_uploads', async () => {
      const first = await uploadFile(env, 'hamlet', 'first.txt', 'one');
      const second = await uploadFile(env, 'hamlet', 'second.txt', 'two');
      const id = await send(env, 'hamlet', { type: 'stream', to: channel.name, topic: 'edits', content: `[first](${first.url})` });
      expect((await download(env.url, first.url, { auth: auth(env, 'othello') })).status).toBe(200);
      const mark = await markEvents(env);
      const edit = await env.client('hamlet').PATCH('/messages/{message_id}', { params: { path: { message_id: id } }, body: { content: `[second](${second.url})` } });
      expect(edit.data?.detached_uploads).toEqual([{ id: expect.any(Number), name: 'first.txt', path_id: first.pathId, size: 3, create_time: expect.any(Number), messages: [] }]);
      expect((await download(env.url, first.url, { auth: auth(env, 'othello') })).status).toBe(403);
      expect((await download(env.url, second.url, { auth: auth(env, 'othello') })).status).toBe(200);
      const updates = (await eventPayloadsSince(env, mark)).filter((e) => e.type === 'attachment');
      expect(updates.map((e) => [e.op, e.attachment.name])).toEqual([['update', 'second.txt']]);
      // An edit that keeps the links detaches nothing.
      const same = await env.client('hamlet').PATCH('/messages/{message_id}', { params: { path: { message_id: id } }, body: { content: `again: [second](${second.url})` } });
      expect(same.data?.detached_uploads).toEqual([]);
    });
  });

});

describe('DELETE /attachments/{attachment_id}', () => {
  for (const { backend, env } of servers) describe(`on ${backend} storage`, () => {

    it('deletes one of the user\'s files: its record, its bytes, and tells their clients', async () => {
      const { url, pathId } = await uploadFile(env, 'hamlet', 'doomed.txt', 'bye');
      const attachment = (await attachmentsOf(env, 'hamlet')).attachments.find((a) => a.path_id === pathId)!;
      const mark = await markEvents(env);
      const res = await env.client('hamlet').DELETE('/attachments/{attachment_id}', { params: { path: { attachment_id: attachment.id } } });
      expect(res.response.status).toBe(200);
      expect(await storedKeys(env)).not.toContain(`files/${pathId}`);
      expect((await download(env.url, url, { auth: auth(env, 'hamlet') })).status).toBe(404);
      const events = await eventsSince(env, mark);
      expect(events).toEqual([{ userIds: [env.users.hamlet.id], payload: { type: 'attachment', op: 'remove', attachment: { id: attachment.id }, upload_space_used: (await attachmentsOf(env, 'hamlet')).upload_space_used } }]);
    });

    it("refuses another user's attachment and one that does not exist, as Zulip does", async () => {
      const { pathId } = await uploadFile(env, 'hamlet', 'kept.txt', 'stay');
      const attachment = (await attachmentsOf(env, 'hamlet')).attachments.find((a) => a.path_id === pathId)!;
      expectJsonError(await env.client('iago').DELETE('/attachments/{attachment_id}', { params: { path: { attachment_id: attachment.id } } }), 400, 'Invalid attachment');
      expectJsonError(await env.client('hamlet').DELETE('/attachments/{attachment_id}', { params: { path: { attachment_id: 987654 } } }), 400, 'Invalid attachment');
      expect(await storedKeys(env)).toContain(`files/${pathId}`);
      expectJsonError(await env.anonymous().DELETE('/attachments/{attachment_id}', { params: { path: { attachment_id: attachment.id } } }), 401, 'Missing authorization header for basic auth');
    });
  });

});

describe('The clean-up of unclaimed files (the delete-unclaimed-attachments job)', () => {
  for (const { backend, env, channel } of servers) describe(`on ${backend} storage`, () => {

    it('is waiting in the job queue once a server has started', async () => {
      const rows = await env.running.deps.db.$queryRaw<Array<{ n: number }>>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'delete-unclaimed-attachments' AND state IN ('created', 'retry', 'active')`;
      expect(rows[0]!.n).toBe(1);
      // Every process asks for one at start; one stays waiting.
      expect(await env.running.deps.jobs.sendIfNoneWaiting('delete-unclaimed-attachments', {}, { startAfter: new Date(Date.now() + 3_600_000) })).toBe(false);
    });

    it('deletes files no message links to after five weeks, and keeps the others', async () => {
      const db = env.running.deps.db;
      const old = new Date(Date.now() - 6 * WEEK_MS);
      const unclaimed = await uploadFile(env, 'hamlet', 'unclaimed.txt', 'nobody');
      const claimed = await uploadFile(env, 'hamlet', 'claimed.txt', 'linked');
      const orphaned = await uploadFile(env, 'hamlet', 'orphaned.txt', 'its message is gone');
      const scheduled = await uploadFile(env, 'hamlet', 'scheduled.txt', 'for later');
      const recent = await uploadFile(env, 'hamlet', 'recent.txt', 'fresh');
      await send(env, 'hamlet', { type: 'stream', to: channel.name, topic: 'keep', content: `[claimed](${claimed.url})` });
      const doomed = await send(env, 'hamlet', { type: 'stream', to: channel.name, topic: 'gone', content: `[orphaned](${orphaned.url})` });
      expect((await env.client('hamlet').DELETE('/messages/{message_id}', { params: { path: { message_id: doomed } } })).response.status).toBe(200);
      const later = Math.floor(Date.now() / 1000) + 7 * 24 * 3600;
      expect((await env.client('hamlet').POST('/scheduled_messages', { body: { type: 'stream', to: channel.id, topic: 'later', content: `[s](${scheduled.url})`, scheduled_delivery_timestamp: later } })).response.status).toBe(200);
      for (const f of [unclaimed, claimed, orphaned, scheduled]) await db.attachment.update({ where: { pathId: f.pathId }, data: { createTime: old } });
      // A file in storage whose record was never written (a process that stopped in between), long ago.
      await env.running.deps.storage.put(`files/${env.realmId}/ff/strayStrayStrayStrayStr/stray.txt`, Readable.from([Buffer.from('stray')]), { contentType: 'text/plain' });
      if (backend === 'local') {
        const dir = (env.running.deps.config.storage as { dir: string }).dir;
        await utimes(path.join(dir, 'files', String(env.realmId), 'ff', 'strayStrayStrayStrayStr', 'stray.txt'), old, old);
      }

      const result = await doDeleteOldUnclaimedAttachments(env.running.deps, backend === 's3' ? { strayBefore: new Date(Date.now() + 60_000) } : {});
      expect(result.deletedAttachments).toBe(2);
      expect(result.deletedLinks).toBe(1);
      expect(result.strayObjects).toBe(1);
      const keys = await storedKeys(env);
      const left = (await db.attachment.findMany({ where: { ownerId: env.users.hamlet.id } })).map((a) => a.fileName);
      for (const kept of [claimed, scheduled, recent]) expect(keys).toContain(`files/${kept.pathId}`);
      for (const gone of [unclaimed, orphaned]) expect(keys).not.toContain(`files/${gone.pathId}`);
      expect(keys.some((k) => k.endsWith('stray.txt'))).toBe(false);
      expect(left).toEqual(expect.arrayContaining(['claimed.txt', 'scheduled.txt', 'recent.txt']));
      expect(left).not.toContain('unclaimed.txt');
      expect(left).not.toContain('orphaned.txt');
    });
  });
});
