// Long-poll delivery (GET /events) in one server process.
//
// Events are stored in PostgreSQL with ids handed out in commit order per organization (see
// data/events.repo.ts), and announced with NOTIFY. Each process keeps, per organization it serves
// polls for, a *tail*: the events after a starting id, fetched once per announcement whatever the
// number of parked polls, in a short in-memory buffer. A poll whose last_event_id is inside the
// buffer is answered from memory; an older one reads the database once, then joins the tail. Parked
// polls are indexed by organization and answered as soon as a fetch brings something for them.
//
// Ephemeral events (typing) arrive in a NOTIFY payload with an id drawn from the same sequence under
// the same lock; the tail first fetches the stored events before them, then inserts them in id order.
// A process that serves no polls for the organization at that moment does not keep them.
import type { Db } from '../data/db.ts';
import { eventsForQueueAfter, eventsOfRealmAfter, newestEventId, type EventQueueRow, type EventRow } from '../data/event-queues.repo.ts';
import type { Logger } from '../http/logging.ts';
import { EPHEMERAL_CHANNEL, EVENTS_CHANNEL } from './bus.ts';
import type { DatabaseListener } from './listener.ts';
import { eventEndsQueue } from '../access/event-queues.ts';
import { presentEvents, type DeliverableEvent } from './present.ts';
import { serialisedForms, type EventForms } from './present-forms.ts';
import { createQueueCache, type QueueCache } from './queue-cache.ts';
import { createAnswerPacing, type AnswerPacing } from './pacing.ts';

export interface DeliveryOptions {
  /** A parked poll answers a heartbeat after this long plus up to `heartbeatJitterMs`. */
  heartbeatMs: number;
  heartbeatJitterMs: number;
  /** How long the buffer keeps events, and at most how many. */
  bufferMs: number;
  bufferMax: number;
  /** At most this many events in one answer. */
  batchLimit: number;
  /** At most one answer per queue this often, events arriving meanwhile joining it (events/pacing.ts; 0: none). */
  pacingMs: number;
}

export const DEFAULT_DELIVERY_OPTIONS: DeliveryOptions = {
  heartbeatMs: 45_000,
  heartbeatJitterMs: 10_000,
  bufferMs: 120_000,
  bufferMax: 20_000,
  batchLimit: 1_000,
  pacingMs: 250,
};

export type PolledQueue = Pick<EventQueueRow, 'id' | 'realmId' | 'userId' | 'eventTypes' | 'allPublicStreams' | 'applyMarkdown' | 'narrow' | 'clientCapabilities' | 'createdAtMs' | 'clientGravatar'>;

/**
 * A poll's answer: the events, and whether the queue ended (its owner was deactivated, or lost the
 * right the queue was registered with) at the event after the last one given: nothing after that point
 * is delivered to it.
 */
export interface PollAnswer {
  events: Record<string, unknown>[];
  /**
   * The same events as JSON texts, when they came from the buffer: texts shared by every queue that
   * receives an event in the same form (events/present-forms.ts), written into the answer as they are.
   */
  json?: string[];
  ended: boolean;
}

/**
 * The client's side of a poll: whether it went away, and a way to hear when it does (`onGone` returns
 * the function that stops listening). Cheaper than an AbortSignal, which a parked poll would make and
 * listen to on every request.
 */
export interface PollConnection {
  readonly gone: boolean;
  onGone(listener: () => void): () => void;
}

export interface EventDelivery {
  /**
   * The events for `queue` after `after`, adapted to it; waits (unless `dontBlock`) until there is one,
   * answering a heartbeat after a while, or until the client goes away (`connection`) or the
   * process stops.
   */
  poll(queue: PolledQueue, after: number, options: { dontBlock: boolean; connection?: PollConnection }): Promise<PollAnswer>;
  /**
   * Starts following the organization's events in this process (done at /register, so that ephemeral
   * events sent before the client's first poll are kept for it).
   */
  watch(realmId: number): void;
  /** Number of polls parked in this process (figures, tests). */
  readonly parked: number;
  /** The queues this process serves polls for (acknowledgments and access times, written in batches). */
  readonly queues: QueueCache;
  /** Answers every parked poll (with a heartbeat) and stops fetching. */
  close(): void;
  /** Resolves once what `queues` recorded is written (after `close`, before the database goes). */
  flush(): Promise<void>;
}

