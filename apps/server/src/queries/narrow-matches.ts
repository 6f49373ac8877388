// GET /messages/matches_narrow (Zulip's messages_in_narrow_backend): which of the given messages match a
// narrow, among the viewer's own rows only (never channel history), read with GET /messages's narrow
// model (lib/narrow.ts, queries/messages.ts resolveNarrow) and highlighted as GET /messages highlights
// search results. Only reads: the caller has caught up the viewer's deferred rows.
import type { SuccessData } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { fetchMessagePage } from '../data/message-fetch.repo.ts';
import { highlightString, matchLocations, MAX_MESSAGE_ID, parseNarrow, renameEmptyTopicTerms, type NarrowTerm } from '../lib/narrow.ts';
import { expandWith, resolveNarrow } from './messages.ts';

/** The request's narrow as terms: Zulip's parsing errors, before anything is read. */
export function checkMatchesNarrowRequest(narrow: unknown): NarrowTerm[] {
  return parseNarrow(narrow);
}

/** The caller has caught up the viewer's deferred rows (the candidates are the viewer's rows). */
export async function narrowMatches(db: Db, realm: Realm, viewer: User, messageIds: number[], terms: NarrowTerm[]): Promise<SuccessData<'check-messages-match-narrow'>> {
  const narrow = await resolveNarrow(db, realm, viewer, renameEmptyTopicTerms(await expandWith(db, realm, viewer, terms)));
  const ids = [...new Set(messageIds)].filter((id) => id >= 1 && id <= MAX_MESSAGE_ID);
  const messages: Record<string, { match_content: string; match_subject: string }> = {};
  if (ids.length === 0 || narrow.receivedScope === null) return { messages };
  // The viewer's rows (minus channels they can no longer read), whatever the narrow's own scope.
  const rows = await fetchMessagePage(db, {
    scope: narrow.receivedScope,
    conditions: narrow.conditions,
    selection: { kind: 'ids', ids },
    // Without a search term the content and the escaped topic come back unhighlighted.
    search: narrow.search ?? { highlight: null },
  });
  for (const row of rows) {
    messages[String(row.id)] = {
      match_content: row.content_matches ? highlightString(row.rendered_content, matchLocations(row.content_matches)) : row.rendered_content,
      match_subject: row.topic_matches ? highlightString(row.topic_html!, matchLocations(row.topic_matches)) : row.topic_html!,
    };
  }
  return { messages };
}
