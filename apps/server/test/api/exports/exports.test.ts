// Organization exports (issue 27, part 1): POST/GET /export/realm, DELETE /export/realm/{export_id},
// GET /export/realm/consents, the `realm_export` and `realm_export_consent` events, the background
// job and the tarball it streams into storage (read back through its download URL): Zulip's layout,
// and what a public export and a full export with consent leave out.
import { createGunzip } from 'node:zlib';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { extract } from 'tar-stream';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers, adminIds } from '../../helpers/people.ts';
import { createChannel } from '../../helpers/channels.ts';
import { uploadFile } from '../../helpers/uploads.ts';
import { waitFor } from '../../helpers/wait.ts';
import { runExport } from '../../../src/actions/exports.ts';

const env = useTestServer();
const db = () => env.running.deps.db;

interface ExportInfo {
  id: number;
  export_url: string | null;
  pending: boolean;
  failed_timestamp: number | null;
  deleted_timestamp: number | null;
  export_type: number;
  acting_user_id: number;
}

const list = async (as: Person = 'iago'): Promise<ExportInfo[]> => {
  const { data, error } = await env.client(as).GET('/export/realm');
  if (!data) throw new Error(`get-realm-exports: ${JSON.stringify(error)}`);
  return data.exports;
};
const request = (as: Person, exportType?: number) => env.client(as).POST('/export/realm', { body: exportType === undefined ? {} : { export_type: exportType as 1 | 2 } });

/** Requests an export and waits for its job to finish it: the finished export. */
async function exportOk(as: Person, exportType: 1 | 2): Promise<ExportInfo> {
  const { data, error } = await request(as, exportType);
  if (!data) throw new Error(`export-realm: ${JSON.stringify(error)}`);
  return waitFor(async () => (await list()).find((e) => e.id === data.id && !e.pending), { what: 'the export job', timeoutMs: 60_000 });
}

/** An export URL (on the organization's public URL) fetched from the test server, without credentials. */
const fetchExport = (url: string) => fetch(url.replace(/^https?:\/\/[^/]+/, env.url));

/** The tarball behind an export URL: its files by path. */
async function downloadTarball(url: string): Promise<Map<string, Buffer>> {
  const res = await fetchExport(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/gzip');
  const files = new Map<string, Buffer>();
  const unpack = extract();
  unpack.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => {
      chunks.push(c as Buffer);
    });
    stream.on('end', () => {
      files.set(header.name, Buffer.concat(chunks));
      next();
    });
  });
  await pipeline(Readable.from(Buffer.from(await res.arrayBuffer())), createGunzip(), unpack);
  return files;
}

interface Archive {
  dir: string;
  names: string[];
  json(name: string): any;
  text(name: string): string;
  messages: Array<{ id: number; content: string; recipient: number }>;
  userMessages: Array<{ user_profile: number; message: number; flags_mask: number }>;
}

function readArchive(files: Map<string, Buffer>): Archive {
  const names = [...files.keys()].sort();
  const dir = names[0]!.split('/')[0]!;
  const text = (name: string) => files.get(`${dir}/${name}`)!.toString('utf8');
  const json = (name: string) => JSON.parse(text(name));
  const messageFiles = names.filter((n) => /\/messages-\d{6}\.json$/.test(n)).map((n) => n.slice(dir.length + 1));
  return {
    dir,
    names: names.map((n) => n.slice(dir.length + 1)),
    json,
    text,
    messages: messageFiles.flatMap((f) => json(f).zerver_message),
    userMessages: messageFiles.flatMap((f) => json(f).zerver_usermessage),
  };
}

const s = { secretChannel: 0, publicChannel: 0, dmConsented: 0, dmOther: 0, pathId: '' };
const send = async (as: Person, body: Record<string, unknown>): Promise<number> => {
  const { data, error } = await env.client(as).POST('/messages', { body: body as never });
  if (!data) throw new Error(`setup: ${JSON.stringify(error)}`);
  return data.id;
};