interface BufferedEvent extends DeliverableEvent {
  at: number;
  /** Its serialised forms, made as polls take it (events/present-forms.ts). */
  forms?: EventForms;
}

/** A poll waiting for its events: answered (`done`) once, by a fetch, its heartbeat, its client leaving or the process stopping. */
class ParkedPoll {
  timer: NodeJS.Timeout | undefined;
  /** Set while its answer is held by the pacing (events/pacing.ts). */
  paceTimer: NodeJS.Timeout | undefined;
  stopListening: (() => void) | undefined;
  constructor(
    readonly tail: Tail,
    readonly queue: PolledQueue,
    readonly after: number,
    private readonly resolve: (answer: PollAnswer) => void,
    private readonly unpark: () => void,
    private readonly pacing: AnswerPacing,
  ) {}

  done(result: PollAnswer): void {
    if (!this.tail.polls.delete(this)) return;
    const ofUser = this.tail.pollsByUser.get(this.queue.userId);
    if (ofUser?.delete(this) && ofUser.size === 0) this.tail.pollsByUser.delete(this.queue.userId);
    this.unpark();
    clearTimeout(this.timer);
    if (this.paceTimer) clearTimeout(this.paceTimer);
    // A heartbeat is no answer the pacing counts: a quiet queue's next event goes out at once.
    if (result.events.length && result.events[0]!['type'] !== 'heartbeat') this.pacing.answered(this.queue.id, Date.now());
    this.stopListening?.();
    this.tail.lastUsed = Date.now();
    this.resolve(result);
  }

  /** Its heartbeat is due (setTimeout's argument, so that the timer needs no closure). */
  static heartbeat(poll: ParkedPoll): void {
    poll.done({ events: [heartbeat(poll.after)], ended: false });
  }
}

interface Tail {
  realmId: number;
  /** Every stored event with an id above `start` that has committed up to the last fetch is in `buffer`. */
  start: number;
  cursor: number;
  buffer: BufferedEvent[];
  polls: Set<ParkedPoll>;
  /** The same polls by their queue's user: a wake-up visits only its events' recipients' polls. */
  pollsByUser: Map<number, Set<ParkedPoll>>;
  ready: Promise<void>;
  /** `ready` has resolved (a poll then need not wait for it). */
  isReady: boolean;
  fetching: Promise<void> | null;
  fetchAgain: boolean;
  /** Ephemeral events waiting for the fetch that makes their predecessors known. */
  ephemeralWaiting: BufferedEvent[];
  lastUsed: number;
}

const fromRow = (r: EventRow, at: number): BufferedEvent => ({ ...r, at });

/**
 * A wake-up answers at most this many parked polls in one go, then lets the event loop serve other
 * requests (and the answered clients' next polls) before the next slice.
 */
const DISPATCH_SLICE = 128;

