// Saved snippets: Zulip's rules for their text and their API form.
import type { Schema } from '@parley/api-types';
import { JsonableError } from '../errors.ts';
import { MAX_MESSAGE_LENGTH } from './message-limits.ts';
import type { SavedSnippetRow } from '../data/saved-snippets.repo.ts';

export const MAX_TITLE_LENGTH = 60;

/** What Python's str.strip() removes (Unicode White_Space, and \x1c-\x1f). */
const SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x1f \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const AROUND = new RegExp(`^${SPACE}+|${SPACE}+$`, 'gu');

/**
 * A title or content as Zulip takes it: stripped of surrounding whitespace, then not empty
 * (`<name> cannot be blank`) and at most `max` characters (`<name> is too long (limit: N characters)`).
 */
function snippetText(name: 'title' | 'content', raw: string, max: number): string {
  const text = raw.replace(AROUND, '');
  if (text === '') throw new JsonableError(`${name} cannot be blank`);
  if ([...text].length > max) throw new JsonableError(`${name} is too long (limit: ${max} characters)`);
  return text;
}

export const snippetTitle = (raw: string) => snippetText('title', raw, MAX_TITLE_LENGTH);
export const snippetContent = (raw: string) => snippetText('content', raw, MAX_MESSAGE_LENGTH);

/** The SavedSnippet object of the API: `date_created` in whole seconds. */
export const formatSavedSnippet = (row: SavedSnippetRow): Schema<'SavedSnippet'> => ({
  id: row.id,
  title: row.title,
  content: row.content,
  date_created: Math.floor(row.dateCreated.getTime() / 1000),
});
