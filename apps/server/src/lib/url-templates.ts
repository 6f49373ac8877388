// RFC 6570 URL templates, as linkifiers and code playgrounds use them (Zulip validates them with the
// Python `uri_template` package). Validation and variable names are read here with the RFC's grammar;
// expansion is the `url-template` package's (an RFC 6570 implementation).
//
// What is accepted: any text without `{` or `}` as literal (Zulip's validator accepts `%%` or spaces
// there too), and expressions `{` [operator] varspec *( "," varspec ) `}` where the operator is one of
// `+ # . / ; ? &`, a varname is varchars (letters, digits, `_`, percent-encoded octets) optionally
// separated by single dots, and a varspec may end in a prefix `:1`…`:9999` or the explode `*`. The
// operators the RFC reserves for extensions (`= , ! @ |`) and Python's own extensions (default values,
// `[]`) are refused.
import { parseTemplate, type Template } from 'url-template';

const OPERATORS = new Set(['+', '#', '.', '/', ';', '?', '&']);
const VARNAME = /^(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+(?:\.(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+)*$/;
const PREFIX = /^[1-9][0-9]{0,3}$/;

type Part = { literal: string } | { operator: string; variables: string[]; source: string };

/** The template's parts: literal text and expressions (operator, variable names, source), or null when it is not a valid template. */
function parse(template: string): Part[] | null {
  const parts: Part[] = [];
  let pos = 0;
  while (pos < template.length) {
    const open = template.indexOf('{', pos);
    const close = template.indexOf('}', pos);
    if (open === -1) {
      if (close !== -1) return null;
      parts.push({ literal: template.slice(pos) });
      break;
    }
    if (close !== -1 && close < open) return null;
    if (open > pos) parts.push({ literal: template.slice(pos, open) });
    const end = template.indexOf('}', open + 1);
    if (end === -1) return null;
    const body = template.slice(open + 1, end);
    if (body.includes('{')) return null;
    const expression = parseExpression(body);
    if (expression === null) return null;
    parts.push({ ...expression, source: template.slice(open, end + 1) });
    pos = end + 1;
  }
  return parts;
}

function parseExpression(body: string): { operator: string; variables: string[] } | null {
  let operator = '';
  let list = body;
  if (OPERATORS.has(body.charAt(0))) {
    operator = body.charAt(0);
    list = body.slice(1);
  }
  const variables: string[] = [];
  for (const spec of list.split(',')) {
    let name = spec;
    const colon = spec.indexOf(':');
    if (colon !== -1) {
      if (!PREFIX.test(spec.slice(colon + 1))) return null;
      name = spec.slice(0, colon);
    } else if (spec.endsWith('*')) {
      name = spec.slice(0, -1);
    }
    if (!VARNAME.test(name)) return null;
    variables.push(name);
  }
  return { operator, variables };
}

/** Whether `template` is an RFC 6570 URL template (the empty string is one: it has no expression). */
export function isValidUrlTemplate(template: string): boolean {
  return parse(template) !== null;
}

/** The distinct variable names of a valid template, in order of first appearance. */
export function urlTemplateVariables(template: string): string[] {
  const names = new Set<string>();
  for (const part of parse(template) ?? []) if ('variables' in part) for (const name of part.variables) names.add(name);
  return [...names];
}

/** A valid template, parsed once and expanded many times. */
export interface UrlTemplate {
  /** The URL for these values (missing or null values are left out, as RFC 6570 says); null when a value cannot be encoded. */
  expand(values: Readonly<Record<string, string | null | undefined>>): string | null;
}

export function compileUrlTemplate(template: string): UrlTemplate {
  // Literal text expands to itself whatever the values: it is expanded once, and each expression on its own.
  const pieces: Array<string | Template> = (parse(template) ?? [{ literal: template }]).map((part) =>
    'literal' in part ? parseTemplate(part.literal).expand({}) : parseTemplate(part.source),
  );
  return {
    expand(values) {
      // A context without a prototype: a variable named like an Object method reads nothing.
      const context: Record<string, string | null> = Object.create(null);
      for (const [name, value] of Object.entries(values)) if (value !== undefined) context[name] = value;
      try {
        let url = '';
        for (const piece of pieces) url += typeof piece === 'string' ? piece : piece.expand(context);
        return url;
      } catch {
        return null; // a lone surrogate cannot be percent-encoded
      }
    },
  };
}
