// RFC 6570 URL templates as linkifiers and code playgrounds take them (lib/url-templates.ts): Zulip's
// lists of valid and invalid templates, the variables read from them, and expansion.
import { describe, expect, it } from 'vitest';
import { compileUrlTemplate, isValidUrlTemplate, urlTemplateVariables } from '../../src/lib/url-templates.ts';

describe('URL templates', () => {
  it("accepts Zulip's valid templates (any literal text without braces) and refuses its invalid ones", () => {
    const valid = [
      'http://example.com/', 'https://user:password@example.com/', 'https://example.com/@user/thing', 'https://example.com/!path',
      'https://example.com/foo[bar]', 'https://example.com/{foo}', 'https://example.com/{foo}{bars}', 'https://example.com/{foo}/and/{bar}',
      'https://example.com/?foo={foo}', 'https://example.com/%ab', 'https://example.com/words%20with%20spaces', 'https://example.com/back%20to%20{back}',
      'https://example.com/%%', 'https://example.com/%%(foo)s', 'https://example.com{/foo,bar,baz}', 'https://example.com/{?foo*}',
      'https://example.com/{+foo,bar}', 'https://chat{.domain}.com/{#foo}', 'https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}',
      '$not_a_url$', '', '{;x,y}{&z}{var:9999}{a.b}{%41}',
    ];
    const invalid = ['https://example.com/{foo', 'https://example.com/{{}', 'https://example.com/{//foo}', 'https://example.com/{bar++}', 'x}', '{}', '{=x}', '{x:0}', '{x:10000}', '{x,}', '{a..b}'];
    expect(valid.filter((t) => !isValidUrlTemplate(t))).toEqual([]);
    expect(invalid.filter((t) => isValidUrlTemplate(t))).toEqual([]);
  });

  it('reads the variables of every expression, once each', () => {
    expect(urlTemplateVariables('https://zone_{zone}{.domain}.net/ticket{/location}{/id}{?name,chapter}{#fragment:5}{zone}')).toEqual(['zone', 'domain', 'location', 'id', 'name', 'chapter', 'fragment']);
    expect(urlTemplateVariables('https://example.com')).toEqual([]);
  });

  it('expands values percent-encoded as the operator says, leaving out missing ones', () => {
    const t = compileUrlTemplate('https://example.com/{a}/{+b}{?c,d}{#e}');
    expect(t.expand({ a: 'x y/é', b: 'p/q?r', c: 'a&b', d: null, e: 'frag ment' })).toBe('https://example.com/x%20y%2F%C3%A9/p/q?r?c=a%26b#frag%20ment');
    expect(compileUrlTemplate('https://example.com/{constructor}').expand({})).toBe('https://example.com/');
    expect(compileUrlTemplate('https://example.com/{x}').expand({ x: '\ud800' })).toBeNull();
  });
});
