// Custom profile fields of the organization, and users' values of them. Changes to the fields run in
// one transaction under the realm lock, so the caller's role (role changes take the same lock), the
// label check, the summary limit and the field order hold under concurrency; every change sends the
// whole list of fields (`custom_profile_fields`) to every user. Value changes share-lock the fields
// they write, check every value before writing any (Zulip's order and messages), write only values
// that change, and send a `realm_user` update per value written.
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import { inTransaction, type AfterCommit } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import type { CustomProfileField, Realm, User } from '../data/models.ts';
import {
  countSummaryFields,
  createProfileField,
  deleteProfileField,
  deleteProfileValue,
  deleteValuesOutside,
  findProfileFieldById,
  findProfileFieldByName,
  listProfileFields,
  profileValuesOfUser,
  setProfileFieldOrders,
  shareLockProfileFields,
  updateProfileField,
  upsertProfileValue,
} from '../data/profile-fields.repo.ts';
import { findUsersByIds, lockRealm } from '../data/users.repo.ts';
import { JsonableError } from '../errors.ts';
import {
  FieldType,
  MAX_SUMMARY_FIELDS,
  formatProfileField,
  normalizeProfileValue,
  predefinedAccount,
  sameJson,
  storedFieldData,
  validateFieldDefinition,
  type ReferencedUser,
} from '../lib/profile-fields.ts';
import { requireAdmin, requireHuman } from '../access/roles.ts';
import { checkCanChangeProfileValue } from '../access/profile-fields.ts';
import { reloadActor } from '../access/users.ts';

const labelTaken = () => new JsonableError('A field with that label already exists.');
const fieldNotFound = (id: number) => new JsonableError(`Field id ${id} not found.`);
const summaryLimit = () => new JsonableError(`Only ${MAX_SUMMARY_FIELDS} custom profile fields can be displayed in the profile summary.`);

/** The whole list of fields, to every user of the organization. */
async function fieldsEvent(tx: Db, realm: Realm): Promise<QueuedEvent> {
  const fields = await listProfileFields(tx, realm.id);
  return { realmWide: true, payload: { type: 'custom_profile_fields', fields: fields.map(formatProfileField) } };
}

/** A change to the organization's fields: one transaction under the realm lock, by a (reloaded) administrator. */
function changeFields<T>(deps: AppDeps, realm: Realm, actor: User, change: (tx: Db, afterCommit: AfterCommit) => Promise<T>): Promise<T> {
  return inTransaction(deps.db, async (tx, afterCommit) => {
    await lockRealm(tx, realm.id);
    requireAdmin(await reloadActor(tx, realm, actor));
    const result = await change(tx, afterCommit);
    await deps.events.publish(tx, afterCommit, realm.id, [await fieldsEvent(tx, realm)]);
    return result;
  }).catch((error) => {
    if (isUniqueViolation(error)) throw labelTaken();
    throw error;
  });
}

async function checkLabelFree(tx: Db, realm: Realm, name: string, exceptId?: number): Promise<void> {
  const holder = await findProfileFieldByName(tx, realm.id, name);
  if (holder && holder.id !== exceptId) throw labelTaken();
}

// ---------------------------------------------------------------------------------------------
// The organization's fields

export interface NewProfileField {
  name: string;
  hint: string;
  fieldType: number;
  fieldData: Record<string, unknown> | undefined;
  displayInProfileSummary: boolean;
  required: boolean;
  editableByUser: boolean;
}

/** POST /realm/profile_fields: Zulip's checks in its order; predefined external accounts take Zulip's label and hint. */
export async function doCreateCustomProfileField(deps: AppDeps, realm: Realm, actor: User, input: NewProfileField): Promise<number> {
  return changeFields(deps, realm, actor, async (tx) => {
    const name = input.name.trim();
    const fieldData = input.fieldData ?? {};
    if (input.displayInProfileSummary && (await countSummaryFields(tx, realm.id)) >= MAX_SUMMARY_FIELDS) throw summaryLimit();
    validateFieldDefinition({ name, hint: input.hint, fieldType: input.fieldType, fieldData, displayInProfileSummary: input.displayInProfileSummary });
    const predefined = predefinedAccount(input.fieldType, fieldData);
    const stored = predefined
      ? { name: predefined.name, hint: predefined.hint, fieldData: { subtype: fieldData.subtype } }
      : { name, hint: input.hint, fieldData: storedFieldData(input.fieldType, fieldData) };
    await checkLabelFree(tx, realm, stored.name);
    const field = await createProfileField(tx, {
      realmId: realm.id,
      fieldType: input.fieldType,
      ...stored,
      displayInProfileSummary: input.displayInProfileSummary,
      required: input.required,
      editableByUser: input.editableByUser,
    });
    return field.id;
  });
}

