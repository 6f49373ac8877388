// Code playgrounds (issue 25, part 4): adding and removing them (organization administrators only)
// with Zulip's validation and errors, the `realm_playgrounds` events and /register state, and the
// default code block language reset when its playground goes.
import { beforeEach, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers } from '../../helpers/people.ts';
import { pollEvents, registerQueue } from '../../helpers/queues.ts';

const env = useTestServer();
const db = () => env.running.deps.db;

interface PlaygroundIn {
  name: string;
  pygments_language: string;
  url_template: string;
}
const PYTHON: PlaygroundIn = { name: 'Python playground', pygments_language: 'Python', url_template: 'https://python.example.com?code={code}' };

const add = (as: Person, body: PlaygroundIn) => env.client(as).POST('/realm/playgrounds', { body });
async function addOk(body: PlaygroundIn, as: Person = 'iago'): Promise<number> {
  const { data, error } = await add(as, body);
  if (!data) throw new Error(`add-code-playground: ${JSON.stringify(error)}`);
  return data.id;
}
const remove = (as: Person, id: number) => env.client(as).DELETE('/realm/playgrounds/{playground_id}', { params: { path: { playground_id: id } } });

const stored = () => db().realmPlayground.findMany({ where: { realmId: env.realmId }, orderBy: { id: 'asc' } });
const state = async (as: Person = 'hamlet') => (await registerQueue(env.client(as), { fetch_event_types: ['realm_playgrounds'] })).realm_playgrounds;

async function expectRefused(send: () => Promise<Parameters<typeof expectJsonError>[0]>, msg: string, options: { code?: string; errors?: Record<string, string[]> } = {}) {
  const before = await stored();
  const mark = await markEvents(env);
  const res = await send();
  expectJsonError(res, 400, msg, options.code ?? 'BAD_REQUEST');
  if (options.errors) expect((res as { error?: { errors?: unknown } }).error?.errors).toEqual(options.errors);
  expect(await stored()).toEqual(before);
  expect(await eventsSince(env, mark)).toEqual([]);
}

/** Every active user receives a `realm_playgrounds` event with the whole list, last of the events after `mark`. */
async function expectPlaygroundsEvent(mark: bigint, before: string[] = []) {
  const events = await eventsSince(env, mark);
  expect(events.map((e) => e.payload.type)).toEqual([...before, 'realm_playgrounds']);
  const last = events.at(-1)!;
  expect(last.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id).sort((a, b) => a - b));
  expect(last.payload.realm_playgrounds).toEqual(await state());
}

beforeEach(async () => {
  await db().realmPlayground.deleteMany({ where: { realmId: env.realmId } });
});

const NOT_ADMINS: Person[] = ['shiva', 'hamlet', 'polonius'];

