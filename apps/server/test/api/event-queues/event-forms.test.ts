// GET /events: an event is serialised once per form and the text shared by the queues that receive it
// in that form (src/events/present-forms.ts). Queues of different kinds, and recipients with different
// flags, each get their own form; the sender's queue alone gets its local_message_id. (Outside
// production, every shared text is also checked against the queue's own serialisation.)
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { pollEvents, registerQueue, sendMessage } from '../../helpers/queues.ts';

const env = useTestServer();

describe('event forms shared between queues', () => {
  it('gives each kind of queue and each recipient its own form of the same message', async () => {
    const hamlet = env.client('hamlet');
    const othello = env.client('othello');
    const iago = env.client('iago');
    const html = await registerQueue(hamlet, { event_types: ['message'], apply_markdown: true });
    const markdown = await registerQueue(hamlet, { event_types: ['message'], apply_markdown: false });
    const othelloFirst = await registerQueue(othello, { event_types: ['message'], apply_markdown: true });
    const othelloSecond = await registerQueue(othello, { event_types: ['message'], apply_markdown: true });
    const sender = await registerQueue(iago, { event_types: ['message'], apply_markdown: true });
    const source = 'Forms for @**King Hamlet**, *not* for everyone';
    const id = await sendMessage(iago, {
      type: 'direct',
      to: JSON.stringify([env.users.hamlet.id, env.users.othello.id]),
      content: source,
      queue_id: sender.queue_id,
      local_id: '7.01',
    });

    const only = async (client: typeof hamlet, queue: { queue_id: string; last_event_id: number }) => {
      const events = (await pollEvents(client, queue)).filter((e) => e.type === 'message');
      expect(events.map((e) => e.message.id)).toEqual([id]);
      return events[0];
    };
    // Polled in this order, so that the later queues of an existing form take the shared text.
    const [a, b, c, d, e] = [await only(hamlet, html), await only(othello, othelloFirst), await only(othello, othelloSecond), await only(hamlet, markdown), await only(iago, sender)];

    // The mention is hamlet's own flag, in both of his forms; othello's two queues share one form without it.
    expect(a.flags).toContain('mentioned');
    expect(d.flags).toContain('mentioned');
    expect(b.flags).not.toContain('mentioned');
    expect(c).toEqual(b);
    // apply_markdown: rendered HTML, or the source.
    expect(a.message.content).toContain('<em>not</em>');
    expect(b.message.content).toBe(a.message.content);
    expect(d.message.content).toBe(source);
    expect(d.message.content_type).toBe('text/x-markdown');
    // local_message_id reaches the sending queue only.
    expect(e.local_message_id).toBe('7.01');
    for (const other of [a, b, c, d]) expect(other).not.toHaveProperty('local_message_id');
  });
});
