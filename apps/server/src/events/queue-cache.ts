// The event queues this process serves polls for, kept in memory so that a poll costs no database
// write (and, once the queue is known here, no database round trip at all).
//
// A poll acknowledges events (last_event_id) and keeps its queue alive. Both are recorded here at once
// and written to the queue's row later, for every queue polled meanwhile in one statement
// (data/event-queues.repo.ts recordQueuePolls, every FLUSH_MS), where other processes and the
// housekeeping (expiry, pruning of acknowledged events) read them. The row's values only ever move
// forwards, so a late or repeated write is harmless.
//
// Across processes:
//   - A process that starts serving a queue reads its row (not cached here: after an eviction, or the
//     client's poll reached another process) and announces it (QUEUE_MOVED_CHANNEL); the others write
//     what they have for it and forget it, so that when the client comes back they read the row again
//     and never start from an acknowledgment older than one given elsewhere. A poll carries the
//     client's own last_event_id, which counts whatever the row says; a poll without one, arriving at
//     a process that does not have the queue while another polled it lately, waits until the others
//     have written their marks (FLUSH_MS and a margin; Zulip's clients always send last_event_id).
//   - A deleted queue (DELETE /events, deactivation, expiry by the housekeeping, on any process)
//     announces itself from a trigger (QUEUE_GONE_CHANNEL): every process forgets it, and its next poll
//     finds no row.
//   - Should notifications have been missed (the listener connection was lost), everything cached is
//     written and forgotten.
//   - Expiry: a queue cached here whose last poll here is older than its lifespan is read again (another
//     process may have kept it alive); the row decides.
import { randomUUID } from 'node:crypto';
import type { Db } from '../data/db.ts';
import { QUEUE_GONE_CHANNEL, QUEUE_MOVED_CHANNEL, readEventQueue, recordQueuePolls, type EventQueueRow } from '../data/event-queues.repo.ts';
import type { Logger } from '../http/logging.ts';
import type { DatabaseListener } from './listener.ts';

/** How often the polls recorded in memory are written (one statement for all of them). */
export const FLUSH_MS = 1_000;
/** A queue not polled here for this long is forgotten (its marks written first). */
const IDLE_MS = 90_000;
/** A poll that acknowledges nothing new refreshes the row's access time at most this often. */
const ACCESS_WRITE_MS = 10_000;
/** A poll without last_event_id of a queue not cached here waits FLUSH_MS and this long for the others' writes. */
const SETTLE_MARGIN_MS = 250;
/** At most this many queues per written statement. */
const FLUSH_BATCH = 5_000;

interface Entry {
  queue: EventQueueRow;
  /** The acknowledged event id (the queue's mark: events after it are delivered). */
  ack: number;
  writtenAck: number;
  /** Date.now() of the last poll here, and of the last one written to the row. */
  polledAt: number;
  writtenPolledAt: number;
}

export interface OpenedQueue {
  queue: EventQueueRow;
  /** Deliver the events after this id. */
  after: number;
}

export interface QueueCache {
  /**
   * A poll of the user's queue: records the acknowledgment (`acknowledged`, never moving the mark
   * backwards) and the access. Null when the queue does not exist, is someone else's, or has expired.
   */
  open(queueId: string, userId: number, acknowledged: number | null): Promise<OpenedQueue | null>;
  /** This process deleted the queue. */
  forget(queueId: string): void;
  /** Queues cached here (figures, tests). */
  readonly size: number;
  /** Writes what is recorded (tests, shutdown). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export function createQueueCache(db: Db, listener: DatabaseListener, logger: Logger): QueueCache {
  const token = randomUUID();
  const entries = new Map<string, Entry>();
  /** Reads under way, and whether the queue was announced gone or moved while one ran. */
  const loading = new Map<string, { promise: Promise<Entry | null>; stale: boolean }>();
  const dirty = new Set<string>();
  let flushing: Promise<void> | null = null;
  let closed = false;

  const marksOf = (ids: Iterable<string>, now: number) => {
    const marks: { id: string; acknowledged: number; idleSecs: number }[] = [];
    for (const id of ids) {
      const e = entries.get(id);
      if (!e) continue;
      marks.push({ id, acknowledged: e.ack, idleSecs: Math.max(0, (now - e.polledAt) / 1000) });
      e.writtenAck = e.ack;
      e.writtenPolledAt = e.polledAt;
    }
    return marks;
  };

  async function write(marks: { id: string; acknowledged: number; idleSecs: number }[]): Promise<void> {
    for (let i = 0; i < marks.length; i += FLUSH_BATCH) {
      const batch = marks.slice(i, i + FLUSH_BATCH);
      try {
        await recordQueuePolls(db, batch);
      } catch (error) {
        logger.warn({ err: error, queues: batch.length }, 'recording event queue polls failed');
        // Written again with the next flush (values only move forwards).
        for (const m of batch) {
          const e = entries.get(m.id);
          if (e) {
            e.writtenAck = -1;
            dirty.add(m.id);
          }
        }
      }
    }
  }

  function flush(): Promise<void> {
    if (flushing) return flushing.then(() => (dirty.size ? flush() : undefined));
    if (!dirty.size) return Promise.resolve();
    const marks = marksOf(dirty, Date.now());
    dirty.clear();
    flushing = write(marks).finally(() => {
      flushing = null;
    });
    return flushing;
  }