describe('POST /realm/playgrounds', () => {
  it('lets owners and administrators add playgrounds, trimmed, several per language; every user is told and /register lists them', async () => {
    const queue = await registerQueue(env.client('polonius'), { event_types: ['realm_playgrounds'] });
    const mark = await markEvents(env);
    const first = await addOk({ name: ' Python playground ', pygments_language: ' Python ', url_template: ' https://python.example.com?code={code} ' });
    await expectPlaygroundsEvent(mark);
    const second = await addOk({ name: 'Python playground 2', pygments_language: 'Python', url_template: 'https://python2.example.com{code}' }, 'desdemona');
    const third = await addOk({ name: 'C++ and friends', pygments_language: 'C++ GCC, v1.2/x#', url_template: 'https://cpp.example.com/{+code}' });
    const expected = [
      { id: first, ...PYTHON },
      { id: second, name: 'Python playground 2', pygments_language: 'Python', url_template: 'https://python2.example.com{code}' },
      { id: third, name: 'C++ and friends', pygments_language: 'C++ GCC, v1.2/x#', url_template: 'https://cpp.example.com/{+code}' },
    ];
    for (const person of ['desdemona', 'shiva', 'polonius'] as const) expect(await state(person)).toEqual(expected);
    const events = await pollEvents(env.client('polonius'), queue);
    expect(events.map((e) => e.realm_playgrounds.map((p: { id: number }) => p.id))).toEqual([[first], [first, second], [first, second, third]]);
  });

  it('refuses moderators, members and guests', async () => {
    for (const person of NOT_ADMINS) await expectRefused(() => add(person, PYTHON), 'Must be an organization administrator', { code: 'UNAUTHORIZED_PRINCIPAL' });
  });

  it("refuses invalid languages, names and templates with Zulip's errors", async () => {
    await expectRefused(() => add('iago', { ...PYTHON, pygments_language: 'a$b$c' }), 'Invalid characters in pygments language');
    await expectRefused(() => add('iago', { ...PYTHON, pygments_language: 'x'.repeat(41) }), 'pygments_language is too long (limit: 40 characters)');
    const cases: Array<[Partial<PlaygroundIn>, string, Record<string, string[]>]> = [
      [{ url_template: 'https://template.com{?test,code}' }, '"code" should be the only variable present in the URL template', { __all__: ['"code" should be the only variable present in the URL template'] }],
      [{ url_template: 'https://template.com?test={test' }, 'Invalid URL template.', { url_template: ['Invalid URL template.'] }],
      [{ url_template: 'https://template.com{?test}' }, 'Missing the required variable "code" in the URL template', { __all__: ['Missing the required variable "code" in the URL template'] }],
      [{ name: '  ' }, 'This field cannot be blank.', { name: ['This field cannot be blank.'] }],
      [{ pygments_language: ' ' }, 'This field cannot be blank.', { pygments_language: ['This field cannot be blank.'] }],
      [{ url_template: '' }, 'This field cannot be blank.', { url_template: ['This field cannot be blank.'], __all__: ['Missing the required variable "code" in the URL template'] }],
      // The model's field order: the template's problem comes first.
      [{ name: '', url_template: '{code' }, 'Invalid URL template.', { url_template: ['Invalid URL template.'], name: ['This field cannot be blank.'] }],
    ];
    for (const [change, msg, errors] of cases) await expectRefused(() => add('iago', { ...PYTHON, ...change }), msg, { errors });
  });

  it('refuses a second playground of the same name for the same language', async () => {
    await addOk(PYTHON);
    const duplicate = 'Realm playground with this Realm, Pygments language and Name already exists.';
    await expectRefused(() => add('iago', { ...PYTHON, url_template: 'https://other.example.com/{code}' }), duplicate, { errors: { __all__: [duplicate] } });
    await addOk({ ...PYTHON, pygments_language: 'Python3' });
  });
});

describe('DELETE /realm/playgrounds/{playground_id}', () => {
  it('removes a playground and tells every user; refuses other roles and unknown ids', async () => {
    const first = await addOk(PYTHON);
    const second = await addOk({ ...PYTHON, name: 'Another' });
    for (const person of NOT_ADMINS) await expectRefused(() => remove(person, first), 'Must be an organization administrator', { code: 'UNAUTHORIZED_PRINCIPAL' });
    await expectRefused(() => remove('iago', second + 1000), 'Invalid playground');
    const mark = await markEvents(env);
    expect((await remove('desdemona', first)).response.status).toBe(200);
    await expectPlaygroundsEvent(mark);
    expect((await stored()).map((p) => p.id)).toEqual([second]);
    await expectRefused(() => remove('iago', first), 'Invalid playground');
  });

  it("resets the organization's default code block language when it is the playground's, as Zulip does", async () => {
    const python = await addOk(PYTHON);
    const rust = await addOk({ name: 'Rust', pygments_language: 'Rust', url_template: 'https://play.rust-lang.org/?code={code}' });
    await db().realm.update({ where: { id: env.realmId }, data: { defaultCodeBlockLanguage: 'Python' } });
    let mark = await markEvents(env);
    expect((await remove('iago', rust)).response.status).toBe(200);
    await expectPlaygroundsEvent(mark);
    expect((await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).defaultCodeBlockLanguage).toBe('Python');
    mark = await markEvents(env);
    expect((await remove('iago', python)).response.status).toBe(200);
    await expectPlaygroundsEvent(mark, ['realm']);
    expect((await eventsSince(env, mark))[0]!.payload).toEqual({ type: 'realm', op: 'update', property: 'default_code_block_language', value: '' });
    expect((await db().realm.findUniqueOrThrow({ where: { id: env.realmId } })).defaultCodeBlockLanguage).toBe('');
  });
});
