// The message renderer (src/lib/markdown.ts): Zulip's Markdown dialect to Zulip's HTML, mention
// flags and extractReferences. Expected HTML follows Zulip's own fixtures
// (zerver/tests/fixtures/markdown_test_cases.json, the "marked_expected_output" where the backend adds
// syntax highlighting) and Zulip's mention/channel-link markup. Pure functions: no server, no database.
import { describe, expect, it } from 'vitest';
import { extractReferences, renderMarkdown, renderMessage, type MarkdownContext } from '../../src/lib/markdown.ts';

const ALICE = { id: 12, full_name: 'Alice Smith' };
const BOB = { id: 20, full_name: 'Bob' };
/** Two users share the name "Sam Twin" (one spelled in another case). */
const TWIN_A = { id: 31, full_name: 'Sam Twin' };
const TWIN_B = { id: 32, full_name: 'sam twin' };
const SUPPORT = { id: 5, name: 'support' };
const GENERAL = { id: 7, name: 'general' };
const DENMARK = { id: 8, name: 'Denmark' };

const ctx: MarkdownContext = {
  users: [ALICE, BOB, TWIN_A, TWIN_B],
  groups: [SUPPORT],
  channels: [GENERAL, DENMARK],
};
const EMPTY: MarkdownContext = { users: [], groups: [], channels: [] };

/** The HTML of content rendered with the default context. */
const html = (content: string, context: MarkdownContext = ctx) => renderMessage(content, context).html;

const codeBlock = (code: string, language?: string) =>
  `<div class="codehilite"${language === undefined ? '' : ` data-code-language="${language}"`}><pre><span></span><code>${code}</code></pre></div>`;
const emoji = (name: string, code: string, label = name) =>
  `<span aria-label="${label}" class="emoji emoji-${code}" role="img" title="${label}">:${name}:</span>`;
const userMention = (user: { id: number; full_name: string }) => `<span class="user-mention" data-user-id="${user.id}">@${user.full_name}</span>`;

