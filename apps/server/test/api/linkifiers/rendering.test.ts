// Linkifiers at work (issue 25, part 3): how they link text of new and edited messages (several
// linkifiers, overlaps and their order, never inside code or links, Unicode, Zulip's boundary rules),
// `topic_links` of message objects and events (linkifiers and raw URLs), rendering that is not
// retroactive, a second server process rendering with a list changed on the first, and a pattern that
// would stall a backtracking engine.
import { beforeEach, describe, expect, it } from 'vitest';
import { createParleyClient } from '@parley/client';
import { useSecondProcess, useTestServer } from '../../helpers/test-server.ts';
import { useChannel } from '../../helpers/channels.ts';
import { pollUntil, registerQueue, sendMessage } from '../../helpers/queues.ts';
import { waitFor } from '../../helpers/wait.ts';

const env = useTestServer();
const second = useSecondProcess(env);
const channel = useChannel(env, 'iago', { name: 'linkified' }, ['iago', 'hamlet', 'othello']);
const db = () => env.running.deps.db;

async function addLinkifier(pattern: string, url_template: string): Promise<number> {
  const { data, error } = await env.client('iago').POST('/realm/filters', { body: { pattern, url_template } });
  if (!data) throw new Error(`add-linkifier: ${JSON.stringify(error)}`);
  return data.id;
}

async function render(content: string, client = env.client('hamlet')): Promise<string> {
  const { data, error } = await client.POST('/messages/render', { body: { content } });
  if (!data) throw new Error(`render: ${JSON.stringify(error)}`);
  return data.rendered;
}

const send = (content: string, topic = 'lunch') => sendMessage(env.client('hamlet'), { type: 'stream', to: channel.name, topic, content });

async function fetchMessage(id: number) {
  const { data, error } = await env.client('othello').GET('/messages/{message_id}', { params: { path: { message_id: id } } });
  if (!data) throw new Error(`get-message: ${JSON.stringify(error)}`);
  return data.message;
}

const link = (href: string, text: string) => `<a href="${href}">${text}</a>`;
const trac = (id: string) => link(`https://trac.example.com/ticket/${id}`, `#${id}`);

beforeEach(async () => {
  await db().realmLinkifier.deleteMany({ where: { realmId: env.realmId } });
});