export function createEventDelivery(db: Db, listener: DatabaseListener, logger: Logger, options: DeliveryOptions = DEFAULT_DELIVERY_OPTIONS): EventDelivery {
  const tails = new Map<number, Tail>();
  const queues = createQueueCache(db, listener, logger);
  let parkedCount = 0;
  let closed = false;
  const unpark = () => void parkedCount--;
  const pacing = createAnswerPacing(options.pacingMs);
  /** A held answer's time has come: everything the buffer has for it now. */
  const answerHeld = (poll: ParkedPoll) => {
    poll.paceTimer = undefined;
    if (!poll.tail.polls.has(poll)) return;
    const answer = collect(poll.tail, poll.queue, poll.after);
    if (answer.events.length || answer.ended) poll.done(answer);
  };
  /** Answers a parked poll that has something now, or holds it while its queue's pacing says so. */
  const answerOrHold = (poll: ParkedPoll, answer: PollAnswer) => {
    const hold = answer.ended ? 0 : pacing.holdFor(poll.queue.id, Date.now());
    if (hold <= 0) poll.done(answer);
    else poll.paceTimer ??= setTimeout(answerHeld, hold, poll);
  };

  function tailFor(realmId: number): Tail {
    let tail = tails.get(realmId);
    if (!tail) {
      const t: Tail = {
        realmId,
        start: 0,
        cursor: 0,
        buffer: [],
        polls: new Set(),
        pollsByUser: new Map(),
        ready: Promise.resolve(),
        isReady: false,
        fetching: null,
        fetchAgain: false,
        ephemeralWaiting: [],
        lastUsed: Date.now(),
      };
      t.ready = newestEventId(db, realmId).then((newest) => {
        t.start = newest;
        t.cursor = newest;
        t.isReady = true;
      });
      t.ready.catch(() => tails.delete(realmId));
      tails.set(realmId, t);
      tail = t;
    }
    tail.lastUsed = Date.now();
    return tail;
  }

  /** Fetches what was committed since the cursor (coalescing announcements), then answers polls. */
  function requestFetch(tail: Tail): Promise<void> {
    if (tail.fetching) {
      tail.fetchAgain = true;
      return tail.fetching;
    }
    const run = async () => {
      await tail.ready;
      do {
        tail.fetchAgain = false;
        const ephemeral = tail.ephemeralWaiting;
        tail.ephemeralWaiting = [];
        const fresh: BufferedEvent[] = [...ephemeral];
        for (;;) {
          const rows = await eventsOfRealmAfter(db, tail.realmId, tail.cursor, options.batchLimit);
          const now = Date.now();
          for (const r of rows) {
            const e = fromRow(r, now);
            tail.buffer.push(e);
            fresh.push(e);
          }
          if (rows.length) tail.cursor = rows[rows.length - 1]!.id;
          if (rows.length < options.batchLimit) break;
        }
        for (const e of ephemeral) insertInOrder(tail.buffer, e);
        trim(tail);
        dispatch(tail, fresh);
      } while (tail.fetchAgain && !closed);
    };
    tail.fetching = run()
      .catch((error) => logger.error({ err: error, realm_id: tail.realmId }, 'event fetch failed'))
      .finally(() => {
        tail.fetching = null;
      });
    return tail.fetching;
  }

  function insertInOrder(buffer: BufferedEvent[], e: BufferedEvent) {
    let i = buffer.length;
    while (i > 0 && buffer[i - 1]!.id > e.id) i--;
    if (buffer[i - 1]?.id === e.id) return;
    buffer.splice(i, 0, e);
  }

  function trim(tail: Tail) {
    const horizon = Date.now() - options.bufferMs;
    let drop = 0;
    while (drop < tail.buffer.length && (tail.buffer.length - drop > options.bufferMax || tail.buffer[drop]!.at < horizon)) drop++;
    if (drop === 0) return;
    tail.start = Math.max(tail.start, tail.buffer[drop - 1]!.id);
    tail.buffer.splice(0, drop);
  }

  /** Events of the buffer after `after` for this queue, adapted (oldest first, at most batchLimit). */
  function collect(tail: Tail, queue: PolledQueue, after: number): PollAnswer {
    const out: Record<string, unknown>[] = [];
    const json: string[] = [];
    let i = firstAfter(tail.buffer, after);
    for (; i < tail.buffer.length && out.length < options.batchLimit; i++) {
      const event = tail.buffer[i]!;
      if (eventEndsQueue(event, queue)) return { events: out, json, ended: true };
      // Whether the event is for this queue, and in what form, is decided here for every queue; only
      // the serialisation of that form is shared.
      const presented = presentEvents(event, queue);
      if (presented.length === 0) continue;
      out.push(...presented);
      json.push(...serialisedForms((event.forms ??= new Map()), event, queue, presented));
    }
    return { events: out, json, ended: false };
  }

  function firstAfter(buffer: BufferedEvent[], after: number): number {
    let lo = 0;
    let hi = buffer.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (buffer[mid]!.id <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Answers the parked polls the buffer now has something for, in slices (DISPATCH_SLICE), so that a
   * message to every user does not hold the process for the whole of its answers: requests that
   * arrive meanwhile (the answered clients' next polls among them) are served between slices. Each
   * poll's answer is read from the buffer when its slice runs.
   */
  function dispatch(tail: Tail, fresh: BufferedEvent[]) {
    const polls = pollsConcerned(tail, fresh);
    let at = 0;
    const slice = () => {
      const end = Math.min(polls.length, at + DISPATCH_SLICE);
      for (; at < end; at++) {
        const poll = polls[at]!;
        if (!tail.polls.has(poll)) continue;
        if (poll.paceTimer) continue; // held: answered with everything when its time comes
        const answer = collect(tail, poll.queue, poll.after);
        if (answer.events.length || answer.ended) answerOrHold(poll, answer);
      }
      if (at < polls.length && !closed) setImmediate(slice);
    };
    slice();
  }

  /**
   * The parked polls the fresh events may be for: their recipients' (a poll parks only when the buffer
   * had nothing for it, so only what a fetch brings can wake it). Everyone's for an event without a
   * recipient list (the whole organization), one that all_public_streams queues also take, and a
   * realm_user event (it may end a queue that does not receive it: access/event-queues.ts).
   */
  function pollsConcerned(tail: Tail, fresh: BufferedEvent[]): ParkedPoll[] {
    if (fresh.length === 0) return [];
    const users = new Set<number>();
    for (const e of fresh) {
      if (!e.userIds || e.allPublicStreams || e.type === 'realm_user') return [...tail.polls];
      for (const id of e.userIds) users.add(id);
    }
    const out: ParkedPoll[] = [];
    for (const id of users) {
      const ofUser = tail.pollsByUser.get(id);
      if (ofUser) for (const poll of ofUser) out.push(poll);
    }
    return out;
  }

  listener.on(EVENTS_CHANNEL, (payload) => {
    const tail = tails.get(Number(payload));
    if (tail && !closed) void requestFetch(tail);
  });

  listener.on(EPHEMERAL_CHANNEL, (payload) => {
    if (closed) return;
    // {realm_id, at, events: [{id, user_ids, payload}, …]} (data/events.repo.ts publishEphemeralEvents).
    // Organizations nobody polls here are skipped before parsing.
    const realmId = /^\{"realm_id":(\d+),/.exec(payload)?.[1];
    if (realmId !== undefined && !tails.has(Number(realmId))) return;
    let message: { realm_id: number; at: number; events: { id: number | string; user_ids: number[]; payload: Record<string, unknown> }[] };
    try {
      message = JSON.parse(payload);
    } catch {
      return;
    }
    const tail = tails.get(message.realm_id);
    if (!tail) return;
    // A process of the previous version notifies one event at a time: {realm_id, id, at, user_ids, payload}.
    const events = Array.isArray(message.events) ? message.events : [message as unknown as (typeof message.events)[number]];
    const now = Date.now();
    for (const e of events) {
      if (!Array.isArray(e.user_ids) || typeof e.payload !== 'object' || e.payload === null) continue;
      tail.ephemeralWaiting.push({
        id: Number(e.id),
        type: String(e.payload['type'] ?? ''),
        userIds: [...e.user_ids].sort((a, b) => a - b),
        flags: null,
        allPublicStreams: false,
        payload: e.payload,
        publishedAtMs: message.at,
        at: now,
      });
    }
    // Their predecessors committed before they were sent: a fetch started from now on sees them.
    tail.fetchAgain = true;
    void requestFetch(tail);
  });

  // Notifications may have been lost while the listener was down: catch up from the database.
  listener.onReset(() => {
    for (const tail of tails.values()) void requestFetch(tail);
  });

  // Organizations nobody polls here any more are forgotten.
  const sweeper = setInterval(() => {
    const idle = Date.now() - 10 * 60_000;
    for (const [realmId, tail] of tails) {
      if (tail.polls.size === 0 && tail.lastUsed < idle) tails.delete(realmId);
      else trim(tail);
    }
  }, 60_000);
  sweeper.unref();

  return {
    get parked() {
      return parkedCount;
    },
    queues,
    flush: () => queues.close(),
    watch(realmId) {
      if (!closed) tailFor(realmId);
    },
    async poll(queue, requestedAfter, { dontBlock, connection }) {
      if (closed) return { events: [heartbeat(requestedAfter)], ended: false };
      const tail = tailFor(queue.realmId);
      if (!tail.isReady) await tail.ready;
      if (dontBlock) {
        // A poll that will not wait answers with everything committed before it began: let every
        // announcement of those reach this process (barrier), and the fetch they started finish.
        await listener.barrier();
        if (tail.fetching) await tail.fetching;
      }
      let after = requestedAfter;
      let answer: PollAnswer;
      if (after >= tail.start) {
        answer = collect(tail, queue, after);
      } else {
        // Older than the buffer: the database has everything up to its newest id, the buffer what came
        // since. Batches are read until one brings something for this queue, ends it, or is not full,
        // so that a run of rows the queue does not take (another narrow, other types) never holds it in
        // place.
        answer = { events: [], ended: false };
        const seen = new Set<number>();
        let cursor = after;
        let newestId: number;
        let full: boolean;
        do {
          const fromDb = await eventsForQueueAfter(db, queue, cursor, options.batchLimit);
          newestId = fromDb.newestId;
          full = fromDb.events.length === options.batchLimit;
          for (const r of fromDb.events) {
            if (eventEndsQueue(r, queue)) {
              answer.ended = true;
              break;
            }
            seen.add(r.id);
            cursor = r.id;
            answer.events.push(...presentEvents(fromRow(r, 0), queue));
          }
        } while (full && !answer.ended && answer.events.length === 0 && !closed);
        if (!answer.ended && !full) {
          const later = collect(tail, queue, Math.max(after, tail.start));
          for (const e of later.events) if (!seen.has(e['id'] as number)) answer.events.push(e);
          answer.ended = later.ended;
          answer.events.sort((a, b) => (a['id'] as number) - (b['id'] as number));
          if (!answer.events.length) after = Math.max(cursor, Math.min(tail.start, newestId));
        }
      }
      // Events waiting for a queue answered a moment ago, from the buffer: held by the pacing (parked
      // below, answered when its time comes with whatever arrived meanwhile).
      const hold = answer.events.length && !answer.ended && !dontBlock && after >= tail.start ? pacing.holdFor(queue.id, Date.now()) : 0;
      if (hold <= 0 && (answer.events.length || answer.ended || dontBlock || connection?.gone)) {
        if (answer.events.length) pacing.answered(queue.id, Date.now());
        return answer;
      }
      if (connection?.gone) return answer;
      if (closed) return { events: [heartbeat(after)], ended: false };

      // Park until a fetch brings something, a heartbeat is due, the client leaves, or we stop.
      return new Promise((resolve) => {
        const poll = new ParkedPoll(tail, queue, after, resolve, unpark, pacing);
        if (hold > 0) poll.paceTimer = setTimeout(answerHeld, hold, poll);
        // The jitter in ten steps (at most a second each): Node keeps one timer list per distinct delay, so
        // a thousand polls parked at once share ten lists instead of making (and, once answered, removing)
        // one each.
        const jitterMs = Math.floor(Math.random() * 10) * Math.min(1000, options.heartbeatJitterMs / 10);
        poll.timer = setTimeout(ParkedPoll.heartbeat, options.heartbeatMs + jitterMs, poll);
        poll.timer.unref();
        // (never called at once: the connection was not gone above, and it tells of going away by an event)
        poll.stopListening = connection?.onGone(() => poll.done({ events: [], ended: false }));
        tail.polls.add(poll);
        let ofUser = tail.pollsByUser.get(queue.userId);
        if (!ofUser) tail.pollsByUser.set(queue.userId, (ofUser = new Set()));
        ofUser.add(poll);
        parkedCount++;
      });
    },
    close() {
      closed = true;
      clearInterval(sweeper);
      for (const tail of tails.values()) for (const poll of [...tail.polls]) poll.done({ events: [heartbeat(poll.after)], ended: false });
    },
  };
}

/** A heartbeat carries the id the client has already seen, so acknowledging it skips nothing. */
function heartbeat(after: number): Record<string, unknown> {
  return { type: 'heartbeat', id: after };
}