describe('blocks and inline formatting', () => {
  it('renders nothing for empty or blank content', () => {
    expect(html('')).toBe('');
    expect(html('  \n\n \t')).toBe('');
  });

  it('makes paragraphs, with a single newline as a line break', () => {
    expect(html('test_input')).toBe('<p>test_input</p>');
    expect(html('test\nbar')).toBe('<p>test<br>\nbar</p>');
    expect(html('one\n\ntwo')).toBe('<p>one</p>\n<p>two</p>');
    expect(html("it's lunch time")).toBe("<p>it's lunch time</p>");
  });

  it('renders bold, emphasis and strikethrough', () => {
    expect(html('**foo**')).toBe('<p><strong>foo</strong></p>');
    expect(html('*foo*')).toBe('<p><em>foo</em></p>');
    expect(html('**bold *and em***')).toBe('<p><strong>bold <em>and em</em></strong></p>');
    expect(html('A *foo bar* is a *baz quux*')).toBe('<p>A <em>foo bar</em> is a <em>baz quux</em></p>');
    expect(html('const char *x = (char *)y')).toBe('<p>const char *x = (char *)y</p>');
    expect(html('I like ~~software~~ hardware')).toBe('<p>I like <del>software</del> hardware</p>');
    expect(html('I ~~ like software ~~ love hardware')).toBe('<p>I <del> like software </del> love hardware</p>');
    expect(html('~~test http://xx.xx link~~')).toBe('<p><del>test <a href="http://xx.xx">http://xx.xx</a> link</del></p>');
  });

  it('has no underscore emphasis and takes longer tilde runs literally', () => {
    expect(html('_foo_')).toBe('<p>_foo_</p>');
    expect(html('__foo__')).toBe('<p>__foo__</p>');
    expect(html('snake_case_name')).toBe('<p>snake_case_name</p>');
    expect(html('~~~~~~~~xxxxxxxxx:  xxxxxxxxxxxx xxxxx x xxxxxxxx~~~~~~')).toBe('<p>~~~~~~~~xxxxxxxxx:  xxxxxxxxxxxx xxxxx x xxxxxxxx~~~~~~</p>');
    expect(html('~~~a~~')).toBe('<p>~~~a~~</p>');
  });

  it('renders # headings h1 to h6 only, and no setext headings', () => {
    expect(html('# Hello world')).toBe('<h1>Hello world</h1>');
    expect(html('#  Hello world')).toBe('<h1>Hello world</h1>');
    expect(html('### Three')).toBe('<h3>Three</h3>');
    expect(html('###### Hello world')).toBe('<h6>Hello world</h6>');
    expect(html('####### Hello world')).toBe('<p>####### Hello world</p>');
    expect(html('#Hello world')).toBe('<p>#Hello world</p>');
    expect(html('Title\n=====')).toBe('<p>Title<br>\n=====</p>');
  });

  it('renders a horizontal rule and tables', () => {
    expect(html('---')).toBe('<hr>');
    expect(html('This is a table:\n\nFirst header  | Second header\n------------- | -------------\nContent cell  | Content cell\n')).toBe(
      '<p>This is a table:</p>\n<table>\n<thead>\n<tr>\n<th>First header</th>\n<th>Second header</th>\n</tr>\n</thead>\n' +
        '<tbody>\n<tr>\n<td>Content cell</td>\n<td>Content cell</td>\n</tr>\n</tbody>\n</table>',
    );
  });

  it('renders block quotes', () => {
    expect(html('> Hello World!')).toBe('<blockquote>\n<p>Hello World!</p>\n</blockquote>');
    expect(html('> Hello World!\n\n> Hello Universe!')).toBe('<blockquote>\n<p>Hello World!</p>\n</blockquote>\n<blockquote>\n<p>Hello Universe!</p>\n</blockquote>');
    expect(html('>Google logo today:\n>Kinda boring')).toBe('<blockquote>\n<p>Google logo today:<br>\nKinda boring</p>\n</blockquote>');
  });

  it('renders lists as Zulip does', () => {
    expect(html('Some text with a list:\n\n* One item\n* Two items\n* Three items')).toBe(
      '<p>Some text with a list:</p>\n<ul>\n<li>One item</li>\n<li>Two items</li>\n<li>Three items</li>\n</ul>',
    );
    expect(html('Some text with a hanging list:\n- One item\n- Two items')).toBe('<p>Some text with a hanging list:</p>\n<ul>\n<li>One item</li>\n<li>Two items</li>\n</ul>');
    expect(html('+ One\n+ Two')).toBe('<ul>\n<li>One</li>\n<li>Two</li>\n</ul>');
    // A sub-list follows its item's text directly.
    expect(html('Nested list\n* I am outer list\n  * I am inner nested list first item\n  * I am inner nested list second item')).toBe(
      '<p>Nested list</p>\n<ul>\n<li>I am outer list<ul>\n<li>I am inner nested list first item</li>\n<li>I am inner nested list second item</li>\n</ul>\n</li>\n</ul>',
    );
    expect(html('3. A\n3. B\n3. C')).toBe('<ol start="3">\n<li>A</li>\n<li>B</li>\n<li>C</li>\n</ol>');
    expect(html('1. A\n1. B\n   1. C\n1. D')).toBe('<ol>\n<li>A</li>\n<li>B<ol>\n<li>C</li>\n</ol>\n</li>\n<li>D</li>\n</ol>');
    expect(html('Plain list\n\n* Alpha\n\n* Beta')).toBe('<p>Plain list</p>\n<ul>\n<li>\n<p>Alpha</p>\n</li>\n<li>\n<p>Beta</p>\n</li>\n</ul>');
  });
});

describe('code', () => {
  it('escapes code spans, which keep Markdown and HTML literal', () => {
    expect(html('`<&nbsp;>`')).toBe('<p><code>&lt;&amp;nbsp;&gt;</code></p>');
    expect(html('run `**not bold**` now')).toBe('<p>run <code>**not bold**</code> now</p>');
    expect(html('```inline code```')).toBe('<p><code>inline code</code></p>');
  });

  it('renders fenced code as a codehilite block, with Pygments’ language name', () => {
    expect(html('```python\ndef speak(self):\n    x = 1\n```')).toBe(codeBlock('def speak(self):\n    x = 1\n', 'Python'));
    expect(html('Hamlet said:\n~~~~.python \ndef speak(self):\n    x = 1\n~~~~')).toBe(`<p>Hamlet said:</p>\n${codeBlock('def speak(self):\n    x = 1\n', 'Python')}`);
    expect(html('``` py2\nprint 1\n```')).toBe(codeBlock('print 1\n', 'Python 2.x'));
    expect(html('```js\nlet a;\n```')).toBe(codeBlock('let a;\n', 'JavaScript'));
    expect(html('``` inventedlanguage\nx\n```')).toBe(codeBlock('x\n', 'inventedlanguage'));
    expect(html('```\nfenced code\n```')).toBe(codeBlock('fenced code\n'));
    expect(html('~~~\nint x = 3\n* 4;\n~~~')).toBe(codeBlock('int x = 3\n* 4;\n'));
  });

  it('escapes code blocks, quotes included, and never passes HTML through', () => {
    expect(html('& &amp; &amp;amp;\n~~~~\n& &amp; &amp;amp;\n~~~~\n    & &amp; &amp;amp;')).toBe(
      `<p>&amp; &amp; &amp;amp;</p>\n${codeBlock('&amp; &amp;amp; &amp;amp;amp;\n')}\n${codeBlock('&amp; &amp;amp; &amp;amp;amp;\n')}`,
    );
    expect(html('~~~\n<h1>stay normal</h1>\n~~~')).toBe(codeBlock('&lt;h1&gt;stay normal&lt;/h1&gt;\n'));
    expect(html('```\nprint("it\'s")\n```')).toBe(codeBlock('print(&quot;it&#39;s&quot;)\n'));
  });

  it('drops trailing blanks and blank edge lines, keeps inner blank lines', () => {
    expect(html('Hamlet once said\n~~~~\ndef func():\n    x = 1\n\n    y = 2\t\t\n\n    z = 3       \n~~~~\nAnd all was good.')).toBe(
      `<p>Hamlet once said</p>\n${codeBlock('def func():\n    x = 1\n\n    y = 2\n\n    z = 3\n')}\n<p>And all was good.</p>`,
    );
    expect(html('```tex\n\n\\pi\n\n```')).toBe(codeBlock('\\pi\n', 'TeX'));
  });

  it('runs an unclosed fence to the end, and renders indented code', () => {
    expect(html('Then\n~~~~\ndef foobar(self):\n    return self.baz()')).toBe(`<p>Then</p>\n${codeBlock('def foobar(self):\n    return self.baz()\n')}`);
    expect(html('    def foo(): pass')).toBe(codeBlock('def foo(): pass\n'));
    expect(html('  notcode')).toBe('<p>notcode</p>');
  });
});

