// Custom profile field types and the validation of a value against its field.
import { JsonableError } from '../errors.ts';
import type { CustomProfileField } from '../data/models.ts';
import { renderMarkdown } from './markdown.ts';

export const FieldType = { SHORT_TEXT: 1, LONG_TEXT: 2, SELECT: 3, DATE: 4, URL: 5, USER: 6, EXTERNAL_ACCOUNT: 7, PRONOUNS: 8 } as const;
export const FIELD_TYPES: readonly number[] = Object.values(FieldType);
/** Field types whose values are rendered as Markdown. */
const TEXT_LIKE = new Set<number>([FieldType.SHORT_TEXT, FieldType.LONG_TEXT]);
const MAX_LENGTH: Record<number, number> = { 1: 50, 2: 500, 5: 2048, 7: 50, 8: 50 };

export interface NormalizedValue {
  value: string;
  renderedValue: string | null;
}

/**
 * Validates `raw` (a string, or a list of user IDs for user fields) for `field`. `userExists` checks
 * user IDs of user-type fields.
 */
export function normalizeProfileValue(field: CustomProfileField, raw: unknown, userIdsExist: (ids: number[]) => boolean): NormalizedValue {
  const name = field.name;
  if (field.fieldType === FieldType.USER) {
    if (!Array.isArray(raw) || !raw.every((v) => Number.isInteger(v))) throw new JsonableError(`${name} is not a list`);
    const ids = [...new Set(raw as number[])];
    if (!userIdsExist(ids)) throw new JsonableError(`Invalid user ID: ${ids.join(', ')}`);
    return { value: JSON.stringify(ids), renderedValue: null };
  }
  if (typeof raw !== 'string') throw new JsonableError(`${name} is not a string`);
  const max = MAX_LENGTH[field.fieldType];
  if (max !== undefined && raw.length > max) throw new JsonableError(`${name} is too long (limit: ${max} characters)`);
  switch (field.fieldType) {
    case FieldType.SELECT: {
      const options = (field.fieldData ?? {}) as Record<string, unknown>;
      if (!Object.hasOwn(options, raw)) throw new JsonableError(`'${raw}' is not a valid choice for '${name}'.`);
      break;
    }
    case FieldType.DATE:
      if (!/^\d{4}-\d{2}-\d{2}$/.test(raw) || Number.isNaN(Date.parse(raw))) throw new JsonableError(`${name} is not a date`);
      break;
    case FieldType.URL:
      try {
        const url = new URL(raw);
        if (!['http:', 'https:'].includes(url.protocol)) throw new Error('scheme');
      } catch {
        throw new JsonableError(`${name} is not a URL`);
      }
      break;
  }
  return { value: raw, renderedValue: TEXT_LIKE.has(field.fieldType) ? renderMarkdown(raw) : null };
}

/** The CustomProfileField object of the API (GET /realm/profile_fields, events). */
export function formatProfileField(f: CustomProfileField) {
  return {
    id: f.id,
    type: f.fieldType,
    name: f.name,
    hint: f.hint,
    field_data: f.fieldType === FieldType.SELECT || f.fieldType === FieldType.EXTERNAL_ACCOUNT ? JSON.stringify(f.fieldData) : '',
    order: f.order,
    ...(f.displayInProfileSummary ? { display_in_profile_summary: true } : {}),
    required: f.required,
    editable_by_user: f.editableByUser,
  };
}