describe('POST /realm/filters: linkifiers in messages', () => {
  it("link text where Zulip's boundary rules allow, never in code, links or raw URLs", async () => {
    await addLinkifier('#(?P<id>[0-9]{2,8})', 'https://trac.example.com/ticket/{id}');
    expect(await render('We should fix #224 #336 #446 and #115, but not issue#124 or #1124z or [trac #15](https://trac.example.com/ticket/16) today.')).toBe(
      `<p>We should fix ${trac('224')} ${trac('336')} ${trac('446')} and ${trac('115')}, but not issue#124 or #1124z or ${link('https://trac.example.com/ticket/16', 'trac #15')} today.</p>`,
    );
    const cases: Array<[string, string]> = [
      ['Hello #123World', '<p>Hello #123World</p>'],
      ['Hello#123 World', '<p>Hello#123 World</p>'],
      ['Hello\u00a0#123\u00a0World', `<p>Hello\u00a0${trac('123')}\u00a0World</p>`],
      ['チケットは#123です', '<p>チケットは#123です</p>'],
      ['チケットは #123 です', `<p>チケットは ${trac('123')} です</p>`],
      ['(#123)', `<p>(${trac('123')})</p>`],
      ['"#123"', `<p>"${trac('123')}"</p>`],
      ['#123@', `<p>${trac('123')}@</p>`],
      [')#123(', '<p>)#123(</p>'],
      ['##123', '<p>##123</p>'],
      ['`#123` and ``#456``', '<p><code>#123</code> and <code>#456</code></p>'],
      ['```\n#123\n```', '<div class="codehilite"><pre><span></span><code>#123\n</code></pre></div>'],
      ['    #123 indented code', '<div class="codehilite"><pre><span></span><code>#123 indented code\n</code></pre></div>'],
      ['https://example.com/#123 then #456', `<p>${link('https://example.com/#123', 'https://example.com/#123')} then ${trac('456')}</p>`],
      ['**see #123** and **#456**', `<p><strong>see ${trac('123')}</strong> and <strong>#456</strong></p>`],
      ['#12\n#34', `<p>${trac('12')}<br>\n${trac('34')}</p>`],
      ['> quoted #77', `<blockquote>\n<p>quoted ${trac('77')}</p>\n</blockquote>`],
    ];
    for (const [content, html] of cases) expect(await render(content), content).toBe(html);
  });

  it('apply in their order: an earlier linkifier wins where matches overlap, and reordering changes that', async () => {
    const abc = await addLinkifier('(?P<id>ABC-[0-9]+)', 'https://trac.example.com/ticket/{id}');
    const dashed = await addLinkifier('(?P<id>[A-Z][A-Z0-9]*-[0-9]+)', 'https://other-trac.example.com/ticket/{id}');
    const word = await addLinkifier('(?P<id>[A-Z][A-Z0-9]+)', 'https://yet-another-trac.example.com/ticket/{id}');
    expect(await render('ASD-123 ABC-123 QWE, and [trac ABC-123](https://trac.example.com/ticket/16)')).toBe(
      `<p>${link('https://other-trac.example.com/ticket/ASD-123', 'ASD-123')} ${link('https://trac.example.com/ticket/ABC-123', 'ABC-123')} ` +
        `${link('https://yet-another-trac.example.com/ticket/QWE', 'QWE')}, and ${link('https://trac.example.com/ticket/16', 'trac ABC-123')}</p>`,
    );
    expect((await env.client('iago').PATCH('/realm/linkifiers', { body: { ordered_linkifier_ids: [word, abc, dashed] } })).response.status).toBe(200);
    expect(await render('ASD-123 QWE')).toBe(
      `<p>${link('https://yet-another-trac.example.com/ticket/ASD', 'ASD')}-123 ${link('https://yet-another-trac.example.com/ticket/QWE', 'QWE')}</p>`,
    );
  });

  it('expand RFC 6570 templates with Unicode and reserved characters percent-encoded, and link only to allowed schemes', async () => {
    await addLinkifier('#(?P<tag>\\pL+)', 'https://tags.example.com/{tag}');
    await addLinkifier('url-(?P<id>[0-9]+)', 'https://example.com/A%20Test/%%%ba/{id}');
    await addLinkifier('q:(?P<q>[^ ]+)', 'https://search.example.com/{?q}');
    await addLinkifier('js-(?P<x>[0-9]+)', 'javascript:alert({x})');
    expect(await render('#café, #日本 and #𝒜b; url-123; q:a&b=c and js-1')).toBe(
      `<p>${link('https://tags.example.com/caf%C3%A9', '#café')}, ${link('https://tags.example.com/%E6%97%A5%E6%9C%AC', '#日本')} and ` +
        `${link('https://tags.example.com/%F0%9D%92%9Cb', '#𝒜b')}; ${link('https://example.com/A%20Test/%25%25%ba/123', 'url-123')}; ` +
        `${link('https://search.example.com/?q=a%26b%3Dc', 'q:a&amp;b=c')} and js-1</p>`,
    );
  });

  it('fill topic_links of messages and their events (linkifiers, then raw URLs); topic edits carry the new ones', async () => {
    await addLinkifier('#(?P<id>[0-9]{2,8})', 'https://trac.example.com/ticket/{id}');
    await addLinkifier('hello#(?P<id>[0-9]+)', 'https://trac.example.com/hello/{id}');
    const queue = await registerQueue(env.client('othello'), { event_types: ['message', 'update_message'] });
    const id = await send('topic links', '#111 https://google.com hello#123 zulip.com/x #222');
    const expected = [
      { text: '#111', url: 'https://trac.example.com/ticket/111' },
      { text: 'https://google.com', url: 'https://google.com' },
      { text: 'hello#123', url: 'https://trac.example.com/hello/123' },
      { text: 'zulip.com/x', url: 'https://zulip.com/x' },
      { text: '#222', url: 'https://trac.example.com/ticket/222' },
    ];
    expect((await fetchMessage(id)).topic_links).toEqual(expected);
    const { data } = await env.client('othello').GET('/messages', { params: { query: { anchor: String(id), num_before: 0, num_after: 0 } } });
    expect(data!.messages[0]!.topic_links).toEqual(expected);
    const edit = await env.client('hamlet').PATCH('/messages/{message_id}', { params: { path: { message_id: id } }, body: { topic: 'now #333', propagate_mode: 'change_one' } });
    expect(edit.response.status).toBe(200);
    const events = await pollUntil(env.client('othello'), queue, (got) => got.some((e) => e.type === 'update_message'));
    expect(events.find((e) => e.type === 'message').message.topic_links).toEqual(expected);
    expect(events.find((e) => e.type === 'update_message').topic_links).toEqual([{ text: '#333', url: 'https://trac.example.com/ticket/333' }]);
    // Direct messages have no topic, hence no topic links.
    const direct = await sendMessage(env.client('hamlet'), { type: 'direct', to: JSON.stringify([env.users.othello.id]), content: '#444' });
    expect((await fetchMessage(direct)).topic_links).toEqual([]);
  });

  it('are not retroactive: sent messages keep their rendering; edits render with the linkifiers of the moment', async () => {
    const linkifier = await addLinkifier('#(?P<id>[0-9]{2,8})', 'https://trac.example.com/ticket/{id}');
    const before = await send('fixed #42');
    expect((await fetchMessage(before)).content).toBe(`<p>fixed ${trac('42')}</p>`);
    expect((await env.client('iago').DELETE('/realm/filters/{filter_id}', { params: { path: { filter_id: linkifier } } })).response.status).toBe(200);
    expect((await fetchMessage(before)).content).toBe(`<p>fixed ${trac('42')}</p>`);
    expect((await fetchMessage(await send('fixed #42'))).content).toBe('<p>fixed #42</p>');
    const edit = await env.client('hamlet').PATCH('/messages/{message_id}', { params: { path: { message_id: before } }, body: { content: 'fixed #43' } });
    expect(edit.response.status).toBe(200);
    expect((await fetchMessage(before)).content).toBe('<p>fixed #43</p>');
  });

  it('reach a second server process once the change is committed', async () => {
    const onSecond = createParleyClient({ site: second.running.url, email: env.users.hamlet.email, apiKey: env.users.hamlet.apiKey });
    expect(await render('ticket #42', onSecond)).toBe('<p>ticket #42</p>');
    await addLinkifier('#(?P<id>[0-9]{2,8})', 'https://trac.example.com/ticket/{id}');
    // The first process answered after hearing its own invalidation; the second hears it moments later.
    const rendered = await waitFor(async () => {
      const html = await render('ticket #42', onSecond);
      return html.includes('<a ') ? html : null;
    }, { what: 'the second process to render with the new linkifier' });
    expect(rendered).toBe(`<p>ticket ${trac('42')}</p>`);
  });

  it('cannot stall the server: a pattern with exponential backtracking is matched in linear time', async () => {
    // `(a+)+$` against "aaaa…a!" takes a backtracking engine 2^n steps; RE2 matches it in one pass.
    await addLinkifier('(?P<run>(a+)+)$', 'https://example.com/{run}');
    const content = `${'a'.repeat(9_990)}!`;
    const id = await send(content, `${'a'.repeat(58)}!`);
    const message = await fetchMessage(id);
    expect(message.content).toBe(`<p>${content}</p>`);
    expect(message.topic_links).toEqual([]);
    // The server goes on serving; the same pattern links where it does match.
    expect(await render('aaaa')).toBe(`<p>${link('https://example.com/aaaa', 'aaaa')}</p>`);
    expect((await env.client('othello').GET('/realm/linkifiers')).response.status).toBe(200);
  });
});
