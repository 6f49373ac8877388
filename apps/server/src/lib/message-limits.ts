// Limits and names of messages and topics (Zulip's values; /register reports them).
export const MAX_MESSAGE_LENGTH = 10_000;
export const MAX_TOPIC_LENGTH = 60;
/** The longest note of a reminder (POST /reminders; max_reminder_note_length). */
export const MAX_REMINDER_NOTE_LENGTH = 1000;
/** How clients show the empty topic (realm_empty_topic_display_name). */
export const EMPTY_TOPIC_DISPLAY_NAME = 'general chat';
/** Older clients' name for the empty topic, read as "". */
export const LEGACY_EMPTY_TOPIC_NAME = '(no topic)';
/** num_before + num_after above this is refused (GET /messages). */
export const MAX_MESSAGES_PER_FETCH = 5_000;
/** Typing notifications are not sent to channels with more subscribers than this. */
export const MAX_CHANNEL_SIZE_FOR_TYPING = 100;

/** A topic as a client names it: the empty topic's display names (current and older) mean "". */
export function topicFromClient(topic: string): string {
  return topic === EMPTY_TOPIC_DISPLAY_NAME || topic === LEGACY_EMPTY_TOPIC_NAME ? '' : topic;
}