describe('Zulip fences: quote and spoiler', () => {
  it('renders ```quote and ~~~ quote as a block quote of Markdown', () => {
    expect(html('Hamlet said:\n~~~ quote\nTo be or **not** to be.\n\nThat is the question\n~~~')).toBe(
      '<p>Hamlet said:</p>\n<blockquote>\n<p>To be or <strong>not</strong> to be.</p>\n<p>That is the question</p>\n</blockquote>',
    );
    expect(html('```quote\nText in\nmultiple lines.\n```\n\n> Text in a single line.')).toBe(
      '<blockquote>\n<p>Text in<br>\nmultiple lines.</p>\n</blockquote>\n<blockquote>\n<p>Text in a single line.</p>\n</blockquote>',
    );
    expect(html('```quote\n# line 1\n#line 2\n```')).toBe('<blockquote>\n<h1>line 1</h1>\n<p>#line 2</p>\n</blockquote>');
  });

  it('nests quotes and code inside a fenced quote', () => {
    expect(html('Hamlet said:\n~~~ quote\nPolonius said:\n> This above all: to thine ownself be true,\nAnd it must follow\n\nWhat good advice!\n~~~')).toBe(
      '<p>Hamlet said:</p>\n<blockquote>\n<p>Polonius said:</p>\n<blockquote>\n<p>This above all: to thine ownself be true,<br>\nAnd it must follow</p>\n</blockquote>\n<p>What good advice!</p>\n</blockquote>',
    );
    expect(html('```quote\nSee:\n```python\nx = 1\n```\nDone\n```\nafter')).toBe(
      `<blockquote>\n<p>See:</p>\n${codeBlock('x = 1\n', 'Python')}\n<p>Done</p>\n</blockquote>\n<p>after</p>`,
    );
  });

  it('closes the innermost open fence first (Zulip’s fenced_complexly_nested_quote)', () => {
    const input =
      "I heard about this second hand...\n~~~ quote\n\nHe said:\n~~~ quote\nThe customer is complaining.\n\nThey looked at this code:\n``` \ndef hello(): print 'hello\n```\n" +
      "They would prefer:\n~~~\ndef hello()\n  puts 'hello'\nend\n~~~\n\nPlease advise.\n~~~\n\nShe said:\n~~~ quote\nJust send them this:\n```\necho \"hello\n\"\n```\n~~~";
    expect(html(input)).toBe(
      '<p>I heard about this second hand...</p>\n<blockquote>\n<p>He said:</p>\n<blockquote>\n<p>The customer is complaining.</p>\n<p>They looked at this code:</p>\n' +
        `${codeBlock('def hello(): print &#39;hello\n')}\n<p>They would prefer:</p>\n</blockquote>\n<p>def hello()<br>\nputs 'hello'<br>\nend</p>\n</blockquote>\n` +
        `<p>Please advise.</p>\n${codeBlock('She said:\n~~~ quote\nJust send them this:\n```\necho &quot;hello\n&quot;\n```\n')}`,
    );
  });

  it('renders ```spoiler with its header as Markdown', () => {
    expect(html('```spoiler header\ncontent\n```\noutside spoiler\n')).toBe(
      '<div class="spoiler-block"><div class="spoiler-header">\n<p>header</p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>content</p>\n</div></div>\n<p>outside spoiler</p>',
    );
    expect(html('```spoiler\ncontent\n```')).toBe(
      '<div class="spoiler-block"><div class="spoiler-header">\n</div><div class="spoiler-content" aria-hidden="true">\n<p>content</p>\n</div></div>',
    );
    expect(html('```spoiler <script>alert(1)</script>\n<script>alert(1)</script>\n```')).toBe(
      '<div class="spoiler-block"><div class="spoiler-header">\n<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n</div></div>',
    );
    expect(html('~~~quote\n```spoiler [Header](https://example.com) :tada:\ncontent\n```\noutside spoiler\n~~~\noutside quote')).toBe(
      '<blockquote>\n<div class="spoiler-block"><div class="spoiler-header">\n' +
        `<p><a href="https://example.com">Header</a> ${emoji('tada', '1f389')}</p>\n` +
        '</div><div class="spoiler-content" aria-hidden="true">\n<p>content</p>\n</div></div>\n<p>outside spoiler</p>\n</blockquote>\n<p>outside quote</p>',
    );
  });
});

