// Linkifiers (issue 25, part 3): reading them (every role), adding, changing, removing and reordering
// them (organization administrators only) with Zulip's validation and its errors, the
// `realm_linkifiers` events (only to queues declaring `linkifier_url_template`), and the
// `realm_linkifiers` / `realm_filters` state of /register. Rendering is in rendering.test.ts.
import { beforeEach, describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers } from '../../helpers/people.ts';
import { pollEvents, registerQueue } from '../../helpers/queues.ts';

const env = useTestServer();
const db = () => env.running.deps.db;

const ISSUES = { pattern: '#(?P<id>[0-9]+)', url_template: 'https://github.com/zulip/zulip/issues/{id}' };

const list = async (as: Person = 'iago') => {
  const { data, error } = await env.client(as).GET('/realm/linkifiers');
  if (!data) throw new Error(`get-linkifiers: ${JSON.stringify(error)}`);
  return data.linkifiers;
};
const add = (as: Person, body: { pattern: string; url_template: string }) => env.client(as).POST('/realm/filters', { body });
async function addOk(body: { pattern: string; url_template: string }, as: Person = 'iago'): Promise<number> {
  const { data, error } = await add(as, body);
  if (!data) throw new Error(`add-linkifier: ${JSON.stringify(error)}`);
  return data.id;
}
const update = (as: Person, id: number, body: { pattern: string; url_template: string }) =>
  env.client(as).PATCH('/realm/filters/{filter_id}', { params: { path: { filter_id: id } }, body });
const remove = (as: Person, id: number) => env.client(as).DELETE('/realm/filters/{filter_id}', { params: { path: { filter_id: id } } });
const reorder = (as: Person, ids: number[]) => env.client(as).PATCH('/realm/linkifiers', { body: { ordered_linkifier_ids: ids } });

const stored = () => db().realmLinkifier.findMany({ where: { realmId: env.realmId }, orderBy: [{ order: 'asc' }, { id: 'asc' }] });

/** Fails with `msg` (and `errors` when given), storing and sending nothing. */
async function expectRefused(send: () => Promise<Parameters<typeof expectJsonError>[0]>, msg: string, options: { code?: string; errors?: Record<string, string[]> } = {}) {
  const before = await stored();
  const mark = await markEvents(env);
  const res = await send();
  expectJsonError(res, 400, msg, options.code ?? 'BAD_REQUEST');
  if (options.errors) expect((res as { error?: { errors?: unknown } }).error?.errors).toEqual(options.errors);
  expect(await stored()).toEqual(before);
  expect(await eventsSince(env, mark)).toEqual([]);
}

/** The one `realm_linkifiers` event stored after `mark`: every active user receives it, with the whole list. */
async function expectLinkifiersEvent(mark: bigint) {
  const events = await eventsSince(env, mark);
  expect(events.map((e) => e.payload.type)).toEqual(['realm_linkifiers']);
  expect(events[0]!.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id).sort((a, b) => a - b));
  expect(events[0]!.payload.realm_linkifiers).toEqual(await list());
}

beforeEach(async () => {
  await db().realmLinkifier.deleteMany({ where: { realmId: env.realmId } });
});

const NOT_ADMINS: Person[] = ['shiva', 'hamlet', 'polonius'];

describe('GET /realm/linkifiers', () => {
  it('lists the linkifiers in the order they apply, to every role; spectators are refused', async () => {
    const first = await addOk(ISSUES);
    const second = await addOk({ pattern: 'PR (?P<id>[0-9]+)', url_template: 'https://example.com/pr/{id}' });
    const expected = [
      { id: first, ...ISSUES },
      { id: second, pattern: 'PR (?P<id>[0-9]+)', url_template: 'https://example.com/pr/{id}' },
    ];
    for (const person of ['desdemona', 'iago', 'shiva', 'hamlet', 'polonius'] as const) expect(await list(person)).toEqual(expected);
    expect((await env.anonymous().GET('/realm/linkifiers')).response.status).toBe(401);
  });
});

