// Pacing of long-poll answers: at most one answer per queue every `intervalMs`, so that events
// arriving close together reach a client in one answer instead of one answer (and one re-poll) each.
//
// Zulip's clients poll again as soon as an answer arrives. In a large organization each user's queue
// receives events from the organization-wide channel (messages, reactions) and from its own channels
// (messages, typing) at once; answered one by one, every event costs a whole HTTP answer and request
// per recipient, which is most of a busy server's work (bench/organization.bench.ts). A poll that
// comes back within `intervalMs` of its previous answer and finds events waiting (or is woken by
// one) is therefore answered when the interval has passed, with everything that arrived meanwhile.
// A queue that is answered rarely (the usual case in a small organization) is never held: its first
// event goes out at once. Polls that must not wait (dont_block) are never paced.

export interface AnswerPacing {
  /** Milliseconds to hold an answer for this queue that is ready now (0: answer at once). */
  holdFor(queueId: string, now: number): number;
  /** The queue was answered at `now`. */
  answered(queueId: string, now: number): void;
  /** Queues remembered (for tests and metrics). */
  readonly size: number;
}

export function createAnswerPacing(intervalMs: number): AnswerPacing {
  /** When each queue was last answered, kept only while it can still hold an answer. */
  const lastAnswer = new Map<string, number>();
  let sweptAt = 0;
  const sweep = (now: number) => {
    // Entries older than the interval hold nothing: drop them, at most once per interval.
    if (now - sweptAt < intervalMs) return;
    sweptAt = now;
    for (const [id, at] of lastAnswer) if (now - at >= intervalMs) lastAnswer.delete(id);
  };
  return {
    holdFor(queueId, now) {
      if (intervalMs <= 0) return 0;
      const at = lastAnswer.get(queueId);
      if (at === undefined) return 0;
      const wait = at + intervalMs - now;
      return wait > 0 ? wait : 0;
    },
    answered(queueId, now) {
      if (intervalMs <= 0) return;
      lastAnswer.set(queueId, now);
      sweep(now);
    },
    get size() {
      return lastAnswer.size;
    },
  };
}