describe('links', () => {
  it('links bare URLs, www. names, known domains and e-mail addresses', () => {
    expect(html('https://github.com')).toBe('<p><a href="https://github.com">https://github.com</a></p>');
    expect(html(' some text https://www.google.com/baz_(match)?with=foo&bar=baz with extras')).toBe(
      '<p>some text <a href="https://www.google.com/baz_(match)?with=foo&amp;bar=baz">https://www.google.com/baz_(match)?with=foo&amp;bar=baz</a> with extras</p>',
    );
    expect(html('(http://en.wikipedia.org/wiki/Each-way_(bet))')).toBe(
      '<p>(<a href="http://en.wikipedia.org/wiki/Each-way_(bet)">http://en.wikipedia.org/wiki/Each-way_(bet)</a>)</p>',
    );
    expect(html('end of sentence https://t.co.')).toBe('<p>end of sentence <a href="https://t.co">https://t.co</a>.</p>');
    expect(html('with www www.zulip.com/foo ok?')).toBe('<p>with www <a href="http://www.zulip.com/foo">www.zulip.com/foo</a> ok?</p>');
    expect(html('with short example.com url')).toBe('<p>with short <a href="http://example.com">example.com</a> url</p>');
    expect(html('a@b.com')).toBe('<p><a href="mailto:a@b.com">a@b.com</a></p>');
    expect(html('http://leo@foo.com/my/file')).toBe('<p><a href="http://leo@foo.com/my/file">http://leo@foo.com/my/file</a></p>');
  });

  it('does not link file names or non-URLs', () => {
    expect(html('readme.md')).toBe('<p>readme.md</p>');
    expect(html('python class views.py is')).toBe('<p>python class views.py is</p>');
    expect(html('a.commandstuff()')).toBe('<p>a.commandstuff()</p>');
    expect(html('love...it')).toBe('<p>love...it</p>');
  });

  it('renders [text](url) links; empty text shows the URL', () => {
    expect(html('[hello](https://github.com)')).toBe('<p><a href="https://github.com">hello</a></p>');
    expect(html('[](https://github.com)')).toBe('<p><a href="https://github.com">https://github.com</a></p>');
    expect(html('[  ](https://github.com)')).toBe('<p><a href="https://github.com">https://github.com</a></p>');
    expect(html('[mail me](mailto:a@b.com)')).toBe('<p><a href="mailto:a@b.com">mail me</a></p>');
    expect(html('**[Static types](https://blog.zulip.com/x)**')).toBe('<p><strong><a href="https://blog.zulip.com/x">Static types</a></strong></p>');
  });

  it('keeps links of other schemes, relative links and reference links as text', () => {
    expect(html('[foo](javascript:alert(1))')).toBe('<p>[foo](javascript:alert(1))</p>');
    expect(html('[foo](JaVaScRiPt:alert(1))')).toBe('<p>[foo](JaVaScRiPt:alert(1))</p>');
    expect(html('[foo](javascript://foo.com)')).toBe('<p>[foo](javascript://foo.com)</p>');
    expect(html('javascript://foo.com')).toBe('<p>javascript://foo.com</p>');
    expect(html('[x](data:text/html;base64,PHNjcmlwdD4=)')).toBe('<p>[x](data:text/html;base64,PHNjcmlwdD4=)</p>');
    expect(html('[foo](itms://itunes.com/apps/appname) ftp://example.org/file')).toBe('<p>[foo](itms://itunes.com/apps/appname) ftp://example.org/file</p>');
    expect(html('[x](/relative/path)')).toBe('<p>[x](/relative/path)</p>');
    expect(html('Hello [world]\n\n[world]: https://google.com')).toBe('<p>Hello [world]</p>\n<p>[world]: <a href="https://google.com">https://google.com</a></p>');
  });

  it('does not render images', () => {
    expect(html('![logo](https://example.com/logo.png)')).toBe('<p>!<a href="https://example.com/logo.png">logo</a></p>');
  });

  it('escapes every attribute value', () => {
    expect(html('[x](https://a.com "t\\"i<t>le")')).toBe('<p><a href="https://a.com" title="t&quot;i&lt;t&gt;le">x</a></p>');
    expect(html('https://x.com/"onmouseover="alert(1)')).toBe('<p><a href="https://x.com/%22onmouseover=%22alert(1)">https://x.com/"onmouseover="alert(1)</a></p>');
  });
});

