// Giving memory back once the server goes quiet. Under load V8 lets the old generation grow (it
// collects it when that pays off, not when it would be smallest), so a process that has just served a
// burst keeps well over 100 MB of garbage until its next major collection, which a quiet server may
// not reach for minutes. Chrome collects in idle time; Node has no idle time to offer. So: once no
// request has arrived for IDLE_MS after some did, one full collection runs, and V8 releases the pages
// it frees. It costs a few tens of milliseconds of a process that has nothing else to do.
//
// It needs V8's collection function, which Node exposes with `--expose-gc` (`pnpm start` passes it).
// Started any other way, nothing happens.
import type { Server } from 'node:http';

/** Quiet this long (no request started) before collecting. */
const IDLE_MS = 2_000;
/** How often quiet is checked. */
const CHECK_MS = 1_000;

type Collect = () => void;

export interface IdleCollection {
  stop(): void;
}

export function startIdleCollection(
  server: Server,
  options: { collect?: Collect | undefined; idleMs?: number; checkMs?: number } = {},
): IdleCollection {
  const { collect = exposedCollector(), idleMs = IDLE_MS, checkMs = CHECK_MS } = options;
  if (!collect) return { stop() {} };
  let requests = 0;
  let seen = 0;
  let lastRequestAt = 0;
  let collected = true;
  // Requests still being served: a long one (a large upload or download) is not quiet time. A full
  // collection in the middle of one also left V8 running a full collection of the whole heap every
  // second or so while the file's chunks kept arriving (a 100 MB upload at a fifth of its speed in
  // bench/uploads.bench.ts).
  let inFlight = 0;
  server.on('request', (_req: unknown, res: { once(event: 'close', listener: () => void): unknown }) => {
    requests++;
    inFlight++;
    res.once('close', () => {
      inFlight--;
      requests++; // its end starts the quiet period anew
    });
  });
  const timer = setInterval(() => {
    const now = performance.now();
    if (requests !== seen || inFlight > 0) {
      seen = requests;
      lastRequestAt = now;
      collected = false;
      return;
    }
    if (collected || now - lastRequestAt < idleMs) return;
    collected = true;
    collect();
  }, checkMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** `gc` when the process was started with --expose-gc. */
function exposedCollector(): Collect | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function' ? () => (gc as () => void)() : undefined;
}