export interface ProfileFieldUpdate {
  name?: string;
  hint?: string;
  fieldData?: Record<string, unknown>;
  displayInProfileSummary?: boolean;
  required?: boolean;
  editableByUser?: boolean;
}

/**
 * PATCH /realm/profile_fields/{field_id}: the field as it would be is checked as on creation. A
 * predefined external account takes only a summary-card change (its label, hint and configuration
 * may be sent unchanged); new options of a list field drop the values that chose a removed option.
 */
export async function doUpdateCustomProfileField(deps: AppDeps, realm: Realm, actor: User, fieldId: number, update: ProfileFieldUpdate): Promise<void> {
  await changeFields(deps, realm, actor, async (tx) => {
    const field = await findProfileFieldById(tx, realm.id, fieldId);
    if (!field) throw fieldNotFound(fieldId);
    const name = update.name?.trim();
    if (update.displayInProfileSummary && (await countSummaryFields(tx, realm.id, field.id)) >= MAX_SUMMARY_FIELDS) throw summaryLimit();
    const current = (field.fieldData ?? {}) as Record<string, unknown>;
    if (predefinedAccount(field.fieldType, current)) {
      const changes =
        (name !== undefined && name !== field.name) ||
        (update.hint !== undefined && update.hint !== field.hint) ||
        (update.fieldData !== undefined && !sameJson(update.fieldData, current));
      if (changes) throw new JsonableError('Default custom field cannot be updated.');
    }
    validateFieldDefinition({
      name: name ?? field.name,
      hint: update.hint ?? field.hint,
      fieldType: field.fieldType,
      fieldData: update.fieldData ?? current,
      displayInProfileSummary: update.displayInProfileSummary ?? field.displayInProfileSummary,
    });
    if (name !== undefined) await checkLabelFree(tx, realm, name, field.id);
    const takesData = field.fieldType === FieldType.SELECT || field.fieldType === FieldType.EXTERNAL_ACCOUNT;
    if (takesData && update.fieldData !== undefined && field.fieldType === FieldType.SELECT) {
      await deleteValuesOutside(tx, field.id, Object.keys(update.fieldData));
    }
    await updateProfileField(tx, field.id, {
      ...(name !== undefined ? { name } : {}),
      ...(update.hint !== undefined ? { hint: update.hint } : {}),
      ...(update.required !== undefined ? { required: update.required } : {}),
      ...(update.editableByUser !== undefined ? { editableByUser: update.editableByUser } : {}),
      ...(update.displayInProfileSummary !== undefined ? { displayInProfileSummary: update.displayInProfileSummary } : {}),
      ...(takesData && update.fieldData !== undefined ? { fieldData: update.fieldData } : {}),
    });
  });
}

/** DELETE /realm/profile_fields/{field_id}: the users' values go with the field. */
export async function doDeleteCustomProfileField(deps: AppDeps, realm: Realm, actor: User, fieldId: number): Promise<void> {
  await changeFields(deps, realm, actor, async (tx) => {
    const field = await findProfileFieldById(tx, realm.id, fieldId);
    if (!field) throw fieldNotFound(fieldId);
    await deleteProfileField(tx, field.id);
  });
}

/**
 * PATCH /realm/profile_fields: every field of the organization must be listed; a field's order is its
 * (last) position in the list, and IDs of no field are ignored, as in Zulip.
 */
export async function doReorderCustomProfileFields(deps: AppDeps, realm: Realm, actor: User, order: number[]): Promise<void> {
  await changeFields(deps, realm, actor, async (tx) => {
    const position = new Map<number, number>();
    order.forEach((id, i) => position.set(id, i));
    const fields = await listProfileFields(tx, realm.id);
    if (fields.some((f) => !position.has(f.id))) throw new JsonableError('Invalid order mapping.');
    await setProfileFieldOrders(tx, realm.id, new Map(fields.map((f) => [f.id, position.get(f.id)!])));
  });
}

// ---------------------------------------------------------------------------------------------
// Users' values

