// Who may use drafts, and whose drafts: every drafts operation needs the caller's
// enable_drafts_synchronization on (Zulip's draft_endpoint guard), and a draft is reachable only by
// its owner (anyone else's draft "does not exist", 404).
import type { Db } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { draftsSynchronizationEnabled, findDraftOfUser, type DraftRow } from '../data/drafts.repo.ts';
import { JsonableError, ResourceNotFoundError } from '../errors.ts';

export const draftDoesNotExist = () => new ResourceNotFoundError('Draft does not exist');

/** Refuses every drafts operation of a user who turned draft synchronization off. */
export async function checkDraftsSynchronization(db: Db, user: User): Promise<void> {
  if (!(await draftsSynchronizationEnabled(db, user.id))) throw new JsonableError('User has disabled synchronizing drafts.');
}

/** One of the caller's own drafts; `Draft does not exist` (404) otherwise. */
export async function accessOwnDraft(db: Db, user: User, draftId: number): Promise<DraftRow> {
  const draft = await findDraftOfUser(db, user.id, draftId);
  if (!draft) throw draftDoesNotExist();
  return draft;
}
