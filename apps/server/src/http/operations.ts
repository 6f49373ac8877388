// Resolves an HTTP request to an operation of the spec (through the generated wire plan). Id path
// parameters match digits only, as Zulip's integer converters do, so `/users/me` and
// `/user_groups/create` never collide with `/users/{user_id}` and `/user_groups/{user_group_id}`.
// Text path parameters (the wire plan's `textPathParams`) match any one segment, as Zulip's `<email>`
// converter does, and are tried last: a path that a template of literal and id segments matches is
// that template's (`/users/me`), and only the rest are text. A parameter that is an id or text
// (`idOrTextPathParams`: `/users/{user_id}` names a user by id or by address, Zulip's `users/<int>`
// and `users/<email>` routes) is an id when its segment is digits only; a text segment reaches only
// the operations that accept text, other methods being "not allowed", as for Zulip's two routes.
import { wirePlan, type WireOperation } from '@parley/wire';

interface CompiledPath {
  template: string;
  regex: RegExp;
  paramNames: string[];
  /** The parameters that are text (decoded from the path), not ids. */
  textParams: Set<string>;
  /** The parameters that are an id when digits only, text otherwise. */
  idOrTextParams: Set<string>;
  byMethod: Map<string, WireOperation>;
}

export type Resolution =
  | { kind: 'operation'; operation: WireOperation; pathParams: Record<string, number | string>; rawPathParams: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

function compile(operations: readonly WireOperation[]): CompiledPath[] {
  const byTemplate = new Map<string, CompiledPath>();
  for (const op of operations) {
    let compiled = byTemplate.get(op.path);
    if (!compiled) {
      // A parameter is text when any operation of the template says so (the spec gives each the same type).
      const textParams = new Set(operations.filter((o) => o.path === op.path).flatMap((o) => o.textPathParams ?? []));
      // Text parameters that take the rest of the path, slashes included (`/user_uploads/{realm_id_str}/{filename}`).
      const restParams = new Set(operations.filter((o) => o.path === op.path).flatMap((o) => o.restPathParams ?? []));
      const idOrTextParams = new Set(operations.filter((o) => o.path === op.path).flatMap((o) => o.idOrTextPathParams ?? []));
      const paramNames: string[] = [];
      const source = op.path
        .split('/')
        .map((segment) => {
          const m = /^\{(\w+)\}$/.exec(segment);
          if (!m) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          paramNames.push(m[1]!);
          return restParams.has(m[1]!) ? '(.+)' : textParams.has(m[1]!) || idOrTextParams.has(m[1]!) ? '([^/]+)' : '([0-9]+)';
        })
        .join('/');
      compiled = { template: op.path, regex: new RegExp(`^${source}/?$`), paramNames, textParams, idOrTextParams, byMethod: new Map() };
      byTemplate.set(op.path, compiled);
    }
    compiled.byMethod.set(op.method.toUpperCase(), op);
  }
  // Templates with text parameters last (a stable sort keeps the others' order).
  const hasText = (c: CompiledPath) => Number(c.textParams.size + c.idOrTextParams.size > 0);
  return [...byTemplate.values()].sort((a, b) => hasText(a) - hasText(b));
}

const compiledPaths = compile(Object.values(wirePlan));
const MAX_ID = 2_147_483_647;
const DIGITS = /^[0-9]+$/;

/**
 * Templates without parameters, by their path, where the scan below would find no other template
 * first: most requests (`/events`, `/messages`, `/register`) resolve with one lookup instead of a
 * regular expression per template.
 */
const literalPaths = new Map(compiledPaths.filter((c) => c.paramNames.length === 0 && compiledPaths.find((o) => o.regex.test(c.template)) === c).map((c) => [c.template, [c]]));

/** `path` is relative to /api/v1. */
export function resolveOperation(method: string, path: string): Resolution {
  for (const compiled of literalPaths.get(path) ?? compiledPaths) {
    const m = compiled.regex.exec(path);
    if (!m) continue;
    // An id-or-text segment that is not digits: only the operations that take text are there.
    const asText = compiled.paramNames.filter((name, i) => compiled.idOrTextParams.has(name) && !DIGITS.test(m[i + 1]!));
    const candidates = asText.length === 0
      ? compiled.byMethod
      : new Map([...compiled.byMethod].filter(([, op]) => asText.every((name) => op.idOrTextPathParams?.includes(name))));
    const operation = candidates.get(method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase());
    if (!operation) return { kind: 'method-not-allowed', allowed: [...candidates.keys()].sort() };
    const pathParams: Record<string, number | string> = {};
    // As the path has them (what request validation checks); text parameters percent-decoded.
    const rawPathParams: Record<string, string> = {};
    for (const [i, name] of compiled.paramNames.entries()) {
      const raw = m[i + 1]!;
      if (compiled.textParams.has(name) || (compiled.idOrTextParams.has(name) && !DIGITS.test(raw))) {
        const text = decodePathSegment(raw);
        if (text === null) return { kind: 'not-found' };
        pathParams[name] = rawPathParams[name] = text;
        continue;
      }
      // Ids beyond PostgreSQL's integer range can name no row: -1 makes the lookup fail as "not found".
      const id = Number(raw);
      pathParams[name] = id <= MAX_ID ? id : -1;
      rawPathParams[name] = raw;
    }
    return { kind: 'operation', operation, pathParams, rawPathParams };
  }
  return { kind: 'not-found' };
}

/**
 * A path segment percent-decoded (`%40` → `@`), as Django decodes paths; null (no such path) when its
 * escapes are malformed or it holds a NUL, which no stored text can (PostgreSQL's text refuses it).
 */
function decodePathSegment(segment: string): string | null {
  try {
    const text = decodeURIComponent(segment);
    return text.includes('\u0000') ? null : text;
  } catch {
    return null;
  }
}
