// Catching up a user's deferred user_message rows (data/deferred-rows.repo.ts): the explicit step that
// every request reading the user's rows or flags runs once, before the read. The read models
// (queries/messages.ts, queries/message-state.ts, queries/register-state.ts) only read: each says
// where it needs its caller to have caught up first. The callers:
// - handlers/messages.ts: GET /messages, GET /messages/{message_id}, GET /users/me/{id}/topics
//   (a protected history only);
// - actions/message-flags.ts: POST /messages/flags (in its transaction), /messages/flags/narrow,
//   /mark_stream_as_read, /mark_topic_as_read, and /mark_all_as_read (in each batch's transaction);
// - actions/event-queues.ts: POST /register (in its snapshot);
// - actions/reminders.ts: POST /reminders.
import type { RawSql } from '../data/db.ts';
import { writeDeferredRows } from '../data/deferred-rows.repo.ts';
import type { Realm, User } from '../data/models.ts';

/**
 * Writes the user's deferred rows (unread) for the organization's messages up to its newest one, and
 * moves the user's caught-up mark there; run on `db`, or in the caller's transaction (then in its
 * snapshot). Once per request: a second call finds nothing due but still costs a statement.
 */
export async function catchUpDeferredRows(db: RawSql, realm: Realm, user: User): Promise<void> {
  await writeDeferredRows(db, realm.id, user.id);
}
