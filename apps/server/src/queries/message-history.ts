// GET /messages/{message_id}/history: the message as sent and after each edit or move, oldest first,
// rebuilt from its current state and its stored edit history (newest first), as Zulip does; the
// organization's edit-history visibility policy decides what is shown.
import type { SuccessData } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import type { EditHistoryEntry } from '../data/message-edits.repo.ts';
import { JsonableError } from '../errors.ts';
import { htmlDiff } from '../lib/html-diff.ts';
import { EMPTY_TOPIC_DISPLAY_NAME } from '../lib/message-limits.ts';
import { readableMessage } from './messages.ts';

type Snapshot = SuccessData<'get-message-history'>['message_history'][number];

/** Refused before the message is even looked at when the organization shows no edit history. */
export function checkEditHistoryAvailable(realm: Realm): void {
  if (realm.messageEditHistoryVisibilityPolicy === 'none') throw new JsonableError('Message edit history is disabled in this organization');
}

export async function messageHistory(db: Db, realm: Realm, user: User, messageId: number, options: { allowEmptyTopicName: boolean }): Promise<SuccessData<'get-message-history'>> {
  const found = await readableMessage(db, realm, user, messageId);
  if (!found) throw new JsonableError('Invalid message(s)');
  const m = found.message;
  const shown = (topic: string) => (m.channel_id !== null && topic === '' && !options.allowEmptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : topic);
  const moves = realm.messageEditHistoryVisibilityPolicy === 'moves';
  // Walk back from the current state: each entry's snapshot is the state after it.
  let content = m.content;
  let rendered = m.rendered_content;
  let topic = m.topic;
  const snapshots: Snapshot[] = [];
  for (const entry of (m.edit_history ?? []) as EditHistoryEntry[]) {
    const contentChanged = entry.prev_content !== undefined;
    const snapshot: Snapshot = { topic: shown(topic), content, rendered_content: rendered, timestamp: entry.timestamp, user_id: entry.user_id };
    if (entry.prev_topic !== undefined) snapshot.prev_topic = shown(entry.prev_topic);
    if (entry.prev_stream !== undefined) Object.assign(snapshot, { prev_stream: entry.prev_stream, stream: entry.stream });
    if (contentChanged && !moves) {
      Object.assign(snapshot, {
        prev_content: entry.prev_content,
        prev_rendered_content: entry.prev_rendered_content,
        content_html_diff: htmlDiff(entry.prev_rendered_content ?? '', rendered),
      });
    }
    if (!(moves && contentChanged && entry.prev_topic === undefined && entry.prev_stream === undefined)) snapshots.push(snapshot);
    if (contentChanged) {
      content = entry.prev_content!;
      rendered = entry.prev_rendered_content ?? '';
    }
    if (entry.prev_topic !== undefined) topic = entry.prev_topic;
  }
  snapshots.push({ topic: shown(topic), content, rendered_content: rendered, timestamp: Math.floor(m.date_sent.getTime() / 1000), user_id: m.sender_id });
  return { message_history: snapshots.reverse() };
}
