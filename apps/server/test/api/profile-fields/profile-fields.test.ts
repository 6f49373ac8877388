// GET and POST /realm/profile_fields: the organization's custom profile fields (spec file
// realm_profile_fields.yaml), read back through the listing after every creation.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RequestParams } from '@parley/api-types';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers } from '../../helpers/people.ts';

const env = useTestServer();

const uniqueName = (label = 'Field') => `${label} ${randomBytes(3).toString('hex')}`;

async function listFields(as: Person = 'hamlet') {
  const { data, error } = await env.client(as).GET('/realm/profile_fields');
  if (!data) throw new Error(`GET /realm/profile_fields failed: ${JSON.stringify(error)}`);
  return data.custom_fields;
}

/** POST as the Python zulip client sends it: form-encoded, JSON values as JSON text. */
function rawCreate(form: Record<string, string>, as: Person = 'iago') {
  return env.raw('/realm/profile_fields', { method: 'POST', as, body: new URLSearchParams(form) });
}

async function create(body: RequestParams<'create-custom-profile-field'>, as: Person = 'iago') {
  return env.client(as).POST('/realm/profile_fields', { body });
}

/** Nobody is shown in the profile summary (so that the two-field limit starts from zero). */
async function clearProfileSummary() {
  await env.running.deps.db.customProfileField.updateMany({ where: { realmId: env.realmId }, data: { displayInProfileSummary: false } });
}

