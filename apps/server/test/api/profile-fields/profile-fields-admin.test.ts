// Changing the organization's custom profile fields: reordering (PATCH /realm/profile_fields), updating
// one (PATCH /realm/profile_fields/{field_id}) and deleting one, for owners and administrators only;
// Zulip's checks in its order with nothing changed on a refusal; the `custom_profile_fields` event
// with every field, for every user.
import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { RequestParams } from '@parley/api-types';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers } from '../../helpers/people.ts';
import { registerQueue } from '../../helpers/queues.ts';

const env = useTestServer();

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;
const uniqueName = (label = 'Field') => `${label} ${randomBytes(3).toString('hex')}`;

async function listFields(as: Person = 'hamlet') {
  const { data, error } = await env.client(as).GET('/realm/profile_fields');
  if (!data) throw new Error(`GET /realm/profile_fields failed: ${JSON.stringify(error)}`);
  return data.custom_fields;
}

async function createField(body: RequestParams<'create-custom-profile-field'>): Promise<number> {
  const { data, error } = await env.client('iago').POST('/realm/profile_fields', { body });
  if (!data) throw new Error(`create field failed: ${JSON.stringify(error)}`);
  return data.id;
}

const field = async (id: number) => (await listFields()).find((f) => f.id === id);

const update = (id: number, form: Record<string, string>, as: Person = 'iago') =>
  env.raw(`/realm/profile_fields/${id}`, { method: 'PATCH', as, body: new URLSearchParams(form) });

/** The one custom_profile_fields event stored since `mark`: every active user gets the whole current list. */
async function expectFieldsEvent(mark: bigint): Promise<void> {
  const events = await eventsSince(env, mark);
  expect(events).toHaveLength(1);
  expect(events[0]!.payload).toEqual({ type: 'custom_profile_fields', fields: await listFields() });
  expect(events[0]!.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id));
}

async function expectNothingSent(mark: bigint): Promise<void> {
  expect(await eventsSince(env, mark)).toEqual([]);
}

// Each test starts from an organization without fields (reordering must name them all).
beforeEach(async () => {
  await db().customProfileField.deleteMany({ where: { realmId: env.realmId } });
});

