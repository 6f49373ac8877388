// Read model of a user's saved snippets: GET /saved_snippets and the `saved_snippets` state of /register.
import type { Schema } from '@parley/api-types';
import type { RawSql } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { listSavedSnippetsOfUser } from '../data/saved-snippets.repo.ts';
import { formatSavedSnippet } from '../lib/saved-snippets.ts';

export async function savedSnippetsOf(db: RawSql, user: User): Promise<Schema<'SavedSnippet'>[]> {
  return (await listSavedSnippetsOfUser(db, user.id)).map(formatSavedSnippet);
}