describe('POST /realm/profile_fields', () => {
  it('compares labels without wildcards: "a_c" is not taken by "abc", while another case of a label is', async () => {
    const stem = randomBytes(3).toString('hex');
    expect((await create({ name: `Wild ${stem} abc`, field_type: 1 })).response.status).toBe(200);
    const { data, response } = await create({ name: `Wild ${stem} a_c`, field_type: 1 });
    expect(response.status).toBe(200);
    expect((await listFields()).find((f) => f.id === data!.id)?.name).toBe(`Wild ${stem} a_c`);
    expect((await create({ name: `WILD ${stem} ABC`.toUpperCase(), field_type: 1 })).response.status).toBe(400);
  });

  it('creates a short-text field with the default flags', async () => {
    const name = uniqueName('Job title');
    const { data, response } = await create({ name, hint: 'What do you do here?', field_type: 1 });
    expect(response.status).toBe(200);
    expect(data).toEqual({ result: 'success', msg: '', id: expect.any(Number) });

    const field = (await listFields()).find((f) => f.id === data!.id);
    expect(field).toMatchObject({
      id: data!.id,
      type: 1,
      name,
      hint: 'What do you do here?',
      field_data: '',
      required: false,
      editable_by_user: true,
    });
    expect(Number.isInteger(field!.order)).toBe(true);
  });

  it('leaves display_in_profile_summary out of fields not shown in the summary', async () => {
    const { data } = await create({ name: uniqueName('Plain'), field_type: 1 });
    const field = (await listFields()).find((f) => f.id === data!.id)!;
    expect(field).not.toHaveProperty('display_in_profile_summary');
  });

  it('stores required, editable_by_user and display_in_profile_summary as sent (JSON booleans on the wire)', async () => {
    await clearProfileSummary();
    const name = uniqueName('Flags');
    const res = await rawCreate({ name, field_type: '1', required: 'true', editable_by_user: 'false', display_in_profile_summary: 'true' });
    expect(res.status).toBe(200);
    const field = (await listFields()).find((f) => f.id === res.body.id);
    expect(field).toMatchObject({ name, required: true, editable_by_user: false, display_in_profile_summary: true });
  });

  it('places each new field after the existing ones', async () => {
    const first = await create({ name: uniqueName('First'), field_type: 1 });
    const second = await create({ name: uniqueName('Second'), field_type: 4 });
    const fields = await listFields();
    const orders = fields.map((f) => f.order);
    expect(orders).toEqual([...orders].sort((a, b) => a - b));
    const a = fields.find((f) => f.id === first.data!.id)!;
    const b = fields.find((f) => f.id === second.data!.id)!;
    expect(b.order).toBeGreaterThan(a.order);
    expect(fields.at(-1)!.id).toBe(second.data!.id);
  });

  it('strips whitespace around the label', async () => {
    const name = uniqueName('Stripped');
    const { data } = await create({ name: `   ${name}  `, field_type: 1 });
    expect((await listFields()).find((f) => f.id === data!.id)!.name).toBe(name);
  });

  it('creates a list-of-options field; field_data is listed as JSON text', async () => {
    const options = { '0': { text: 'Vim', order: '1' }, '1': { text: 'Emacs', order: '2' } };
    const name = uniqueName('Favorite editor');
    const res = await rawCreate({ name, field_type: '3', field_data: JSON.stringify(options) });
    expect(res.status).toBe(200);
    const field = (await listFields()).find((f) => f.id === res.body.id)!;
    expect(field.type).toBe(3);
    expect(typeof field.field_data).toBe('string');
    expect(JSON.parse(field.field_data)).toEqual(options);
  });

  it('creates a custom external-account field with its url_pattern', async () => {
    const data = { subtype: 'custom', url_pattern: 'https://example.com/people/%(username)s' };
    const name = uniqueName('Example profile');
    const res = await create({ name, field_type: 7, field_data: data });
    expect(res.response.status).toBe(200);
    const field = (await listFields()).find((f) => f.id === res.data!.id)!;
    expect(field.type).toBe(7);
    expect(JSON.parse(field.field_data)).toEqual(data);
  });

  it('gives a predefined external account its predefined label and hint, ignoring those sent', async () => {
    const res = await create({ name: 'Ignored', hint: 'ignored', field_type: 7, field_data: { subtype: 'github', url_pattern: 'https://example.com/%(username)s' } });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    const field = (await listFields()).find((f) => f.id === res.data!.id);
    expect(field).toMatchObject({ type: 7, name: 'GitHub username', hint: '' });
    expect(JSON.parse(field!.field_data)).toEqual({ subtype: 'github' });
    const mastodon = await create({ field_type: 7, field_data: { subtype: 'mastodon' } });
    expect((await listFields()).find((f) => f.id === mastodon.data!.id)).toMatchObject({ name: 'Mastodon profile', hint: 'The full URL to your profile' });
  });

  it('creates a field of every type, each with the configuration it keeps', async () => {
    for (const fieldType of [1, 2, 4, 5, 6, 8] as const) {
      const res = await create({ name: uniqueName(`Type ${fieldType}`), field_type: fieldType, field_data: { ignored: 'yes' } });
      expect(res.response.status, JSON.stringify(res.error)).toBe(200);
      expect((await listFields()).find((f) => f.id === res.data!.id)).toMatchObject({ type: fieldType, field_data: '' });
    }
  });

  it('sends the whole list of fields to every user', async () => {
    const mark = await markEvents(env);
    const { data } = await create({ name: uniqueName('Announced'), field_type: 1 });
    const events = await eventsSince(env, mark);
    expect(events).toHaveLength(1);
    expect(events[0]!.payload).toEqual({ type: 'custom_profile_fields', fields: await listFields() });
    expect(events[0]!.payload.fields.map((f: { id: number }) => f.id)).toContain(data!.id);
    expect(events[0]!.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id));
  });

  it('gives a new field its ID as its order (after every existing field)', async () => {
    const { data } = await create({ name: uniqueName('Ordered'), field_type: 1 });
    expect((await listFields()).find((f) => f.id === data!.id)!.order).toBe(data!.id);
  });

  it('reports unknown parameters in ignored_parameters_unsupported', async () => {
    const res = await rawCreate({ name: uniqueName('Extras'), field_type: '1', color: 'blue' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', id: expect.any(Number), ignored_parameters_unsupported: ['color'] });
  });

  describe('refusals (nothing is created)', () => {
    async function expectNotCreated(name: string) {
      expect((await listFields()).some((f) => f.name === name.trim())).toBe(false);
    }

    it('needs a field_type', async () => {
      const name = uniqueName('No type');
      const res = await rawCreate({ name });
      expectJsonError(res, 400, "Missing 'field_type' argument", 'REQUEST_VARIABLE_MISSING');
      expect(res.body.var_name).toBe('field_type');
      await expectNotCreated(name);
    });

    it('needs field_type as a JSON integer', async () => {
      expectJsonError(await rawCreate({ name: uniqueName(), field_type: 'short' }), 400, 'field_type is not valid JSON', 'BAD_REQUEST');
      expectJsonError(await rawCreate({ name: uniqueName(), field_type: '"1"' }), 400, 'field_type is not an integer', 'BAD_REQUEST');
    });

    it('refuses an unknown field type', async () => {
      const name = uniqueName('Bad type');
      expectJsonError(await create({ name, field_type: 99 }), 400, 'Invalid field type.', 'BAD_REQUEST');
      await expectNotCreated(name);
    });

    it('refuses a blank label', async () => {
      const before = (await listFields()).length;
      expectJsonError(await create({ name: '   ', field_type: 1 }), 400, 'Label cannot be blank.', 'BAD_REQUEST');
      expectJsonError(await create({ field_type: 1 }), 400, 'Label cannot be blank.', 'BAD_REQUEST');
      expect((await listFields()).length).toBe(before);
    });

    it('limits the label to 40 and the hint to 80 characters', async () => {
      const long = 'L'.repeat(41);
      expectJsonError(await create({ name: long, field_type: 1 }), 400, 'name is too long (limit: 40 characters)', 'BAD_REQUEST');
      await expectNotCreated(long);
      const name = uniqueName('Long hint');
      expectJsonError(await create({ name, hint: 'h'.repeat(81), field_type: 1 }), 400, 'hint is too long (limit: 80 characters)', 'BAD_REQUEST');
      await expectNotCreated(name);
      // The limits themselves are allowed.
      const exact = `X${randomBytes(4).toString('hex')}`.padEnd(40, 'x');
      expect((await create({ name: exact, hint: 'h'.repeat(80), field_type: 1 })).response.status).toBe(200);
    });

    it('needs at least one choice for a list-of-options field', async () => {
      const name = uniqueName('No choices');
      expectJsonError(await create({ name, field_type: 3, field_data: {} }), 400, 'Field must have at least one choice.', 'BAD_REQUEST');
      await expectNotCreated(name);
    });

    it.each([
      ['duplicate option texts', { field_type: 3, field_data: { a: { text: 'Same', order: '1' }, b: { text: 'Same', order: '2' } } }, 'Field must not have duplicate choices.'],
      ['an option without order', { field_type: 3, field_data: { a: { text: 'Vim' } } }, 'order key is missing from field_data'],
      ['an unknown external account', { field_type: 7, field_data: { subtype: 'myspace' } }, 'Invalid external account type'],
      ['an external account without subtype', { field_type: 7, field_data: {} }, 'subtype key is missing from field_data'],
      ['a URL pattern without the user name', { field_type: 7, field_data: { subtype: 'custom', url_pattern: 'https://example.com/' } }, "URL pattern must contain '%(username)s'."],
      ['a URL pattern that is no URL', { field_type: 7, field_data: { subtype: 'custom', url_pattern: 'example %(username)s' } }, 'field_data["url_pattern"] is not a URL'],
    ] as const)('refuses %s', async (_label, body, msg) => {
      const name = uniqueName('Bad data');
      expectJsonError(await create({ name, ...body } as never), 400, msg, 'BAD_REQUEST');
      await expectNotCreated(name);
    });

    it('checks the configuration before the label, and the hint before the label’s length', async () => {
      expectJsonError(await create({ name: '', field_type: 3, field_data: {} }), 400, 'Field must have at least one choice.', 'BAD_REQUEST');
      expectJsonError(await create({ name: 'n'.repeat(41), hint: 'h'.repeat(81), field_type: 1 }), 400, 'hint is too long (limit: 80 characters)', 'BAD_REQUEST');
    });

    it('refuses a choice with blank text', async () => {
      const name = uniqueName('Blank choice');
      const res = await create({ name, field_type: 3, field_data: { '0': { text: '', order: '1' } } });
      expect(res.response.status).toBe(400);
      expect(res.error).toMatchObject({ result: 'error', code: 'BAD_REQUEST' });
      await expectNotCreated(name);
    });

    it('refuses a label already used', async () => {
      const name = uniqueName('Taken');
      expect((await create({ name, field_type: 1 })).response.status).toBe(200);
      expectJsonError(await create({ name, field_type: 2 }), 400, 'A field with that label already exists.', 'BAD_REQUEST');
      expect((await listFields()).filter((f) => f.name === name)).toHaveLength(1);
    });

    it('shows at most two fields in the profile summary', async () => {
      await clearProfileSummary();
      expect((await create({ name: uniqueName('Summary one'), field_type: 1, display_in_profile_summary: true })).response.status).toBe(200);
      expect((await create({ name: uniqueName('Summary two'), field_type: 4, display_in_profile_summary: true })).response.status).toBe(200);
      const third = uniqueName('Summary three');
      const res = await create({ name: third, field_type: 1, display_in_profile_summary: true });
      expectJsonError(res, 400, 'Only 2 custom profile fields can be displayed in the profile summary.', 'BAD_REQUEST');
      await expectNotCreated(third);
      expect((await listFields()).filter((f) => f.display_in_profile_summary === true)).toHaveLength(2);
    });

    it.each([
      ['long text', 2],
      ['users', 6],
    ])('refuses to show a %s field in the profile summary', async (_label, fieldType) => {
      await clearProfileSummary();
      const name = uniqueName('Unsupported summary');
      const res = await create({ name, field_type: fieldType, display_in_profile_summary: true });
      expectJsonError(res, 400, 'Field type not supported for display in profile summary.', 'BAD_REQUEST');
      await expectNotCreated(name);
    });

    it.each(['shiva', 'hamlet', 'polonius'] as const)('is refused to %s (not an administrator)', async (caller) => {
      const name = uniqueName('Refused');
      expectJsonError(await create({ name, field_type: 1 }, caller), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
      await expectNotCreated(name);
    });
  });

  it('lets owners create fields too', async () => {
    const name = uniqueName('By owner');
    const res = await create({ name, field_type: 5 }, 'desdemona');
    expect(res.response.status).toBe(200);
    expect((await listFields()).find((f) => f.id === res.data!.id)).toMatchObject({ name, type: 5, field_data: '' });
  });
});

describe('GET /realm/profile_fields', () => {
  it('lists the fields, sorted by order, to every user including guests', async () => {
    const { data } = await create({ name: uniqueName('Visible'), field_type: 1 });
    for (const person of ['desdemona', 'hamlet', 'polonius'] as const) {
      const { data: listed, response } = await env.client(person).GET('/realm/profile_fields');
      expect(response.status).toBe(200);
      expect(listed).toMatchObject({ result: 'success', msg: '' });
      const fields = listed!.custom_fields;
      expect(fields.map((f) => f.id)).toContain(data!.id);
      const orders = fields.map((f) => f.order);
      expect(orders).toEqual([...orders].sort((a, b) => a - b));
    }
  });

  it('gives the same list to everyone', async () => {
    expect(await listFields('polonius')).toEqual(await listFields('iago'));
  });

  it('needs credentials', async () => {
    const res = await env.raw('/realm/profile_fields');
    expectJsonError(res, 401, 'Missing authorization header for basic auth', 'UNAUTHORIZED');
    expect(res.headers.get('www-authenticate')).toBe('Basic realm="zulip"');
  });
});