describe('POST /realm/filters', () => {
  it('lets owners and administrators add a linkifier, trimmed and ordered last, and tells every user', async () => {
    const mark = await markEvents(env);
    const first = await addOk({ pattern: '  #(?P<id>[0-9]+)\n', url_template: '\thttps://github.com/zulip/zulip/issues/{id} ' });
    await expectLinkifiersEvent(mark);
    const second = await addOk({ pattern: 'ZUL-(?P<id>\\d+)', url_template: 'https://realm.com/my_realm_filter/#hashtag/{id}' }, 'desdemona');
    expect(await list()).toEqual([
      { id: first, ...ISSUES },
      { id: second, pattern: 'ZUL-(?P<id>\\d+)', url_template: 'https://realm.com/my_realm_filter/#hashtag/{id}' },
    ]);
    expect((await stored()).map((l) => l.order)).toEqual([0, 1]);
  });

  it('refuses moderators, members and guests', async () => {
    for (const person of NOT_ADMINS) await expectRefused(() => add(person, ISSUES), 'Must be an organization administrator', { code: 'UNAUTHORIZED_PRINCIPAL' });
  });

  it("refuses invalid patterns and templates with Zulip's errors, the first in msg and all of them in errors", async () => {
    const cases: Array<[string, string, string, Record<string, string[]>]> = [
      ['', 'https://realm.com/my_realm_filter/{id}', 'This field cannot be blank.', { pattern: ['This field cannot be blank.'], __all__: ["Group 'id' in URL template is not present in linkifier pattern."] }],
      ['  ', '   ', 'This field cannot be blank.', { pattern: ['This field cannot be blank.'], url_template: ['This field cannot be blank.'] }],
      ['(foo', 'https://example.com', 'Bad regular expression: missing ): (foo', { __all__: ['Bad regular expression: missing ): (foo'] }],
      ['ZUL-(?P<id>\\d????)', 'https://example.com/{id}', 'Bad regular expression: bad repetition operator: ????', { __all__: ['Bad regular expression: bad repetition operator: ????'] }],
      ['[a-', 'https://example.com', 'Bad regular expression: missing ]: [a-', { __all__: ['Bad regular expression: missing ]: [a-'] }],
      ['a)', 'https://example.com', 'Bad regular expression: unexpected ): a)', { __all__: ['Bad regular expression: unexpected ): a)'] }],
      ['a\\', 'https://example.com', 'Bad regular expression: trailing \\', { __all__: ['Bad regular expression: trailing \\'] }],
      ['(?=x)y', 'https://example.com', 'Bad regular expression: invalid perl operator: (?=', { __all__: ['Bad regular expression: invalid perl operator: (?='] }],
      ['x{1001}', 'https://example.com', 'Bad regular expression: invalid repetition size: {1001}', { __all__: ['Bad regular expression: invalid repetition size: {1001}'] }],
      ['(?P<id>\\1)', 'https://example.com/{id}', 'Bad regular expression: invalid escape sequence: \\1', { __all__: ['Bad regular expression: invalid escape sequence: \\1'] }],
      ['[a-z]{300}', 'https://example.com', 'Bad regular expression: pattern too large - compile failed', { __all__: ['Bad regular expression: pattern too large - compile failed'] }],
      ['ZUL-(?P<id>\\d+)', '$fgfg', "Group 'id' in linkifier pattern is not present in URL template.", { __all__: ["Group 'id' in linkifier pattern is not present in URL template."] }],
      ['ZUL-(?P<id>\\d+)', 'https://realm.com/my_realm_filter/{hello}', "Group 'hello' in URL template is not present in linkifier pattern.", { __all__: ["Group 'hello' in URL template is not present in linkifier pattern."] }],
      ['ZUL-(?P<id>\\d+)-(?P<hello>\\d+)', 'https://realm.com/my_realm_filter/{hello}', "Group 'id' in linkifier pattern is not present in URL template.", { __all__: ["Group 'id' in linkifier pattern is not present in URL template."] }],
      ['#(?P<id>[123])', '{id', 'Invalid URL template.', { url_template: ['Invalid URL template.'] }],
      ['#(?P<id>[123])', 'https://example.com/{bar++}', 'Invalid URL template.', { url_template: ['Invalid URL template.'] }],
      // Both wrong: the template's field error comes first, as Django lists them.
      ['(foo', 'https://example.com/{{}', 'Invalid URL template.', { url_template: ['Invalid URL template.'], __all__: ['Bad regular expression: missing ): (foo'] }],
    ];
    for (const [pattern, url_template, msg, errors] of cases) await expectRefused(() => add('iago', { pattern, url_template }), msg, { errors });
  });

  it("accepts Zulip's examples: templates with every RFC 6570 operator, Python named groups, percent signs", async () => {
    for (const body of [
      { pattern: 'ZUL2-(?P<id>\\d+)', url_template: 'https://realm.com/my_realm_filter/?value={id}' },
      { pattern: 'PR (?P<id>[0-9]+)', url_template: 'https://example.com/~user/web#view_type=type&model=model&action=12345&id={id}' },
      { pattern: '!(?P<id>[0-9]+)', url_template: 'https://realm.com/index.pl?Action=AgentTicketZoom;TicketNumber={id}' },
      { pattern: 'ZUL-URL-(?P<id>\\d+)', url_template: 'https://example.com/%ba/{id}' },
      { pattern: '(?P<org>[a-zA-Z0-9_-]+)/(?P<repo>[a-zA-Z0-9_-]+)#(?P<id>[0-9]+)', url_template: 'https://github.com/{org}/{repo}/issue/{id}' },
      {
        pattern: 'FOO_(?P<id>[a-f]{5});(?P<zone>[a-f]);(?P<domain>[a-z]+);(?P<location>[a-z]+);(?P<name>[a-z]{2,8});(?P<chapter>[0-9]{2,3});(?P<fragment>[a-z]{2,8})',
        url_template: 'https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}',
      },
      { pattern: 'community guidelines', url_template: 'https://zulip.com/development-community/#community-norms' },
    ]) {
      await addOk(body);
    }
    expect(await list()).toHaveLength(7);
  });

  it('refuses a pattern the organization has already', async () => {
    await addOk(ISSUES);
    const duplicate = 'Realm filter with this Realm and Pattern already exists.';
    await expectRefused(() => add('iago', { pattern: ` ${ISSUES.pattern}`, url_template: 'https://example.com/{id}' }), duplicate, { errors: { __all__: [duplicate] } });
  });

  it('sends realm_linkifiers only to queues with linkifier_url_template; /register shows the list only to them, and realm_filters empty', async () => {
    const capable = await registerQueue(env.client('hamlet'), { fetch_event_types: ['realm_linkifiers', 'realm_filters'], client_capabilities: { linkifier_url_template: true } });
    const legacy = await registerQueue(env.client('hamlet'), { fetch_event_types: ['realm_linkifiers', 'realm_filters'] });
    expect([capable.realm_linkifiers, capable.realm_filters, legacy.realm_linkifiers, legacy.realm_filters]).toEqual([[], [], [], []]);
    const id = await addOk(ISSUES);
    const events = await pollEvents(env.client('hamlet'), capable);
    expect(events).toEqual([{ id: expect.any(Number), type: 'realm_linkifiers', realm_linkifiers: [{ id, ...ISSUES }] }]);
    // The other queue does not get it: a later event (a playground) reaches it alone.
    await env.client('iago').POST('/realm/playgrounds', { body: { name: 'Python', pygments_language: 'Python', url_template: 'https://python.example.com?code={code}' } });
    expect((await pollEvents(env.client('hamlet'), legacy)).map((e) => e.type)).toEqual(['realm_playgrounds']);
    const all = await registerQueue(env.client('polonius'), { client_capabilities: { linkifier_url_template: true } });
    expect(all.realm_linkifiers).toEqual([{ id, ...ISSUES }]);
    expect(all.realm_filters).toEqual([]);
    expect((await registerQueue(env.client('polonius'), {})).realm_linkifiers).toEqual([]);
  });
});

