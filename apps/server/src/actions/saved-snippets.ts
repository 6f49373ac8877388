// A user's saved snippets: create, edit, delete. Each change and its `saved_snippets` event (for the
// owner's own queues) happen in one transaction; a snippet of another user "does not exist" (404).
import type { EventData } from '@parley/api-types';
import type { AppDeps } from '../deps.ts';
import { inTransaction } from '../data/transactions.ts';
import type { Realm, User } from '../data/models.ts';
import { deleteSavedSnippetOfUser, insertSavedSnippet, updateSavedSnippetOfUser } from '../data/saved-snippets.repo.ts';
import { ResourceNotFoundError } from '../errors.ts';
import { formatSavedSnippet, snippetContent, snippetTitle } from '../lib/saved-snippets.ts';

const snippetDoesNotExist = () => new ResourceNotFoundError('Saved snippet does not exist.');

/** POST /saved_snippets: the new snippet's id. */
export async function doCreateSavedSnippet(deps: AppDeps, realm: Realm, user: User, input: { title: string; content: string }): Promise<number> {
  const title = snippetTitle(input.title);
  const content = snippetContent(input.content);
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await insertSavedSnippet(tx, { realmId: realm.id, userId: user.id, title, content });
    const payload: EventData<'saved_snippets', 'add'> = { type: 'saved_snippets', op: 'add', saved_snippet: formatSavedSnippet(row) };
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
    return row.id;
  });
}

/** PATCH /saved_snippets/{id}: without a title or content nothing happens (no lookup, no event), as in Zulip. */
export async function doEditSavedSnippet(deps: AppDeps, realm: Realm, user: User, id: number, input: { title?: string; content?: string }): Promise<void> {
  const title = input.title === undefined ? undefined : snippetTitle(input.title);
  const content = input.content === undefined ? undefined : snippetContent(input.content);
  if (title === undefined && content === undefined) return;
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const row = await updateSavedSnippetOfUser(tx, user.id, id, { ...(title !== undefined ? { title } : {}), ...(content !== undefined ? { content } : {}) });
    if (!row) throw snippetDoesNotExist();
    const payload: EventData<'saved_snippets', 'update'> = { type: 'saved_snippets', op: 'update', saved_snippet: formatSavedSnippet(row) };
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
  });
}

/** DELETE /saved_snippets/{id}. */
export async function doDeleteSavedSnippet(deps: AppDeps, realm: Realm, user: User, id: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    if (!(await deleteSavedSnippetOfUser(tx, user.id, id))) throw snippetDoesNotExist();
    const payload: EventData<'saved_snippets', 'remove'> = { type: 'saved_snippets', op: 'remove', saved_snippet_id: id };
    await deps.events.publish(tx, afterCommit, realm.id, [{ userIds: [user.id], payload }]);
  });
}