describe('sanitising', () => {
  it('never passes raw HTML through', () => {
    expect(html('<script>alert(1)</script>')).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
    expect(html('<<script>script>evil()<</script>/script>')).toBe('<p>&lt;&lt;script&gt;script&gt;evil()&lt;&lt;/script&gt;/script&gt;</p>');
    expect(html('<script src="http://xx.com/xss.js"<b>')).toBe('<p>&lt;script src="<a href="http://xx.com/xss.js">http://xx.com/xss.js</a>"&lt;b&gt;</p>');
    expect(html('<h1>stay normal</h1> thanks')).toBe('<p>&lt;h1&gt;stay normal&lt;/h1&gt; thanks</p>');
    expect(html('*<h1>Hello world</h1>*')).toBe('<p><em>&lt;h1&gt;Hello world&lt;/h1&gt;</em></p>');
    expect(html('<img src=x onerror=alert(1)>\n\n<div>\nblock\n</div>')).toBe('<p>&lt;img src=x onerror=alert(1)&gt;</p>\n<p>&lt;div&gt;<br>\nblock<br>\n&lt;/div&gt;</p>');
    expect(html('<https://example.com>')).toBe('<p>&lt;<a href="https://example.com">https://example.com</a>&gt;</p>');
  });
});

describe('user mentions', () => {
  it('renders user mentions with the user’s full name, and sets the flags of non-silent ones', () => {
    const result = renderMessage('Hi @**Alice Smith** and @_**Bob**', ctx);
    expect(result.html).toBe(`<p>Hi ${userMention(ALICE)} and <span class="user-mention silent" data-user-id="20">Bob</span></p>`);
    expect(result.mentionedUserIds).toEqual([12]);
    expect(result.mentionedGroupIds).toEqual([]);
    expect(result.streamWildcardMentioned).toBe(false);
    expect(result.topicWildcardMentioned).toBe(false);
  });

  it('matches names case-insensitively and reports each user once, sorted', () => {
    const result = renderMessage('@**bob** @**alice smith** @**Bob** @**Alice Smith|12**', ctx);
    expect(result.html).toBe(`<p>${userMention(BOB)} ${userMention(ALICE)} ${userMention(BOB)} ${userMention(ALICE)}</p>`);
    expect(result.mentionedUserIds).toEqual([12, 20]);
  });

  it('silent mentions set no flag', () => {
    const result = renderMessage('@_**Alice Smith** @_**Bob|20**', ctx);
    expect(result.html).toBe('<p><span class="user-mention silent" data-user-id="12">Alice Smith</span> <span class="user-mention silent" data-user-id="20">Bob</span></p>');
    expect(result.mentionedUserIds).toEqual([]);
  });

  it('leaves an unknown name as its literal text, with no flag', () => {
    const result = renderMessage('Hey @**Nonexistent User** and @_**Nobody**', ctx);
    expect(result.html).toBe('<p>Hey @**Nonexistent User** and @_**Nobody**</p>');
    expect(result.mentionedUserIds).toEqual([]);
    expect(html('@**<b>x</b>**')).toBe('<p>@**&lt;b&gt;x&lt;/b&gt;**</p>');
  });

  it('does not resolve a name two users share, but resolves the id form', () => {
    const ambiguous = renderMessage('@**Sam Twin**', ctx);
    expect(ambiguous.html).toBe('<p>@**Sam Twin**</p>');
    expect(ambiguous.mentionedUserIds).toEqual([]);

    const byId = renderMessage('@**Sam Twin|32** @**|31**', ctx);
    expect(byId.html).toBe(
      '<p><span class="user-mention" data-user-id="32">@sam twin</span> <span class="user-mention" data-user-id="31">@Sam Twin</span></p>',
    );
    expect(byId.mentionedUserIds).toEqual([31, 32]);
  });

  it('does not resolve the id form for an unknown id, or with another user’s name', () => {
    const result = renderMessage('@**Alice Smith|99** @**Bob|12**', ctx);
    expect(result.html).toBe('<p>@**Alice Smith|99** @**Bob|12**</p>');
    expect(result.mentionedUserIds).toEqual([]);
  });

  it('renders wildcard mentions with the word written, and sets the wildcard flags', () => {
    for (const word of ['all', 'everyone', 'channel', 'stream']) {
      const result = renderMessage(`@**${word}** hi`, EMPTY);
      expect(result.html).toBe(`<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@${word}</span> hi</p>`);
      expect(result.streamWildcardMentioned).toBe(true);
      expect(result.topicWildcardMentioned).toBe(false);
    }
    const topic = renderMessage('@**topic**', EMPTY);
    expect(topic.html).toBe('<p><span class="topic-mention">@topic</span></p>');
    expect(topic.topicWildcardMentioned).toBe(true);
    expect(topic.streamWildcardMentioned).toBe(false);
  });

  it('silent wildcards get the silent class, no @ and no flag', () => {
    const result = renderMessage('@_**all** @_**topic**', EMPTY);
    expect(result.html).toBe(
      '<p><span class="user-mention channel-wildcard-mention silent" data-user-id="*">all</span> <span class="topic-mention silent">topic</span></p>',
    );
    expect(result.streamWildcardMentioned).toBe(false);
    expect(result.topicWildcardMentioned).toBe(false);
  });

  it('recognises no mention inside code, or glued to a word', () => {
    const result = renderMessage('`@**Alice Smith** @**all**`\n\n```\n@**Bob** @**topic** @*support* #**general** :smile:\n```\n\n    @**Alice Smith**\n\nmail@**Bob**', ctx);
    expect(result.html).toBe(
      `<p><code>@**Alice Smith** @**all**</code></p>\n${codeBlock('@**Bob** @**topic** @*support* #**general** :smile:\n')}\n${codeBlock('@**Alice Smith**\n')}\n<p>mail@<strong>Bob</strong></p>`,
    );
    expect(result.mentionedUserIds).toEqual([]);
    expect(result.mentionedGroupIds).toEqual([]);
    expect(result.streamWildcardMentioned).toBe(false);
    expect(result.topicWildcardMentioned).toBe(false);
  });

  it('recognises mentions after punctuation Zulip allows, inside formatting and quotes', () => {
    const result = renderMessage('(@**Bob**) **Hi @**Alice Smith** rocks**\n> "@**Bob**"', ctx);
    expect(result.html).toBe(
      `<p>(${userMention(BOB)}) <strong>Hi ${userMention(ALICE)} rocks</strong></p>\n<blockquote>\n<p>"${userMention(BOB)}"</p>\n</blockquote>`,
    );
    expect(result.mentionedUserIds).toEqual([12, 20]);
  });

  it('escapes names in mentions', () => {
    const odd = { id: 40, full_name: '<i>Eve</i> & "co"' };
    expect(html('@**<i>Eve</i> & "co"**', { ...EMPTY, users: [odd] })).toBe('<p><span class="user-mention" data-user-id="40">@&lt;i&gt;Eve&lt;/i&gt; &amp; "co"</span></p>');
  });
});