describe('PATCH /realm/filters/{filter_id}', () => {
  it('replaces pattern and template, keeping the linkifier in its place, and tells every user', async () => {
    const first = await addOk({ pattern: '#(?P<id>[123])', url_template: 'https://realm.com/my_realm_filter/{id}' });
    const second = await addOk({ pattern: 'PR (?P<id>[0-9]+)', url_template: 'https://example.com/pr/{id}' });
    const mark = await markEvents(env);
    const { response } = await update('iago', first, { pattern: ' #(?P<id>[0-9]+) ', url_template: 'https://realm.com/my_realm_filter/issues/{id}' });
    expect(response.status).toBe(200);
    await expectLinkifiersEvent(mark);
    expect((await list()).map((l) => [l.id, l.pattern, l.url_template])).toEqual([
      [first, '#(?P<id>[0-9]+)', 'https://realm.com/my_realm_filter/issues/{id}'],
      [second, 'PR (?P<id>[0-9]+)', 'https://example.com/pr/{id}'],
    ]);
    // Its own pattern again is no duplicate.
    expect((await update('desdemona', first, { pattern: '#(?P<id>[0-9]+)', url_template: 'https://example.com/{id}' })).response.status).toBe(200);
  });

  it('refuses other roles, unknown linkifiers, invalid input and another linkifier’s pattern', async () => {
    const id = await addOk(ISSUES);
    const other = await addOk({ pattern: 'PR (?P<id>[0-9]+)', url_template: 'https://example.com/pr/{id}' });
    for (const person of NOT_ADMINS) await expectRefused(() => update(person, id, ISSUES), 'Must be an organization administrator', { code: 'UNAUTHORIZED_PRINCIPAL' });
    await expectRefused(() => update('iago', other + 1000, ISSUES), 'Linkifier not found.');
    await expectRefused(() => update('iago', id, { pattern: 'ZUL-(?P<id>\\d????)', url_template: 'https://realm.com/my_realm_filter/{id}' }), 'Bad regular expression: bad repetition operator: ????');
    await expectRefused(() => update('iago', id, { pattern: '#(?P<id>[123])', url_template: '{id' }), 'Invalid URL template.');
    const duplicate = 'Realm filter with this Realm and Pattern already exists.';
    await expectRefused(() => update('iago', id, { pattern: 'PR (?P<id>[0-9]+)', url_template: 'https://example.com/{id}' }), duplicate, { errors: { __all__: [duplicate] } });
  });
});