describe('PATCH /realm/profile_fields', () => {
  const reorder = (order: string, as: Person = 'iago') => env.raw('/realm/profile_fields', { method: 'PATCH', as, body: new URLSearchParams({ order }) });

  it.each(['desdemona', 'iago'] as const)('sets each field’s order to its position, as %s, and tells everyone', async (person) => {
    const a = await createField({ name: uniqueName('A'), field_type: 1 });
    const b = await createField({ name: uniqueName('B'), field_type: 2 });
    const c = await createField({ name: uniqueName('C'), field_type: 4 });
    const mark = await markEvents(env);
    // As the Python client sends a JSON list (with spaces).
    const res = await reorder(`[${c}, ${a}, ${b}]`, person);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    const fields = await listFields();
    expect(fields.map((f) => [f.id, f.order])).toEqual([
      [c, 0],
      [a, 1],
      [b, 2],
    ]);
    await expectFieldsEvent(mark);
  });

  it('ignores IDs of no field and takes the last position of a repeated ID', async () => {
    const a = await createField({ name: uniqueName('A'), field_type: 1 });
    const b = await createField({ name: uniqueName('B'), field_type: 1 });
    expect((await reorder(`[${a}, 999999, ${b}, ${a}]`)).status).toBe(200);
    expect((await listFields()).map((f) => [f.id, f.order])).toEqual([
      [b, 2],
      [a, 3],
    ]);
  });

  it('needs every field of the organization, and changes nothing otherwise', async () => {
    const a = await createField({ name: uniqueName('A'), field_type: 1 });
    const b = await createField({ name: uniqueName('B'), field_type: 1 });
    const before = await listFields();
    const mark = await markEvents(env);
    expectJsonError(await reorder(`[${b}]`), 400, 'Invalid order mapping.', 'BAD_REQUEST');
    expectJsonError(await reorder('[]'), 400, 'Invalid order mapping.', 'BAD_REQUEST');
    expect(await listFields()).toEqual(before);
    await expectNothingSent(mark);
    expect(a).toBeLessThan(b);
  });

  it.each(['shiva', 'hamlet', 'polonius'] as const)('is refused to %s (not an administrator)', async (person) => {
    const a = await createField({ name: uniqueName('A'), field_type: 1 });
    const b = await createField({ name: uniqueName('B'), field_type: 1 });
    const before = await listFields();
    const mark = await markEvents(env);
    expectJsonError(await reorder(`[${b}, ${a}]`, person), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    expect(await listFields()).toEqual(before);
    await expectNothingSent(mark);
  });

  it('needs order as a JSON list of integers', async () => {
    expectJsonError(await env.raw('/realm/profile_fields', { method: 'PATCH', as: 'iago' }), 400, "Missing 'order' argument", 'REQUEST_VARIABLE_MISSING');
    expectJsonError(await reorder('1, 2'), 400, 'order is not valid JSON', 'BAD_REQUEST');
    expectJsonError(await reorder('["a"]'), 400, 'order[0] is not an integer', 'BAD_REQUEST');
  });
});

describe('PATCH /realm/profile_fields/{field_id}', () => {
  it.each(['desdemona', 'iago'] as const)('changes the label, hint and flags, as %s, and tells everyone', async (person) => {
    const id = await createField({ name: uniqueName('Phone'), hint: 'Contact no.', field_type: 1 });
    const mark = await markEvents(env);
    const name = uniqueName('Cell');
    const res = await update(id, { name: `  ${name} `, hint: 'Contact number.', required: 'true', editable_by_user: 'false', display_in_profile_summary: 'true' }, person);
    expect(res.body).toEqual({ result: 'success', msg: '' });
    expect(await field(id)).toMatchObject({ id, type: 1, name, hint: 'Contact number.', required: true, editable_by_user: false, display_in_profile_summary: true, field_data: '' });
    await expectFieldsEvent(mark);
  });

  it('changes only what is sent; with nothing sent it still tells everyone', async () => {
    const name = uniqueName('Keep');
    const id = await createField({ name, hint: 'hint', field_type: 1, required: true });
    const before = await field(id);
    expect((await update(id, { hint: 'new hint' })).status).toBe(200);
    expect(await field(id)).toEqual({ ...before, hint: 'new hint' });
    const mark = await markEvents(env);
    expect((await update(id, {})).body).toEqual({ result: 'success', msg: '' });
    expect(await field(id)).toEqual({ ...before, hint: 'new hint' });
    await expectFieldsEvent(mark);
  });

  it('replacing the options of a list drops the values of removed options (without realm_user events)', async () => {
    const options = { a: { text: 'Alpha', order: '1' }, b: { text: 'Beta', order: '2' } };
    const id = await createField({ name: uniqueName('Letters'), field_type: 3, field_data: options });
    await db().customProfileFieldValue.createMany({
      data: [
        { userId: uid('hamlet'), fieldId: id, value: 'a' },
        { userId: uid('othello'), fieldId: id, value: 'b' },
      ],
    });
    const mark = await markEvents(env);
    const next = { b: { text: 'Beta', order: '1' }, c: { text: 'Gamma', order: '2' } };
    expect((await update(id, { field_data: JSON.stringify(next) })).status).toBe(200);
    expect(JSON.parse((await field(id))!.field_data)).toEqual(next);
    const values = await db().customProfileFieldValue.findMany({ where: { fieldId: id }, orderBy: { userId: 'asc' } });
    expect(values.map((v) => [v.userId, v.value])).toEqual([[uid('othello'), 'b']]);
    await expectFieldsEvent(mark);
  });

  it('lets a custom external account change its URL pattern', async () => {
    const id = await createField({ name: uniqueName('Wiki'), field_type: 7, field_data: { subtype: 'custom', url_pattern: 'https://wiki.example.com/%(username)s' } });
    const next = { subtype: 'custom', url_pattern: 'https://example.org/u/%(username)s' };
    expect((await update(id, { field_data: JSON.stringify(next) })).status).toBe(200);
    expect(JSON.parse((await field(id))!.field_data)).toEqual(next);
  });

  it('lets a predefined external account change only its summary flag (its label, hint and data may be sent unchanged)', async () => {
    const id = await createField({ field_type: 7, field_data: { subtype: 'github' } });
    const github = (await field(id))!;
    expect(github).toMatchObject({ name: 'GitHub username', hint: '' });
    expect((await update(id, { display_in_profile_summary: 'true', name: 'GitHub username', hint: '', field_data: '{"subtype": "github"}' })).status).toBe(200);
    expect(await field(id)).toEqual({ ...github, display_in_profile_summary: true });
    const mark = await markEvents(env);
    for (const form of [{ name: 'GitHub' }, { hint: 'Your handle' }, { field_data: '{"subtype": "gitlab"}' }] as Array<Record<string, string>>) {
      expectJsonError(await update(id, form), 400, 'Default custom field cannot be updated.', 'BAD_REQUEST');
    }
    expect(await field(id)).toEqual({ ...github, display_in_profile_summary: true });
    await expectNothingSent(mark);
  });

  describe('refusals (nothing changes, no event)', () => {
    async function expectRefused(id: number, form: Record<string, string>, msg: string, as: Person = 'iago', code = 'BAD_REQUEST') {
      const before = await listFields();
      const mark = await markEvents(env);
      expectJsonError(await update(id, form, as), 400, msg, code);
      expect(await listFields()).toEqual(before);
      await expectNothingSent(mark);
    }

    it.each(['shiva', 'hamlet', 'polonius'] as const)('is refused to %s (not an administrator)', async (person) => {
      const id = await createField({ name: uniqueName('Locked'), field_type: 1 });
      await expectRefused(id, { name: uniqueName('Mine') }, 'Must be an organization administrator', person, 'UNAUTHORIZED_PRINCIPAL');
    });

    it('an unknown field', async () => {
      await expectRefused(999_999, { name: 'x' }, 'Field id 999999 not found.');
    });

    it('a blank or too long label, a too long hint (the hint is checked first)', async () => {
      const id = await createField({ name: uniqueName('Label'), field_type: 1 });
      await expectRefused(id, { name: '   ' }, 'Label cannot be blank.');
      await expectRefused(id, { name: 'n'.repeat(41) }, 'name is too long (limit: 40 characters)');
      await expectRefused(id, { hint: 'h'.repeat(81) }, 'hint is too long (limit: 80 characters)');
      await expectRefused(id, { name: 'n'.repeat(41), hint: 'h'.repeat(81) }, 'hint is too long (limit: 80 characters)');
    });

    it('a label another field has, in any case (its own label in another case is fine)', async () => {
      const taken = uniqueName('Taken');
      await createField({ name: taken, field_type: 1 });
      const id = await createField({ name: uniqueName('Other'), field_type: 1 });
      await expectRefused(id, { name: taken }, 'A field with that label already exists.');
      await expectRefused(id, { name: taken.toUpperCase() }, 'A field with that label already exists.');
      const own = (await field(id))!.name;
      expect((await update(id, { name: own.toUpperCase() })).status).toBe(200);
    });

    it('a third field in the profile summary (the field itself does not count)', async () => {
      const one = await createField({ name: uniqueName('One'), field_type: 1, display_in_profile_summary: true });
      await createField({ name: uniqueName('Two'), field_type: 1, display_in_profile_summary: true });
      const three = await createField({ name: uniqueName('Three'), field_type: 1 });
      await expectRefused(three, { display_in_profile_summary: 'true' }, 'Only 2 custom profile fields can be displayed in the profile summary.');
      expect((await update(one, { display_in_profile_summary: 'true', hint: 'still shown' })).status).toBe(200);
    });

    it('a long-text or users field in the profile summary', async () => {
      const long = await createField({ name: uniqueName('Bio'), field_type: 2 });
      const users = await createField({ name: uniqueName('Mentor'), field_type: 6 });
      await expectRefused(long, { display_in_profile_summary: 'true' }, 'Field type not supported for display in profile summary.');
      await expectRefused(users, { display_in_profile_summary: 'true' }, 'Field type not supported for display in profile summary.');
    });

    it('options that are not a valid list', async () => {
      const id = await createField({ name: uniqueName('Editor'), field_type: 3, field_data: { '0': { text: 'Vim', order: '1' } } });
      await expectRefused(id, { field_data: '{}' }, 'Field must have at least one choice.');
      await expectRefused(id, { field_data: '{"0": {"text": "Vim", "order": "1"}, "1": {"text": "Vim", "order": "2"}}' }, 'Field must not have duplicate choices.');
      await expectRefused(id, { field_data: '{"0": {"text": "", "order": "1"}}' }, 'field_data["text"] cannot be blank.');
      await expectRefused(id, { field_data: '{"0": {"text": "Vim"}}' }, 'order key is missing from field_data');
      await expectRefused(id, { field_data: '{"0": {"text": "Vim", "order": "1", "color": "red"}}' }, 'Unexpected arguments: color');
      await expectRefused(id, { field_data: '{" ": {"text": "Vim", "order": "1"}}' }, "'value' cannot be blank.");
      await expectRefused(id, { field_data: '{"0": "Vim"}' }, 'field_data is not a dict');
    });

    it('an external account configuration that is not valid', async () => {
      const id = await createField({ name: uniqueName('Site'), field_type: 7, field_data: { subtype: 'custom', url_pattern: 'https://example.com/%(username)s' } });
      await expectRefused(id, { field_data: '{"subtype": "myspace"}' }, 'Invalid external account type');
      await expectRefused(id, { field_data: '{"url_pattern": "https://example.com/%(username)s"}' }, 'subtype key is missing from field_data');
      await expectRefused(id, { field_data: '{"subtype": "custom", "url_pattern": "https://example.com/"}' }, "URL pattern must contain '%(username)s'.");
      await expectRefused(id, { field_data: '{"subtype": "custom", "url_pattern": "not a url %(username)s"}' }, 'field_data["url_pattern"] is not a URL');
      await expectRefused(id, { field_data: '{"subtype": "custom", "extra": "x"}' }, 'Unexpected arguments: extra');
    });

    it('parameters of the wrong type', async () => {
      const id = await createField({ name: uniqueName('Typed'), field_type: 1 });
      await expectRefused(id, { required: 'yes' }, 'required is not valid JSON');
      await expectRefused(id, { editable_by_user: '1' }, 'editable_by_user is not a boolean');
    });
  });

  it('is seen by every user’s /register afterwards', async () => {
    const id = await createField({ name: uniqueName('Seen'), field_type: 1 });
    const name = uniqueName('Seen again');
    expect((await update(id, { name })).status).toBe(200);
    const state = await registerQueue(env.client('polonius'), { fetch_event_types: ['custom_profile_fields'] });
    expect(state.custom_profile_fields!.find((f) => f.id === id)!.name).toBe(name);
  });
});

describe('DELETE /realm/profile_fields/{field_id}', () => {
  const remove = (id: number, as: Person = 'iago') => env.raw(`/realm/profile_fields/${id}`, { method: 'DELETE', as });

  it.each(['desdemona', 'iago'] as const)('deletes the field and its values, as %s, and tells everyone (no realm_user events)', async (person) => {
    const id = await createField({ name: uniqueName('Doomed'), field_type: 1 });
    const kept = await createField({ name: uniqueName('Kept'), field_type: 1 });
    await db().customProfileFieldValue.create({ data: { userId: uid('hamlet'), fieldId: id, value: 'gone' } });
    const mark = await markEvents(env);
    expect((await remove(id, person)).body).toEqual({ result: 'success', msg: '' });
    expect((await listFields()).map((f) => f.id)).toEqual([kept]);
    expect(await db().customProfileFieldValue.count({ where: { fieldId: id } })).toBe(0);
    await expectFieldsEvent(mark);
  });

  it('refuses an unknown field', async () => {
    const mark = await markEvents(env);
    expectJsonError(await remove(999_999), 400, 'Field id 999999 not found.', 'BAD_REQUEST');
    await expectNothingSent(mark);
  });

  it.each(['shiva', 'hamlet', 'polonius'] as const)('is refused to %s (not an administrator)', async (person) => {
    const id = await createField({ name: uniqueName('Stays'), field_type: 1 });
    const mark = await markEvents(env);
    expectJsonError(await remove(id, person), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
    expect((await listFields()).map((f) => f.id)).toEqual([id]);
    await expectNothingSent(mark);
  });
});
