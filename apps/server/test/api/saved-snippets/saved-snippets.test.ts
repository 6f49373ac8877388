// Saved snippets (feature levels 297 and 368): each user's own, for every role and for bots; Zulip's
// text rules (stripped, not blank, 60 and 10000 characters) with nothing stored on a refusal; the
// `saved_snippets` events (add, update, remove) for the owner only; the `saved_snippets` state of
// /register; another user's snippet "does not exist" (404).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createParleyClient, type ParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { registerQueue } from '../../helpers/queues.ts';

const env = useTestServer();

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

/** A snippet through the API as `as`; its id. */
async function create(as: Person | ParleyClient, title: string, content: string): Promise<number> {
  const client = typeof as === 'string' ? env.client(as) : as;
  const { data, error } = await client.POST('/saved_snippets', { body: { title, content } });
  if (!data) throw new Error(`create-saved-snippet failed: ${JSON.stringify(error)}`);
  return data.saved_snippet_id;
}

async function list(as: Person) {
  const { data, error } = await env.client(as).GET('/saved_snippets');
  if (!data) throw new Error(`get-saved-snippets failed: ${JSON.stringify(error)}`);
  return data.saved_snippets;
}

const rawPost = (as: Person, form: Record<string, string>) => env.raw('/saved_snippets', { method: 'POST', as, body: new URLSearchParams(form) });
const rawPatch = (as: Person, id: number, form: Record<string, string>) => env.raw(`/saved_snippets/${id}`, { method: 'PATCH', as, body: new URLSearchParams(form) });
const rawDelete = (as: Person, id: number) => env.raw(`/saved_snippets/${id}`, { method: 'DELETE', as });

const snippetCount = () => db().savedSnippet.count();

/** A bot with its own API key (saved snippets are open to bots too, as in Zulip). */
async function createBot(): Promise<{ id: number; client: ParleyClient }> {
  const email = `snippet-${randomBytes(3).toString('hex')}-bot@parley.test`;
  const bot = await db().user.create({
    data: { realmId: env.realmId, email, deliveryEmail: email, fullName: 'Snippet Bot', isBot: true, botType: 1, botOwnerId: uid('hamlet'), settings: { create: {} } },
  });
  const key = randomBytes(16).toString('hex');
  await db().apiKey.create({ data: { userId: bot.id, lookupHash: env.running.deps.cipher.lookupHash(key), ciphertext: env.running.deps.cipher.encrypt(key) } });
  return { id: bot.id, client: createParleyClient({ site: env.url, email, apiKey: key }) };
}

