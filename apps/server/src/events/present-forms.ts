// An event's presented form, serialised once per *form* rather than once per poll.
//
// When a message goes to the organization-wide channel, every parked poll of the organization is
// answered with the same event, and most queues see it in the same form: what presentEvent
// (events/present.ts) gives a queue depends on the event, on the queue's kind (apply_markdown,
// client_gravatar, client capabilities) and on what is the recipient's own (their flags on the message,
// the sender's queue's local_message_id). Whether the event is for the queue at all (recipient,
// event_types, narrow, registration time) is decided by presentEvents for every queue, every time;
// only the JSON text of what it gives is shared between queues of the same form.
//
// Outside production each shared text is checked against the queue's own serialisation, so that a
// change to present.ts that makes the form depend on something else of the queue fails the tests
// instead of giving one queue another's form.
import type { EventQueueRow } from '../data/event-queues.repo.ts';
import { indexOfSorted, type DeliverableEvent } from './present.ts';

type Queue = Pick<EventQueueRow, 'id' | 'userId' | 'applyMarkdown' | 'clientGravatar' | 'clientCapabilities'>;

/** Serialised forms of one event: form key → the JSON texts of the events a queue of that form receives. */
export type EventForms = Map<string, string[]>;

const CHECK_FORMS = process.env.NODE_ENV !== 'production';

/** The queue's kind: everything of the queue besides its recipient-specific parts that the form depends on. */
const kinds = new WeakMap<object, string>();

function kindOf(queue: Queue): string {
  let kind = kinds.get(queue);
  if (kind === undefined) {
    const capabilities = queue.clientCapabilities ?? {};
    const names = Object.keys(capabilities).sort();
    kind = `${queue.applyMarkdown ? 1 : 0}${queue.clientGravatar ? 1 : 0}${JSON.stringify(names.map((n) => [n, capabilities[n]]))}`;
    kinds.set(queue, kind);
  }
  return kind;
}

/**
 * The key of the form this queue receives `event` in, or null when the form is the queue's own (the
 * sender's queue gets the message's local_message_id).
 */
export function formKey(event: DeliverableEvent, queue: Queue): string | null {
  if (event.payload['_sender_queue_id'] !== undefined && event.payload['_sender_queue_id'] === queue.id) return null;
  // The recipient's own flags (messages, edits), whatever the event's type.
  let bits = 0;
  if (event.flags && event.userIds) {
    const i = indexOfSorted(event.userIds, queue.userId);
    if (i >= 0) bits = event.flags[i] ?? 0;
  }
  return `${bits}:${kindOf(queue)}`;
}

/**
 * The JSON texts of `presented` (what presentEvents gave this queue for `event`), from `forms` when a
 * queue of the same form had them made already.
 */
export function serialisedForms(forms: EventForms, event: DeliverableEvent, queue: Queue, presented: Record<string, unknown>[]): string[] {
  const key = formKey(event, queue);
  if (key === null) return presented.map((e) => JSON.stringify(e));
  let texts = forms.get(key);
  if (texts === undefined) {
    texts = presented.map((e) => JSON.stringify(e));
    forms.set(key, texts);
  } else if (CHECK_FORMS) {
    const own = presented.map((e) => JSON.stringify(e));
    if (own.length !== texts.length || own.some((t, i) => t !== texts![i])) {
      // The queue gets its own form; the failure is thrown outside delivery, where the test run sees it.
      const error = new Error(`event ${event.id} (${event.type}): queue ${queue.id} has form key ${key} but another form than the one shared under it`);
      setImmediate(() => {
        throw error;
      });
      return own;
    }
  }
  return texts;
}
