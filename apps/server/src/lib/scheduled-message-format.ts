// The scheduled message object of GET /scheduled_messages and `scheduled_messages` events, and the
// reminder object of GET /reminders and `reminders` events.
import type { ScheduledMessageRow } from '../data/scheduled-messages.repo.ts';

export function formatScheduledMessage(row: Pick<ScheduledMessageRow, 'id' | 'type' | 'channelId' | 'directUserIds' | 'topic' | 'content' | 'renderedContent' | 'scheduledAt' | 'failed'>) {
  const base = {
    scheduled_message_id: row.id,
    content: row.content,
    rendered_content: row.renderedContent,
    scheduled_delivery_timestamp: Math.floor(row.scheduledAt.getTime() / 1000),
    failed: row.failed,
  };
  return row.type === 'stream'
    ? { ...base, type: 'stream' as const, to: row.channelId!, topic: row.topic }
    : { ...base, type: 'private' as const, to: row.directUserIds };
}

/** The reminder object of GET /reminders and `reminders` events. */
export function formatReminder(row: Pick<ScheduledMessageRow, 'id' | 'directUserIds' | 'content' | 'renderedContent' | 'scheduledAt' | 'failed' | 'reminderTargetMessageId'>) {
  return {
    reminder_id: row.id,
    type: 'private' as const,
    to: row.directUserIds,
    content: row.content,
    rendered_content: row.renderedContent,
    scheduled_delivery_timestamp: Math.floor(row.scheduledAt.getTime() / 1000),
    failed: row.failed,
    reminder_target_message_id: row.reminderTargetMessageId!,
  };
}
