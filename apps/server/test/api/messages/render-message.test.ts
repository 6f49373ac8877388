// POST /messages/render: Markdown rendered as the requester would send it (mentions; channel links only
// to channels the requester may read), with nothing stored and nobody notified.
import { describe, expect, it } from 'vitest';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { useChannel } from '../../helpers/channels.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';

const env = useTestServer();
const secret = useChannel(env, 'iago', { name: 'render secret', invite_only: true }, ['iago']);
const pub = useChannel(env, 'iago', { name: 'render public' }, ['iago', 'polonius']);

const uid = (p: Person) => env.users[p].id;

async function render(as: Person, content: string): Promise<string> {
  const { data, error } = await env.client(as).POST('/messages/render', { body: { content } });
  if (!data) throw new Error(`render: ${JSON.stringify(error)}`);
  return data.rendered;
}

describe('POST /messages/render', () => {
  it('renders Markdown and mentions, storing nothing and sending no event', async () => {
    const messages = await env.running.deps.db.message.count();
    const mark = await markEvents(env);
    expect(await render('hamlet', '**foo**')).toBe('<p><strong>foo</strong></p>');
    const mention = await render('hamlet', 'hi @**Othello, the Moor of Venice** and @**all**');
    expect(mention).toContain(`<span class="user-mention" data-user-id="${uid('othello')}">@Othello, the Moor of Venice</span>`);
    expect(mention).toContain('<span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span>');
    expect(await env.running.deps.db.message.count()).toBe(messages);
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('renders the content as given: empty content, surrounding blanks, no length limit', async () => {
    expect(await render('hamlet', '')).toBe('');
    expect(await render('hamlet', '\n\n  text  \n')).toBe('<p>text</p>');
    const long = await render('hamlet', 'x'.repeat(12_000));
    expect(long).toBe(`<p>${'x'.repeat(12_000)}</p>`);
  });

  it('links only channels the requester may read; others stay text', async () => {
    const content = `#**${secret.name}** #**${pub.name}**`;
    const asHamlet = await render('hamlet', content);
    expect(asHamlet).not.toContain(`data-stream-id="${secret.id}"`);
    expect(asHamlet).toContain(`#**${secret.name}**`);
    expect(asHamlet).toContain(`<a class="stream" data-stream-id="${pub.id}"`);
    expect(await render('iago', content)).toContain(`<a class="stream" data-stream-id="${secret.id}"`);
    // A guest: only the public channels they are subscribed to.
    expect(await render('polonius', `#**${pub.name}**`)).toContain(`data-stream-id="${pub.id}"`);
    expect(await render('cordelia', `#**${secret.name}**`)).toBe(`<p>#**${secret.name}**</p>`);
  });

  it('refuses a request without content', async () => {
    const res = await env.raw('/messages/render', { method: 'POST', as: 'hamlet', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: '' });
    expectJsonError(res, 400, "Missing 'content' argument", 'REQUEST_VARIABLE_MISSING');
    expect(res.body.var_name).toBe('content');
  });

  it("answers the Python client's render_message (a form-encoded POST)", async () => {
    const res = await env.raw('/messages/render', {
      method: 'POST',
      as: 'othello',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': 'ZulipPython/0.9.0' },
      body: 'content=%2A%2Afoo%2A%2A',
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ result: 'success', msg: '', rendered: '<p><strong>foo</strong></p>' });
  });
});