describe('DELETE /realm/filters/{filter_id}', () => {
  it('removes a linkifier, the others keeping their order, and tells every user; refuses other roles and unknown ids', async () => {
    const ids = [await addOk(ISSUES), await addOk({ pattern: 'a#(?P<id>[0-9]+)', url_template: 'https://a.example.com/{id}' }), await addOk({ pattern: 'b#(?P<id>[0-9]+)', url_template: 'https://b.example.com/{id}' })];
    expect((await reorder('iago', [ids[2]!, ids[1]!, ids[0]!])).response.status).toBe(200);
    for (const person of NOT_ADMINS) await expectRefused(() => remove(person, ids[1]!), 'Must be an organization administrator', { code: 'UNAUTHORIZED_PRINCIPAL' });
    const mark = await markEvents(env);
    expect((await remove('desdemona', ids[1]!)).response.status).toBe(200);
    await expectLinkifiersEvent(mark);
    expect((await list()).map((l) => l.id)).toEqual([ids[2], ids[0]]);
    await expectRefused(() => remove('iago', ids[1]!), 'Linkifier not found.');
  });
});

describe('PATCH /realm/linkifiers', () => {
  it('sets the order, new linkifiers coming last, and tells every user', async () => {
    const ids = [await addOk(ISSUES), await addOk({ pattern: 'a#(?P<id>[0-9]+)', url_template: 'https://a.example.com/{id}' }), await addOk({ pattern: 'b#(?P<id>[0-9]+)', url_template: 'https://b.example.com/{id}' })];
    const mark = await markEvents(env);
    expect((await reorder('iago', [ids[2]!, ids[0]!, ids[1]!])).response.status).toBe(200);
    await expectLinkifiersEvent(mark);
    expect((await list()).map((l) => l.id)).toEqual([ids[2], ids[0], ids[1]]);
    const added = await addOk({ pattern: '3#123', url_template: 'https://example.com' });
    expect((await list()).map((l) => l.id)).toEqual([ids[2], ids[0], ids[1], added]);
  });

  it('refuses repeated, missing or unknown ids and other roles; with no linkifiers an empty list changes nothing and sends nothing', async () => {
    const mark = await markEvents(env);
    expect((await reorder('iago', [])).response.status).toBe(200);
    expect(await eventsSince(env, mark)).toEqual([]);
    const ids = [await addOk(ISSUES), await addOk({ pattern: 'a#(?P<id>[0-9]+)', url_template: 'https://a.example.com/{id}' })];
    await expectRefused(() => reorder('iago', [ids[0]!, ids[1]!, ids[0]!]), 'The ordered list must not contain duplicated linkifiers');
    await expectRefused(() => reorder('iago', [ids[1]!]), 'The ordered list must enumerate all existing linkifiers exactly once');
    await expectRefused(() => reorder('iago', [ids[1]!, ids[0]!, ids[1]! + 1000]), 'The ordered list must enumerate all existing linkifiers exactly once');
    for (const person of NOT_ADMINS) await expectRefused(() => reorder(person, [ids[1]!, ids[0]!]), 'Must be an organization administrator', { code: 'UNAUTHORIZED_PRINCIPAL' });
    const raw = await env.raw('/realm/linkifiers', { method: 'PATCH', as: 'iago', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'ordered_linkifier_ids=%5B1%2C' });
    expect(raw.status).toBe(400);
  });
});
