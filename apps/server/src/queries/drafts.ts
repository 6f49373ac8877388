// Read model of the user's drafts: GET /drafts, the `drafts` state of /register, and the draft
// objects carried by `drafts` events.
import type { Schema } from '@parley/api-types';
import type { Db, RawSql } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { draftsSynchronizationEnabled, listDraftsOfUser, type DraftRow } from '../data/drafts.repo.ts';
import { checkDraftsSynchronization } from '../access/drafts.ts';

/** Zulip sends at most this many drafts in /register (the newest); GET /drafts has them all. */
export const MAX_DRAFTS_IN_REGISTER_RESPONSE = 1000;

/** The Draft object: `timestamp` is the last edit time in whole seconds (fraction dropped). */
export const formatDraft = (row: DraftRow): Schema<'Draft'> => ({
  id: row.id,
  type: row.type as Schema<'Draft'>['type'],
  to: [...row.toIds],
  topic: row.topic,
  content: row.content,
  timestamp: Math.trunc(row.lastEditTime.getTime() / 1000),
});

/** GET /drafts: every draft of the user, oldest edit first; refused when synchronization is off. */
export async function listDrafts(db: Db, user: User): Promise<{ count: number; drafts: Schema<'Draft'>[] }> {
  await checkDraftsSynchronization(db, user);
  const drafts = (await listDraftsOfUser(db, user.id, 'asc')).map(formatDraft);
  return { count: drafts.length, drafts };
}

/**
 * The `drafts` state of /register: the newest drafts first, at most MAX_DRAFTS_IN_REGISTER_RESPONSE.
 * Empty when the user turned synchronization off (Zulip deletes the stored drafts then).
 */
export async function draftsState(db: RawSql, user: User): Promise<Schema<'Draft'>[]> {
  if (!(await draftsSynchronizationEnabled(db, user.id))) return [];
  return (await listDraftsOfUser(db, user.id, 'desc', MAX_DRAFTS_IN_REGISTER_RESPONSE)).map(formatDraft);
}
