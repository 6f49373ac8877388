// Event queues and messages through the typed client, as tests set them up: POST /register, GET /events
// (one poll, or long-polls until enough has arrived) and POST /messages. Each takes the client of the
// person (env.client(person)) or of an account made for the test, and throws on an error answer.
import type { ParleyClient, paths } from '@parley/client';

export type RegisterBody = NonNullable<paths['/register']['post']['requestBody']>['content']['application/x-www-form-urlencoded'];
export type RegisterState = paths['/register']['post']['responses'][200]['content']['application/json'];
export type SendMessageBody = paths['/messages']['post']['requestBody']['content']['application/x-www-form-urlencoded'];

/** An event queue: its id and the id of the last event before it (the first poll's `last_event_id`). */
export interface Queue {
  queue_id: string;
  last_event_id: number;
}

/** POST /register: the initial state with the new queue. */
export async function registerQueue(client: ParleyClient, body: RegisterBody = {}): Promise<RegisterState & Queue> {
  const { data, error } = await client.POST('/register', { body });
  if (!data) throw new Error(`register: ${JSON.stringify(error)}`);
  const { queue_id } = data;
  if (queue_id === undefined || queue_id === null) throw new Error(`register: no queue_id in ${JSON.stringify(data).slice(0, 200)}`);
  return { ...data, queue_id };
}

// Events are `any` here: the spec's Event is a union of some hundred shapes, and tests read the fields
// of the kind they expect (its type is checked against the spec where they are stored: helpers/events.ts).

/** One GET /events from `lastEventId` (default: the queue's start), without waiting unless `dontBlock` is false. */
export async function pollEvents(client: ParleyClient, queue: Queue, options: { lastEventId?: number; dontBlock?: boolean } = {}): Promise<any[]> {
  const { data, error } = await client.GET('/events', {
    params: { query: { queue_id: queue.queue_id, last_event_id: options.lastEventId ?? queue.last_event_id, dont_block: options.dontBlock ?? true } },
  });
  if (!data) throw new Error(`events: ${JSON.stringify(error)}`);
  return data.events;
}

/**
 * Long-polls the queue from its start as a client does (each poll acknowledging the events before it)
 * until `enough` holds for the events received so far (heartbeats left out), or after `maxPolls` polls;
 * returns the events received.
 */
export async function pollUntil(client: ParleyClient, queue: Queue, enough: (events: any[]) => boolean, options: { maxPolls?: number } = {}): Promise<any[]> {
  const received: any[] = [];
  let last = queue.last_event_id;
  for (let polls = 0; polls < (options.maxPolls ?? Infinity) && !enough(received); polls++) {
    const batch = await pollEvents(client, queue, { lastEventId: last, dontBlock: false });
    received.push(...batch.filter((e) => e.type !== 'heartbeat'));
    last = batch.at(-1)?.id ?? last;
  }
  return received;
}

/** POST /messages: the new message's id. */
export async function sendMessage(client: ParleyClient, body: SendMessageBody): Promise<number> {
  const { data, error } = await client.POST('/messages', { body });
  if (!data) throw new Error(`send: ${JSON.stringify(error)}`);
  return data.id;
}