/** The realm_user update of one value (null when cleared), to every user. */
function valueEvent(userId: number, fieldId: number, value: string | null, renderedValue: string | null): QueuedEvent {
  const field = { id: fieldId, value, ...(renderedValue ? { rendered_value: renderedValue } : {}) };
  return { realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: userId, custom_profile_field: field } } };
}

/** The field `id` among the locked `fields`, required to exist and to be changeable by `actor` (null: the management CLI). */
function fieldToChange(fields: ReadonlyMap<number, CustomProfileField>, actor: Pick<User, 'role'> | null, id: number): CustomProfileField {
  const field = fields.get(id);
  if (!field) throw fieldNotFound(id);
  if (actor) checkCanChangeProfileValue(actor, field);
  return field;
}

const lockFields = async (tx: Db, realm: Realm, ids: number[]) => new Map((await shareLockProfileFields(tx, realm.id, ids)).map((f) => [f.id, f]));

/** Clears `target`'s values of the fields, one after the other (a field without a value is skipped); the events. */
async function clearValues(tx: Db, realm: Realm, actor: Pick<User, 'role'> | null, target: User, fieldIds: number[]): Promise<QueuedEvent[]> {
  const fields = await lockFields(tx, realm, fieldIds);
  const events: QueuedEvent[] = [];
  for (const id of fieldIds) {
    fieldToChange(fields, actor, id);
    if ((await deleteProfileValue(tx, target.id, id)) > 0) events.push(valueEvent(target.id, id, null, null));
  }
  return events;
}

/** Checks every entry in order (field, permission, value), then writes the values that change; the events. */
async function setValues(tx: Db, realm: Realm, actor: Pick<User, 'role'> | null, target: User, entries: Array<{ id: number; value: unknown }>): Promise<QueuedEvent[]> {
  if (entries.length === 0) return [];
  const fields = await lockFields(tx, realm, entries.map((e) => e.id));
  const referenced = entries.flatMap((e) => (Array.isArray(e.value) ? e.value.filter((v): v is number => Number.isInteger(v)) : []));
  const users = new Map<number, ReferencedUser>((await findUsersByIds(tx, realm.id, [...new Set(referenced)])).map((u) => [u.id, u]));
  const normalized = entries.map((e) => {
    const field = fieldToChange(fields, actor, e.id);
    return { field, ...normalizeProfileValue(field, e.value, users) };
  });
  const stored = new Map((await profileValuesOfUser(tx, target.id, [...fields.keys()])).map((v) => [v.fieldId, v.value]));
  const events: QueuedEvent[] = [];
  for (const { field, value, renderedValue } of normalized) {
    if (stored.get(field.id) === value) continue;
    stored.set(field.id, value);
    await upsertProfileValue(tx, target.id, field.id, value, renderedValue);
    events.push(valueEvent(target.id, field.id, value, renderedValue));
  }
  return events;
}

/**
 * The administrators' form (PATCH /users/{user_id} `profile_data`), inside the caller's transaction:
 * entries with an empty value (null, "" or []) clear the user's value, first; the others are then
 * checked and written. `actor` is null for the management CLI. Returns the events.
 */
export async function changeProfileDataOfUser(tx: Db, realm: Realm, actor: User | null, target: User, entries: Array<{ id: number; value?: unknown }>): Promise<QueuedEvent[]> {
  const isEmpty = (v: unknown) => v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
  const cleared = await clearValues(tx, realm, actor, target, entries.filter((e) => isEmpty(e.value)).map((e) => e.id));
  const set = await setValues(tx, realm, actor, target, entries.filter((e) => !isEmpty(e.value)).map((e) => ({ id: e.id, value: e.value })));
  return [...cleared, ...set];
}

/** PATCH /users/me/profile_data: humans set their own values; every entry is checked before any is written. */
export async function doUpdateOwnProfileData(deps: AppDeps, realm: Realm, user: User, entries: Array<{ id: number; value: string | number[] }>): Promise<void> {
  requireHuman(user);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const self = await reloadActor(tx, realm, user);
    await deps.events.publish(tx, afterCommit, realm.id, await setValues(tx, realm, self, self, entries));
  });
}

/** DELETE /users/me/profile_data: humans clear their own values, all of them or none. */
export async function doRemoveOwnProfileData(deps: AppDeps, realm: Realm, user: User, fieldIds: number[]): Promise<void> {
  requireHuman(user);
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const self = await reloadActor(tx, realm, user);
    await deps.events.publish(tx, afterCommit, realm.id, await clearValues(tx, realm, self, self, fieldIds));
  });
}