beforeAll(async () => {
  // Hamlet and the owner consent; Othello and Cordelia do not. Hamlet is in a private channel.
  for (const p of ['hamlet', 'desdemona'] as const) {
    const { error } = await env.client(p).PATCH('/settings', { body: { allow_private_data_export: true } });
    if (error) throw new Error(`setup: ${JSON.stringify(error)}`);
  }
  // Cordelia hides her address from everyone (administrators included): a public export leaves it out.
  await env.client('cordelia').PATCH('/settings', { body: { email_address_visibility: 4 } });
  await env.client('hamlet').POST('/users/me/alert_words', { body: { alert_words: ['hamlet-alert-word'] } });
  await env.client('othello').POST('/users/me/alert_words', { body: { alert_words: ['othello-alert-word'] } });
  const secret = await createChannel(env, 'iago', { name: 'secret', invite_only: true }, ['hamlet']);
  const open = await createChannel(env, 'iago', { name: 'open' }, ['hamlet', 'othello']);
  s.secretChannel = await send('iago', { type: 'stream', to: secret.name, topic: 't', content: 'PRIVATE-CHANNEL-TEXT' });
  const file = await uploadFile(env, 'iago', 'notes.txt', 'the attached notes');
  s.pathId = file.pathId;
  s.publicChannel = await send('iago', { type: 'stream', to: open.name, topic: 't', content: `PUBLIC-CHANNEL-TEXT [notes](${file.url})` });
  const starred = await env.client('hamlet').POST('/messages/flags', { body: { messages: [s.publicChannel], op: 'add', flag: 'starred' } });
  if (starred.error) throw new Error(`setup: ${JSON.stringify(starred.error)}`);
  s.dmConsented = await send('hamlet', { type: 'direct', to: JSON.stringify([env.users.othello.id]), content: 'DM-OF-A-CONSENTING-MEMBER' });
  s.dmOther = await send('othello', { type: 'direct', to: JSON.stringify([env.users.cordelia.id]), content: 'DM-OF-OTHERS' });
});

let publicExport: ExportInfo;
let publicArchive: Archive;