  /** Writes what is recorded for these queues, then forgets them. */
  function release(ids: string[]) {
    const marks = marksOf(
      ids.filter((id) => dirty.has(id)),
      Date.now(),
    );
    for (const id of ids) {
      entries.delete(id);
      dirty.delete(id);
      const l = loading.get(id);
      if (l) l.stale = true;
    }
    if (marks.length) void write(marks);
  }

  listener.on(QUEUE_MOVED_CHANNEL, (payload) => {
    const space = payload.indexOf(' ');
    if (space < 0 || payload.slice(0, space) === token) return;
    const id = payload.slice(space + 1);
    if (entries.has(id) || loading.has(id)) release([id]);
  });
  listener.on(QUEUE_GONE_CHANNEL, (payload) => {
    for (const id of payload.split(',')) {
      entries.delete(id);
      dirty.delete(id);
      const l = loading.get(id);
      if (l) l.stale = true;
    }
  });
  listener.onReset(() => release([...entries.keys(), ...loading.keys()]));

  const flusher = setInterval(() => void flush(), FLUSH_MS);
  flusher.unref();
  const sweeper = setInterval(() => {
    const idle = Date.now() - IDLE_MS;
    const old: string[] = [];
    for (const [id, e] of entries) if (e.polledAt < idle) old.push(id);
    if (old.length) release(old);
  }, IDLE_MS / 3);
  sweeper.unref();

  async function load(queueId: string, userId: number, settle: boolean): Promise<Entry | null> {
    const under = loading.get(queueId);
    if (under) {
      const e = await under.promise;
      return e && e.queue.userId === userId ? e : e ? null : read(queueId, userId, settle);
    }
    return read(queueId, userId, settle);
  }

  async function read(queueId: string, userId: number, settle: boolean): Promise<Entry | null> {
    const state = { promise: null as unknown as Promise<Entry | null>, stale: false };
    state.promise = (async () => {
      const recentSecs = (ACCESS_WRITE_MS + FLUSH_MS + SETTLE_MARGIN_MS) / 1000;
      let read = await readEventQueue(db, queueId, userId, token, recentSecs);
      if (!read) return null;
      if (settle && read.recentlyPolled) {
        // The poll gives no last_event_id: it starts at the row's mark, which a process that served
        // the queue until now may not have written yet (one that polled it lately: a process polling a
        // queue writes its access at least every ACCESS_WRITE_MS). The read told it to write now; its
        // batch writes anyway within FLUSH_MS. Read again after that.
        await new Promise((resolve) => setTimeout(resolve, FLUSH_MS + SETTLE_MARGIN_MS));
        read = await readEventQueue(db, queueId, userId, token, recentSecs);
        if (!read) return null;
      }
      const row = read.queue;
      const entry: Entry = { queue: row, ack: row.lastEventId, writtenAck: row.lastEventId, polledAt: Date.now(), writtenPolledAt: 0 };
      // Announced gone or moved while it was read: use it for this poll, keep nothing.
      if (!state.stale && !closed) entries.set(queueId, entry);
      return entry;
    })();
    loading.set(queueId, state);
    try {
      return await state.promise;
    } finally {
      if (loading.get(queueId) === state) loading.delete(queueId);
    }
  }

  return {
    get size() {
      return entries.size;
    },
    async open(queueId, userId, acknowledged) {
      const now = Date.now();
      let e = entries.get(queueId);
      if (e && (e.queue.userId !== userId || now - e.polledAt > e.queue.lifespanSecs * 1000)) {
        // Someone else's (answered as unknown, from the row), or maybe expired: the row decides.
        release([queueId]);
        e = undefined;
      }
      const loaded = !e;
      e ??= (await load(queueId, userId, acknowledged === null)) ?? undefined;
      if (!e) return null;
      e.polledAt = Date.now();
      if (acknowledged !== null && acknowledged > e.ack) e.ack = acknowledged;
      if (loaded) {
        // The first poll here is written at once (one statement per queue and process, not per poll):
        // from now on the row says the queue is being polled, and a poll without last_event_id on
        // another process waits for this one's marks (`settle` above).
        await write([{ id: queueId, acknowledged: e.ack, idleSecs: 0 }]);
        e.writtenAck = e.ack;
        e.writtenPolledAt = e.polledAt;
        return { queue: e.queue, after: e.ack };
      }
      const accessWriteMs = Math.min(ACCESS_WRITE_MS, (e.queue.lifespanSecs * 1000) / 10);
      if (e.ack !== e.writtenAck || e.polledAt - e.writtenPolledAt >= accessWriteMs) {
        if (entries.get(queueId) === e) dirty.add(queueId);
        else void write([{ id: queueId, acknowledged: e.ack, idleSecs: 0 }]);
      }
      return { queue: e.queue, after: e.ack };
    },
    forget(queueId) {
      entries.delete(queueId);
      dirty.delete(queueId);
      const l = loading.get(queueId);
      if (l) l.stale = true;
    },
    flush,
    async close() {
      closed = true;
      clearInterval(flusher);
      clearInterval(sweeper);
      await flush();
    },
  };
}