describe('group mentions', () => {
  it('renders group mentions and sets mentionedGroupIds for non-silent ones', () => {
    const result = renderMessage('@*support* and @_*Support* @*support*', ctx);
    expect(result.html).toBe(
      '<p><span class="user-group-mention" data-user-group-id="5">@support</span> and <span class="user-group-mention silent" data-user-group-id="5">support</span> <span class="user-group-mention" data-user-group-id="5">@support</span></p>',
    );
    expect(result.mentionedGroupIds).toEqual([5]);
    expect(result.mentionedUserIds).toEqual([]);
  });

  it('leaves an unknown group literal, and a silent group mention sets no flag', () => {
    const unknown = renderMessage('@*nobody*', ctx);
    expect(unknown.html).toBe('<p>@*nobody*</p>');
    expect(unknown.mentionedGroupIds).toEqual([]);
    expect(renderMessage('@_*support*', ctx).mentionedGroupIds).toEqual([]);
  });
});

describe('channel and topic links', () => {
  it('links channels and topics with Zulip’s narrow URLs by default', () => {
    expect(html('#**general**')).toBe('<p><a class="stream" data-stream-id="7" href="/#narrow/channel/7-general">#general</a></p>');
    expect(html('This is a #**Denmark>some topic** stream_topic link')).toBe(
      '<p>This is a <a class="stream-topic" data-stream-id="8" href="/#narrow/channel/8-Denmark/topic/some.20topic">#Denmark &gt; some topic</a> stream_topic link</p>',
    );
    const spaced = { ...EMPTY, channels: [{ id: 9, name: 'dev help' }] };
    expect(html('#**dev help>v1.2 (beta)**', spaced)).toBe(
      '<p><a class="stream-topic" data-stream-id="9" href="/#narrow/channel/9-dev-help/topic/v1.2E2.20.28beta.29">#dev help &gt; v1.2 (beta)</a></p>',
    );
  });

  it('builds hrefs with ctx.narrowUrl, escaped', () => {
    const calls: unknown[] = [];
    const withUrl: MarkdownContext = {
      ...ctx,
      narrowUrl: (channel, topic) => {
        calls.push([channel, topic]);
        return `https://chat.example.com/#narrow/${channel.id}"x${topic === undefined ? '' : `/${topic}`}`;
      },
    };
    expect(html('#**general** #**Denmark>t**', withUrl)).toBe(
      '<p><a class="stream" data-stream-id="7" href="https://chat.example.com/#narrow/7&quot;x">#general</a> ' +
        '<a class="stream-topic" data-stream-id="8" href="https://chat.example.com/#narrow/8&quot;x/t">#Denmark &gt; t</a></p>',
    );
    expect(calls).toEqual([
      [{ id: 7, name: 'general' }, undefined],
      [{ id: 8, name: 'Denmark' }, 't'],
    ]);
  });

  it('leaves unknown channels and links in code as text', () => {
    expect(html('And this is a #**wrong** stream link')).toBe('<p>And this is a #**wrong** stream link</p>');
    expect(html('`#**general**`')).toBe('<p><code>#**general**</code></p>');
  });

  it('escapes channel names and topics', () => {
    const odd = { ...EMPTY, channels: [{ id: 3, name: 'R&D <"eu"' }] };
    expect(html('#**R&D <"eu"** #**R&D <"eu">x>"y"**', odd)).toBe(
      '<p><a class="stream" data-stream-id="3" href="/#narrow/channel/3-R.26D-.3C.22eu.22">#R&amp;D &lt;"eu"</a> ' +
        '<a class="stream-topic" data-stream-id="3" href="/#narrow/channel/3-R.26D-.3C.22eu.22/topic/x.3E.22y.22">#R&amp;D &lt;"eu" &gt; x&gt;"y"</a></p>',
    );
  });
});

