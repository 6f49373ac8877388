// Periodic pruning of expired event queues and of events no live queue still needs. Every process
// runs it (deleting the same rows twice is harmless); the first run waits a little after start.
import type { Db } from '../data/db.ts';
import { pruneEventsAndQueues } from '../data/event-queues.repo.ts';
import type { Logger } from '../http/logging.ts';

/** Queues may ask for up to 7 days of life (mobile clients do); events older than that serve nobody. */
export const MAX_QUEUE_LIFESPAN_SECS = 7 * 24 * 3600;

export function startEventHousekeeping(db: Db, logger: Logger, everyMs = 60_000): { stop(): void } {
  let running = false;
  const run = async () => {
    if (running) return;
    running = true;
    try {
      const pruned = await pruneEventsAndQueues(db, { graceSecs: 120, maxAgeSecs: MAX_QUEUE_LIFESPAN_SECS + 3600 });
      if (pruned.queues || pruned.events) logger.debug(pruned, 'pruned event queues and events');
    } catch (error) {
      logger.warn({ err: error }, 'event pruning failed');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void run(), everyMs + Math.floor(Math.random() * 5_000));
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