describe('POST /saved_snippets', () => {
  it.each(['desdemona', 'iago', 'shiva', 'hamlet', 'polonius'] as const)('saves a snippet of %s, told to their own clients only', async (person) => {
    const mark = await markEvents(env);
    const before = Math.floor(Date.now() / 1000);
    const res = await rawPost(person, { title: 'Welcome message', content: '**Welcome** to the organization.' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', saved_snippet_id: expect.any(Number) });
    const id = res.body.saved_snippet_id as number;

    const [stored] = (await list(person)).filter((s) => s.id === id);
    expect(stored).toEqual({ id, title: 'Welcome message', content: '**Welcome** to the organization.', date_created: expect.any(Number) });
    expect(stored!.date_created).toBeGreaterThanOrEqual(before - 1);
    expect(await eventsSince(env, mark)).toEqual([{ userIds: [uid(person)], payload: { type: 'saved_snippets', op: 'add', saved_snippet: stored } }]);
  });

  it('lets bots save snippets too', async () => {
    const bot = await createBot();
    const id = await create(bot.client, 'Bot snippet', 'beep');
    const { data } = await bot.client.GET('/saved_snippets');
    expect(data!.saved_snippets.map((s) => s.id)).toEqual([id]);
  });

  it('strips surrounding whitespace from the title and the content', async () => {
    const id = await create('hamlet', '  \t Spaced title \n', '\n\n  some *text*  \n');
    const stored = (await list('hamlet')).find((s) => s.id === id);
    expect(stored).toMatchObject({ title: 'Spaced title', content: 'some *text*' });
  });

  it('takes a title of 60 characters and content of 10000 (after stripping)', async () => {
    const id = await create('hamlet', `  ${'t'.repeat(60)}  `, `${'c'.repeat(10_000)}   `);
    const stored = (await list('hamlet')).find((s) => s.id === id);
    expect(stored!.title).toHaveLength(60);
    expect(stored!.content).toHaveLength(10_000);
  });

  it('reports unknown parameters in ignored_parameters_unsupported', async () => {
    const res = await rawPost('hamlet', { title: 'Extra', content: 'x', color: 'blue' });
    expect(res.body).toEqual({ result: 'success', msg: '', saved_snippet_id: expect.any(Number), ignored_parameters_unsupported: ['color'] });
  });

  describe('refusals (nothing is stored, no event)', () => {
    it.each([
      [{ content: 'x' }, "Missing 'title' argument", 'REQUEST_VARIABLE_MISSING'],
      [{ title: 'x' }, "Missing 'content' argument", 'REQUEST_VARIABLE_MISSING'],
      [{ title: '', content: 'x' }, 'title cannot be blank', 'BAD_REQUEST'],
      [{ title: ' \n\t ', content: 'x' }, 'title cannot be blank', 'BAD_REQUEST'],
      [{ title: 'x', content: '   ' }, 'content cannot be blank', 'BAD_REQUEST'],
      [{ title: 't'.repeat(61), content: 'x' }, 'title is too long (limit: 60 characters)', 'BAD_REQUEST'],
      [{ title: 'x', content: 'c'.repeat(10_001) }, 'content is too long (limit: 10000 characters)', 'BAD_REQUEST'],
      [{ title: '', content: '' }, 'title cannot be blank', 'BAD_REQUEST'],
    ])('%j: %s', async (form, msg, code) => {
      const before = await snippetCount();
      const mark = await markEvents(env);
      expectJsonError(await rawPost('hamlet', form), 400, msg, code);
      expect(await snippetCount()).toBe(before);
      expect(await eventsSince(env, mark)).toEqual([]);
    });

    it('needs credentials', async () => {
      expectJsonError(await env.raw('/saved_snippets', { method: 'POST', body: new URLSearchParams({ title: 'a', content: 'b' }) }), 401, 'Missing authorization header for basic auth', 'UNAUTHORIZED');
    });
  });
});

describe('GET /saved_snippets', () => {
  it("lists only the caller's own snippets, by id", async () => {
    const first = await create('cordelia', 'First', 'one');
    const second = await create('cordelia', 'Second', 'two');
    await create('othello', 'Not hers', 'three');
    expect((await list('cordelia')).map((s) => s.id)).toEqual([first, second]);
    expect((await list('othello')).map((s) => s.id)).not.toContain(first);
  });

  it('is the saved_snippets state of /register', async () => {
    const id = await create('othello', 'Registered', 'in the state');
    const state = await registerQueue(env.client('othello'), { fetch_event_types: ['saved_snippets'] });
    expect(state.saved_snippets).toEqual(await list('othello'));
    expect(state.saved_snippets!.map((s) => s.id)).toContain(id);
    const guest = await registerQueue(env.client('polonius'), { fetch_event_types: ['saved_snippets'] });
    expect(guest.saved_snippets!.map((s) => s.id)).not.toContain(id);
  });
});

describe('PATCH /saved_snippets/{saved_snippet_id}', () => {
  it('changes the title, the content or both, with an update event carrying the whole snippet', async () => {
    const id = await create('hamlet', 'Old title', 'Old content');
    const created = (await list('hamlet')).find((s) => s.id === id)!;

    let mark = await markEvents(env);
    expect((await rawPatch('hamlet', id, { title: ' New title ' })).body).toEqual({ result: 'success', msg: '' });
    const retitled = { ...created, title: 'New title' };
    expect((await list('hamlet')).find((s) => s.id === id)).toEqual(retitled);
    expect(await eventsSince(env, mark)).toEqual([{ userIds: [uid('hamlet')], payload: { type: 'saved_snippets', op: 'update', saved_snippet: retitled } }]);

    mark = await markEvents(env);
    expect((await rawPatch('hamlet', id, { title: 'Both', content: 'changed' })).status).toBe(200);
    const both = { ...created, title: 'Both', content: 'changed' };
    expect((await list('hamlet')).find((s) => s.id === id)).toEqual(both);
    expect(await eventsSince(env, mark)).toEqual([{ userIds: [uid('hamlet')], payload: { type: 'saved_snippets', op: 'update', saved_snippet: both } }]);
  });

  it('with neither title nor content does nothing, sends nothing, and looks nothing up', async () => {
    const mark = await markEvents(env);
    expect((await rawPatch('hamlet', 999_999, {})).body).toEqual({ result: 'success', msg: '' });
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it("refuses another user's snippet and an unknown one as not existing (404), leaving it unchanged", async () => {
    const id = await create('hamlet', 'Mine', 'mine');
    const mark = await markEvents(env);
    for (const [as, target] of [['iago', id], ['desdemona', id], ['hamlet', 999_999]] as const) {
      expectJsonError(await rawPatch(as, target, { title: 'Stolen' }), 404, 'Saved snippet does not exist.', 'BAD_REQUEST');
    }
    expect((await list('hamlet')).find((s) => s.id === id)!.title).toBe('Mine');
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it.each([
    [{ title: '  ' }, 'title cannot be blank'],
    [{ content: '' }, 'content cannot be blank'],
    [{ title: 'ok', content: '\n' }, 'content cannot be blank'],
    [{ title: 'x'.repeat(61), content: 'ok' }, 'title is too long (limit: 60 characters)'],
  ])('refuses %j (%s) and changes nothing', async (form, msg) => {
    const id = await create('hamlet', 'Keep', 'keep');
    const mark = await markEvents(env);
    expectJsonError(await rawPatch('hamlet', id, form), 400, msg, 'BAD_REQUEST');
    expect((await list('hamlet')).find((s) => s.id === id)).toMatchObject({ title: 'Keep', content: 'keep' });
    expect(await eventsSince(env, mark)).toEqual([]);
  });
});

describe('DELETE /saved_snippets/{saved_snippet_id}', () => {
  it('deletes one of the caller’s snippets, with a remove event for them', async () => {
    const id = await create('polonius', 'Short-lived', 'gone soon');
    const mark = await markEvents(env);
    expect((await rawDelete('polonius', id)).body).toEqual({ result: 'success', msg: '' });
    expect((await list('polonius')).map((s) => s.id)).not.toContain(id);
    expect(await eventsSince(env, mark)).toEqual([{ userIds: [uid('polonius')], payload: { type: 'saved_snippets', op: 'remove', saved_snippet_id: id } }]);
    // Deleting it again: it no longer exists.
    expectJsonError(await rawDelete('polonius', id), 404, 'Saved snippet does not exist.', 'BAD_REQUEST');
  });

  it("does not delete another user's snippet, even for an owner", async () => {
    const id = await create('hamlet', 'Private', 'mine');
    const mark = await markEvents(env);
    expectJsonError(await rawDelete('desdemona', id), 404, 'Saved snippet does not exist.', 'BAD_REQUEST');
    expect((await list('hamlet')).map((s) => s.id)).toContain(id);
    expect(await eventsSince(env, mark)).toEqual([]);
  });
});