describe('emoji', () => {
  it("renders known :names: with their code points, by Zulip's names", () => {
    expect(html(':smile:')).toBe(`<p>${emoji('smile', '1f642')}</p>`);
    expect(html(':+1: :thumbs_up: :like: :heart: :tada: :octopus:')).toBe(
      `<p>${emoji('+1', '1f44d')} ${emoji('thumbs_up', '1f44d', 'thumbs up')} ${emoji('like', '1f44d')} ${emoji('heart', '2764')} ${emoji('tada', '1f389')} ${emoji('octopus', '1f419')}</p>`,
    );
    expect(html(':ok: :working_on_it: :big_smile:')).toBe(
      `<p>${emoji('ok', '1f44c')} ${emoji('working_on_it', '1f6e0', 'working on it')} ${emoji('big_smile', '1f604', 'big smile')}</p>`,
    );
    expect(html('**:airplane:**')).toBe(`<p><strong>${emoji('airplane', '2708')}</strong></p>`);
    expect(html(':hash: :heart_eyes:')).toBe(`<p>${emoji('hash', '0023-20e3')} ${emoji('heart_eyes', '1f60d', 'heart eyes')}</p>`);
  });

  it('renders names with letters beyond ASCII, as Zulip has them', () => {
    expect(html(':piñata: :ココ:')).toBe(`<p>${emoji('piñata', '1fa85')} ${emoji('ココ', '1f201')}</p>`);
  });

  it('renders emoji next to text and each other', () => {
    expect(html(':cat:hello:dog::rabbit:')).toBe(`<p>${emoji('cat', '1f408')}hello${emoji('dog', '1f415')}${emoji('rabbit', '1f407')}</p>`);
    expect(html('The winner is:\nsmiley:smiley:')).toBe(`<p>The winner is:<br>\nsmiley${emoji('smiley', '1f603')}</p>`);
    expect(html('This is :invalidemoji: which should not prevent rendering :smile:')).toBe(
      `<p>This is :invalidemoji: which should not prevent rendering ${emoji('smile', '1f642')}</p>`,
    );
  });

  it('leaves unknown names, skin tones, emoticons and emoji in code as text', () => {
    expect(html(':not_an_emoji: :skin-tone-2: :) foo:)bar x::y::z :wasted waste:')).toBe('<p>:not_an_emoji: :skin-tone-2: :) foo:)bar x::y::z :wasted waste:</p>');
    // iamcal's names that Zulip does not use.
    expect(html(':thumbsup: :slightly_smiling_face: :simple_smile:')).toBe('<p>:thumbsup: :slightly_smiling_face: :simple_smile:</p>');
    expect(html('`:smile:`')).toBe('<p><code>:smile:</code></p>');
  });
});