describe('POST /export/realm', () => {
  it('refuses members and moderators, and export types Zulip does not have', async () => {
    for (const p of ['hamlet', 'shiva', 'polonius'] as const) expectJsonError(await request(p), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    const bad = await env.raw('/export/realm', { method: 'POST', as: 'iago', body: new URLSearchParams({ export_type: '3' }) });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toMatch(/export_type/);
    expect(await db().realmExport.count({ where: { realmId: env.realmId } })).toBe(0);
  });

  it('makes a public export in the background: the administrators are told as it is requested and when it is done', async () => {
    const mark = await markEvents(env);
    publicExport = await exportOk('iago', 1);
    expect(publicExport).toMatchObject({ export_type: 1, acting_user_id: env.users.iago.id, pending: false, failed_timestamp: null, deleted_timestamp: null });
    expect(publicExport.export_url).toMatch(new RegExp(`^${(await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).url}/user_avatars/exports/${env.realmId}/[A-Za-z0-9_-]{24}/zulip-export-[a-z0-9]{8}\\.tar\\.gz$`));
    const events = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'realm_export');
    expect(events.length).toBe(2);
    const admins = adminIds(await activeUsers(env, env.realmId)).sort((a, b) => a - b);
    for (const e of events) expect(e.userIds).toEqual(admins);
    expect(events[0]!.payload.exports.at(-1)).toMatchObject({ id: publicExport.id, pending: true, export_url: null });
    expect(events[1]!.payload.exports.at(-1)).toMatchObject({ id: publicExport.id, pending: false, export_url: publicExport.export_url });
  });

  it("writes Zulip's layout: realm.json, message files with flags as a mask, attachments, records; public data only", async () => {
    publicArchive = readArchive(await downloadTarball(publicExport.export_url!));
    const a = publicArchive;
    expect(a.dir).toMatch(/^zulip-export-[a-z0-9]{8}$/);
    for (const f of ['realm.json', 'messages-000001.json', 'attachment.json', 'analytics.json', 'uploads/records.json', 'avatars/records.json', 'emoji/records.json', 'realm_icons/records.json', 'stats.json', 'migration_status.json', `uploads/${s.pathId}`]) {
      expect(a.names).toContain(f);
    }
    const realm = a.json('realm.json');
    // realm.json is written a row at a time: the bytes are JSON.stringify's of the whole object.
    expect(a.text('realm.json')).toBe(JSON.stringify(realm));
    expect(realm.zerver_realm).toHaveLength(1);
    expect(realm.zerver_realm[0].id).toBe(env.realmId);
    expect(typeof realm.zerver_realm[0].date_created).toBe('number');
    const users = realm.zerver_userprofile as Array<{ id: number; delivery_email: string; api_key?: string; password?: string }>;
    expect(users.map((u) => u.id)).toContain(env.users.hamlet.id);
    expect(users.every((u) => u.api_key === undefined && u.password === undefined)).toBe(true);
    expect(users.find((u) => u.id === env.users.cordelia.id)!.delivery_email).not.toBe(env.users.cordelia.email);
    expect(users.find((u) => u.id === env.users.hamlet.id)!.delivery_email).toBe(env.users.hamlet.email);
    const streams = realm.zerver_stream as Array<{ id: number; invite_only: boolean; recipient: number }>;
    const secret = (await db().message.findUniqueOrThrow({ where: { id: s.secretChannel } })).channelId!;
    expect(streams.find((c) => c.id === secret)).toMatchObject({ invite_only: true });
    // Every channel's recipient exists, and every subscription points at a recipient.
    const recipients = new Set((realm.zerver_recipient as Array<{ id: number }>).map((r) => r.id));
    for (const c of streams) expect(recipients.has(c.recipient)).toBe(true);
    for (const sub of realm.zerver_subscription as Array<{ recipient: number }>) expect(recipients.has(sub.recipient)).toBe(true);
    expect(realm.zerver_namedusergroup.map((g: { name: string }) => g.name)).toContain('role:administrators');

    // Public channels' messages only; the attached file is there with its message.
    const ids = a.messages.map((m) => m.id);
    expect(ids).toContain(s.publicChannel);
    expect(ids).not.toContain(s.secretChannel);
    expect(ids).not.toContain(s.dmConsented);
    expect(ids).not.toContain(s.dmOther);
    const text = a.names.filter((n) => n.endsWith('.json')).map((n) => JSON.stringify(a.json(n))).join('\n');
    for (const hidden of ['PRIVATE-CHANNEL-TEXT', 'DM-OF-A-CONSENTING-MEMBER', 'DM-OF-OTHERS', 'hamlet-alert-word', 'othello-alert-word']) expect(text).not.toContain(hidden);
    // Per-user rows carry Parley's flags as Zulip's bit mask (written rows as stored, deferred ones 0).
    const stored = await db().userMessage.findMany({ where: { messageId: s.publicChannel } });
    const exported = new Map(a.userMessages.filter((r) => r.message === s.publicChannel).map((r) => [r.user_profile, r.flags_mask]));
    expect(exported.size).toBeGreaterThan(0);
    for (const row of stored) expect(exported.get(row.userId)).toBe(Number(row.flags));
    expect((exported.get(env.users.hamlet.id) ?? 0) & 2).toBe(2); // Hamlet starred it
    expect(a.json('attachment.json').zerver_attachment).toEqual([expect.objectContaining({ path_id: s.pathId, messages: [s.publicChannel] })]);
    expect(a.json('uploads/records.json')).toEqual([expect.objectContaining({ path: s.pathId, user_profile_id: env.users.iago.id })]);
    expect(a.json('stats.json').realm.zerver_userprofile).toBe(users.length);
    expect(a.json('stats.json').realm.zerver_subscription).toBe(realm.zerver_subscription.length);
    // Zulip's import requires migration_status.json: Zulip's major version (11), and Parley's own
    // migrations under an app of its own, which a Zulip server only warns about.
    const status = a.json('migration_status.json') as { zulip_version: string; migrations_by_app: Record<string, string[]> };
    expect(Object.keys(status).sort()).toEqual(['migrations_by_app', 'zulip_version']);
    expect(status.zulip_version.split('.')[0]).toBe('11');
    expect(Object.keys(status.migrations_by_app)).toEqual(['parley']);
    expect(status.migrations_by_app.parley!.length).toBeGreaterThan(0);
    for (const line of status.migrations_by_app.parley!) expect(line).toMatch(/^\[X\] \d{14}_\w+$/);
  });

  it('makes a full export with consent: the consenting members\' direct messages, private channels and private data, nobody else\'s', async () => {
    const full = await exportOk('desdemona', 2);
    const a = readArchive(await downloadTarball(full.export_url!));
    const ids = a.messages.map((m) => m.id);
    expect(ids).toEqual(expect.arrayContaining([s.publicChannel, s.secretChannel, s.dmConsented]));
    expect(ids).not.toContain(s.dmOther);
    const realm = a.json('realm.json');
    const words = (realm.zerver_alertword as Array<{ word: string; user_profile: number }>).map((w) => w.word);
    expect(words).toContain('hamlet-alert-word');
    expect(words).not.toContain('othello-alert-word');
    // Per-user message rows only of the members who consented (Zulip's fetch_usermessages).
    const consenting = new Set([env.users.hamlet.id, env.users.desdemona.id]);
    expect(a.userMessages.length).toBeGreaterThan(0);
    expect(a.userMessages.every((r) => consenting.has(r.user_profile))).toBe(true);
    // The 1:1 direct message's recipient is Othello's personal recipient.
    const dm = a.messages.find((m) => m.id === s.dmConsented)!;
    expect(realm.zerver_recipient).toContainEqual({ id: dm.recipient, type: 1, type_id: env.users.othello.id });
  });

  it('marks an export failed (failed_timestamp, and the event) when its job finds it started already: the process making it died', async () => {
    const row = await db().realmExport.create({ data: { realmId: env.realmId, actingUserId: env.users.iago.id, type: 1, status: 2, dateStarted: new Date() } });
    const mark = await markEvents(env);
    expect(await runExport(env.running.deps, row.id)).toBe('failed');
    const failed = (await list()).find((e) => e.id === row.id)!;
    expect(failed).toMatchObject({ pending: false, export_url: null });
    expect(failed.failed_timestamp).not.toBeNull();
    const events = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'realm_export');
    expect(events.map((e) => e.payload.exports.find((x: ExportInfo) => x.id === row.id).failed_timestamp)).toEqual([failed.failed_timestamp]);
  });

  it('allows five exports in seven days', async () => {
    const existing = await db().realmExport.count({ where: { realmId: env.realmId } });
    await db().realmExport.createMany({ data: Array.from({ length: 5 - existing }, () => ({ realmId: env.realmId, actingUserId: env.users.iago.id, type: 1, status: 4, dateFailed: new Date() })) });
    expectJsonError(await request('iago', 1), 400, 'Exceeded rate limit.', 'BAD_REQUEST');
    await db().realmExport.updateMany({ where: { realmId: env.realmId }, data: { dateRequested: new Date(Date.now() - 8 * 24 * 3600 * 1000) } });
  });
});

