// Giving memory back once the server goes quiet. Under load V8 lets the old generation grow (it
// collects it when that pays off, not when it would be smallest), so a process that has just served a
// burst keeps well over 100 MB of garbage until its next major collection, which a quiet server may
// not reach for minutes. Chrome collects in idle time; Node has no idle time to offer. So: once no
// request has arrived for IDLE_MS after some did, and the heap has grown by MIN_GROWTH_BYTES since the
// previous collection, one full collection runs, and V8 releases the pages it frees. It costs tens to
// hundreds of milliseconds (a ~70 MB heap on a busy machine) of a process that has nothing else to do;
// without the growth condition it ran after nearly every quiet moment, for little to give back.
//
// It needs V8's collection function, which Node exposes with `--expose-gc` (`pnpm start` passes it).
// Started any other way, nothing happens.
import type { Server } from 'node:http';
import { getHeapStatistics } from 'node:v8';

/** Quiet this long (no request started) before collecting. */
const IDLE_MS = 2_000;
/** How often quiet is checked. */
const CHECK_MS = 1_000;
/** Collect only when the heap holds at least this much more than after the previous collection. */
const MIN_GROWTH_BYTES = 32 * 1024 * 1024;

type Collect = () => void;

export interface IdleCollection {
  stop(): void;
}

export function startIdleCollection(
  server: Server,
  options: { collect?: Collect | undefined; idleMs?: number; checkMs?: number; heapUsed?: () => number; minGrowthBytes?: number } = {},
): IdleCollection {
  const { collect = exposedCollector(), idleMs = IDLE_MS, checkMs = CHECK_MS, heapUsed = usedHeapBytes, minGrowthBytes = MIN_GROWTH_BYTES } = options;
  if (!collect) return { stop() {} };
  let afterCollection = heapUsed();
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
    if (heapUsed() - afterCollection < minGrowthBytes) return;
    collect();
    afterCollection = heapUsed();
  }, checkMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

const usedHeapBytes = () => getHeapStatistics().used_heap_size;

/** `gc` when the process was started with --expose-gc. */
function exposedCollector(): Collect | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function' ? () => (gc as () => void)() : undefined;
}

// During a long transfer (a large upload or download): a young-generation collection after every
// TRANSFER_SCAVENGE_BYTES that pass. Each chunk of a request body (Node's HTTP parser copies it) and
// each chunk read from storage is an ArrayBuffer whose memory V8 counts as external; V8 frees the
// dead ones only at a scavenge, which it starts for them only once some 30 MB have piled up. Until
// then V8 counts them towards the old generation's limit, which after a full collection of a quiet
// server lies only ~9 MB above the heap (V8 grows it little when little is promoted): every ~10 MB of
// a transfer then started a full collection of the whole (~70 MB) heap, 50–300 ms each, for the
// whole transfer (bench/uploads.bench.ts: uploads at a third of the floor's speed, twice its CPU).
// A scavenge costs ~1 ms and frees them. Needs --expose-gc, as the idle collection (`pnpm start`).
const TRANSFER_SCAVENGE_BYTES = 4 * 1024 * 1024;
let transferredBytes = 0;
const collectYoung = youngCollector();

/** Tells of `bytes` of a transfer passing through (see above). */
export function transferred(bytes: number): void {
  if (!collectYoung) return;
  transferredBytes += bytes;
  if (transferredBytes < TRANSFER_SCAVENGE_BYTES) return;
  transferredBytes = 0;
  collectYoung();
}

/** A young-generation collection (`gc({ type: 'minor' })`) when the process was started with --expose-gc. */
function youngCollector(): Collect | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function' ? () => (gc as (options: { type: 'minor' }) => void)({ type: 'minor' }) : undefined;
}