describe('extractReferences', () => {
  it('finds user names, user ids, groups and channels without wildcards', () => {
    expect(
      extractReferences('@**Alice Smith** @_**Bob** @**Sam Twin|32** @_**|31** @**all** @_**topic** @*support* @_*devs* #**general** #**Denmark>some topic**'),
    ).toEqual({
      userNames: ['Alice Smith', 'Bob'],
      userIds: [32, 31],
      groupNames: ['support', 'devs'],
      channelNames: ['general', 'Denmark'],
    });
  });

  it('lists each name once (names case-insensitively) and ignores code', () => {
    expect(
      extractReferences('@**Bob** @**bob** @**Bob|20** @**x|20** #**general>a** #**general>b** @*support* @*Support*\n\n`@**Hidden**`\n```\n@**Hidden2** #**hidden**\n```'),
    ).toEqual({ userNames: ['Bob'], userIds: [20], groupNames: ['support'], channelNames: ['general'] });
  });

  it('finds references inside quotes, spoilers, lists and links', () => {
    expect(extractReferences('```quote\n@**Q**\n```\n```spoiler @*g1*\n#**c1**\n```\n* @**L**\n\n[@**K**](https://x.com)')).toEqual({
      userNames: ['Q', 'L', 'K'],
      userIds: [],
      groupNames: ['g1'],
      channelNames: ['c1'],
    });
  });

  it('finds nothing in plain text', () => {
    expect(extractReferences('hello world, mail@**x** #hashtag')).toEqual({ userNames: [], userIds: [], groupNames: [], channelNames: [] });
  });
});

describe('renderMarkdown', () => {
  it('renders the same dialect, resolving what the partial context has', () => {
    expect(renderMarkdown('**Team** channel: #**general** for @*support*, ask @**Bob**', { channels: [GENERAL], groups: [SUPPORT] })).toBe(
      '<p><strong>Team</strong> channel: <a class="stream" data-stream-id="7" href="/#narrow/channel/7-general">#general</a> for <span class="user-group-mention" data-user-group-id="5">@support</span>, ask @**Bob**</p>',
    );
  });

  it('renders without a context, leaving references literal', () => {
    expect(renderMarkdown('See #**general** :tada:\n\n<script>x</script>')).toBe(`<p>See #**general** ${emoji('tada', '1f389')}</p>\n<p>&lt;script&gt;x&lt;/script&gt;</p>`);
    expect(renderMarkdown('')).toBe('');
  });
});

// How long these take to render: bench/markdown.bench.ts (timings belong in bench/, not in tests).
describe('large and hostile inputs', () => {
  it('renders every mention and topic link of a 10,000-character message', () => {
    const unit = 'Hi @**Alice Smith** and @*support*, see #**general>lunch** :smile: **bold** *em* ~~old~~ `code` https://example.com/x_y\n';
    const content = unit.repeat(Math.ceil(10_000 / unit.length)).slice(0, 10_000);
    const units = Math.floor(10_000 / unit.length);
    const result = renderMessage(content, ctx);
    expect(result.html.split('class="user-mention"').length - 1).toBeGreaterThanOrEqual(units);
    expect(result.html.split('class="stream-topic"').length - 1).toBeGreaterThanOrEqual(units);
    expect(result.mentionedUserIds).toEqual([12]);
    expect(result.mentionedGroupIds).toEqual([5]);
  });

  it('renders inputs that defeat naive scanners without taking them for references', () => {
    const cases: Array<[string, string]> = [
      ['@**'.repeat(3400), '<p>@**@**@<strong>@</strong>'],
      ['#**'.repeat(3400), '<p>#**#**#<strong>#</strong>'],
      [':a'.repeat(5000), '<p><span aria-label="a" class="emoji emoji-1f170"'],
      ['~~'.repeat(5000), '<div class="codehilite">'],
      ['```quote\n'.repeat(1100), '<blockquote>\n<blockquote>\n'],
      ['_'.repeat(10_000), '<hr>'],
    ];
    for (const [text, start] of cases) {
      const result = renderMessage(text, ctx);
      expect(result.html.startsWith(start), `${text.slice(0, 9)}…: ${result.html.slice(0, 60)}`).toBe(true);
      expect(result.html).not.toMatch(/class="(user-mention|user-group-mention|stream|stream-topic)"/);
      expect([result.mentionedUserIds, result.mentionedGroupIds]).toEqual([[], []]);
    }
  });
});