describe('GET /export/realm', () => {
  it('lists the exports, oldest first, to administrators only', async () => {
    const exports = await list('desdemona');
    expect(exports.map((e) => e.id)).toEqual([...exports.map((e) => e.id)].sort((x, y) => x - y));
    expect(exports.find((e) => e.id === publicExport.id)).toEqual({ ...publicExport, export_time: expect.any(Number) });
    expectJsonError(await env.client('hamlet').GET('/export/realm'), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
  });

  it('serves the tarball only at its exact URL: a changed secret or another organization is 404', async () => {
    const url = publicExport.export_url!;
    const token = /\/exports\/\d+\/([^/]+)\//.exec(url)![1]!;
    const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect((await fetchExport(url.replace(token, flipped))).status).toBe(404);
    expect((await fetchExport(url.replace(`/exports/${env.realmId}/`, `/exports/${env.realmId + 1000}/`))).status).toBe(404);
    expect((await fetchExport(url.replace(/zulip-export-[a-z0-9]{8}/, 'zulip-export-aaaaaaaa'))).status).toBe(404);
  });

  it('stops serving the tarball 7 days after the export succeeded', async () => {
    const row = await db().realmExport.findUniqueOrThrow({ where: { id: publicExport.id } });
    const day = 24 * 3600 * 1000;
    try {
      await db().realmExport.update({ where: { id: row.id }, data: { dateSucceeded: new Date(Date.now() - 7 * day + 60_000) } });
      const fresh = await fetchExport(publicExport.export_url!);
      expect(fresh.status).toBe(200);
      await fresh.arrayBuffer();
      await db().realmExport.update({ where: { id: row.id }, data: { dateSucceeded: new Date(Date.now() - 7 * day - 60_000) } });
      expect((await fetchExport(publicExport.export_url!)).status).toBe(404);
    } finally {
      await db().realmExport.update({ where: { id: row.id }, data: { dateSucceeded: row.dateSucceeded } });
    }
  });
});

describe('DELETE /export/realm/{export_id}', () => {
  const del = (as: Person, id: number) => env.client(as).DELETE('/export/realm/{export_id}', { params: { path: { export_id: id } } });

  it("deletes the tarball (its URL answers 404) and keeps the export listed as deleted; Zulip's errors otherwise", async () => {
    expectJsonError(await del('hamlet', publicExport.id), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    const mark = await markEvents(env);
    const { error } = await del('iago', publicExport.id);
    expect(error).toBeUndefined();
    expect((await fetchExport(publicExport.export_url!)).status).toBe(404);
    const after = (await list()).find((e) => e.id === publicExport.id)!;
    expect(after.deleted_timestamp).not.toBeNull();
    expect(after.export_url).toBeNull();
    expect((await eventsSince(env, mark)).map((e) => e.payload.type)).toEqual(['realm_export']);
    expectJsonError(await del('iago', publicExport.id), 400, 'Export already deleted', 'BAD_REQUEST');
    expectJsonError(await del('iago', 0), 400, 'Invalid data export ID', 'BAD_REQUEST');
    const pending = await db().realmExport.create({ data: { realmId: env.realmId, actingUserId: env.users.iago.id, type: 1, status: 1, dateRequested: new Date(0) } });
    expectJsonError(await del('iago', pending.id), 400, 'Export still in progress', 'BAD_REQUEST');
    const failed = await db().realmExport.create({ data: { realmId: env.realmId, actingUserId: env.users.iago.id, type: 1, status: 4, dateRequested: new Date(0), dateFailed: new Date() } });
    expectJsonError(await del('iago', failed.id), 400, 'Export failed, nothing to delete', 'BAD_REQUEST');
  });
});

describe('GET /export/realm/consents', () => {
  it("lists every active human user's consent to administrators; a change of consent tells them", async () => {
    const { data } = await env.client('iago').GET('/export/realm/consents');
    const byId = new Map(data!.export_consents.map((c) => [c.user_id, c]));
    expect(byId.get(env.users.hamlet.id)).toEqual({ user_id: env.users.hamlet.id, consented: true, email_address_visibility: 1 });
    expect(byId.get(env.users.othello.id)?.consented).toBe(false);
    const bots = await db().user.findMany({ where: { realmId: env.realmId, isBot: true }, select: { id: true } });
    for (const b of bots) expect(byId.has(b.id)).toBe(false);
    expectJsonError(await env.client('hamlet').GET('/export/realm/consents'), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');

    const mark = await markEvents(env);
    await env.client('othello').PATCH('/settings', { body: { allow_private_data_export: true } });
    const consent = (await eventsSince(env, mark)).filter((e) => e.payload.type === 'realm_export_consent');
    expect(consent.map((e) => e.payload)).toEqual([{ type: 'realm_export_consent', user_id: env.users.othello.id, consented: true }]);
    expect(consent[0]!.userIds).toEqual(adminIds(await activeUsers(env, env.realmId)).sort((a, b) => a - b));
  });
});
