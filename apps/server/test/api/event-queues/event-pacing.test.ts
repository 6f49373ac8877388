// Pacing of GET /events answers (events/pacing.ts): a queue answered within the pacing interval is
// answered again only once the interval has passed, with every event that arrived meanwhile; the first
// answer after a quiet while, and polls that must not wait (dont_block), are never held. The test
// server paces nothing unless told (test/helpers/test-server.ts); these servers are told.
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { pollEvents, registerQueue, sendMessage } from '../../helpers/queues.ts';

describe('pacing of GET /events answers', () => {
  // Long enough that the two messages below are sent within it on any machine; it is also what the
  // test waits for once.
  const env = useTestServer({ config: { eventPacingMs: 5_000 } });

  it('answers events that arrive within the interval after an answer together, once the interval has passed', async () => {
    const hamlet = env.client('hamlet');
    const iago = env.client('iago');
    const queue = await registerQueue(hamlet, { event_types: ['message'] });
    const dm = (content: string) => sendMessage(iago, { type: 'direct', to: JSON.stringify([env.users.hamlet.id]), content });

    const first = await dm('first');
    const answered = await pollEvents(hamlet, queue, { dontBlock: false });
    expect(answered.map((e) => e.message.id)).toEqual([first]);

    // The client polls again at once and parks; two messages arrive one after the other. Unpaced, the
    // second would come in an answer of its own.
    const next = pollEvents(hamlet, queue, { lastEventId: answered.at(-1).id, dontBlock: false });
    const second = await dm('second');
    const third = await dm('third');
    expect((await next).map((e) => e.message.id)).toEqual([second, third]);
  });
});

describe('pacing of GET /events answers, never holding', () => {
  // An interval no test waits out: a poll held by it would fail the test by its time limit.
  const env = useTestServer({ config: { eventPacingMs: 600_000 } });

  it('answers the first event of a quiet queue at once, and a dont_block poll at once after an answer', async () => {
    const hamlet = env.client('hamlet');
    const iago = env.client('iago');
    const queue = await registerQueue(hamlet, { event_types: ['message'] });
    const dm = (content: string) => sendMessage(iago, { type: 'direct', to: JSON.stringify([env.users.hamlet.id]), content });

    const parked = pollEvents(hamlet, queue, { dontBlock: false });
    const first = await dm('first');
    const answered = await parked;
    expect(answered.map((e) => e.message.id)).toEqual([first]);

    const second = await dm('second');
    const now = await pollEvents(hamlet, queue, { lastEventId: answered.at(-1).id, dontBlock: true });
    expect(now.map((e) => e.message.id)).toEqual([second]);
  });
});
