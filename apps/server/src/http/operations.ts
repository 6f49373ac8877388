// Resolves an HTTP request to an operation of the spec (through the generated wire plan). Path
// parameters match digits only, as Zulip's integer converters do, so `/users/me` and
// `/user_groups/create` never collide with `/users/{user_id}` and `/user_groups/{user_group_id}`.
import { wirePlan, type WireOperation } from '@parley/wire';

interface CompiledPath {
  template: string;
  regex: RegExp;
  paramNames: string[];
  byMethod: Map<string, WireOperation>;
}

export type Resolution =
  | { kind: 'operation'; operation: WireOperation; pathParams: Record<string, number>; rawPathParams: Record<string, string> }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

function compile(operations: readonly WireOperation[]): CompiledPath[] {
  const byTemplate = new Map<string, CompiledPath>();
  for (const op of operations) {
    let compiled = byTemplate.get(op.path);
    if (!compiled) {
      const paramNames: string[] = [];
      const source = op.path
        .split('/')
        .map((segment) => {
          const m = /^\{(\w+)\}$/.exec(segment);
          if (!m) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
          paramNames.push(m[1]!);
          return '([0-9]+)';
        })
        .join('/');
      compiled = { template: op.path, regex: new RegExp(`^${source}/?$`), paramNames, byMethod: new Map() };
      byTemplate.set(op.path, compiled);
    }
    compiled.byMethod.set(op.method.toUpperCase(), op);
  }
  return [...byTemplate.values()];
}

const compiledPaths = compile(Object.values(wirePlan));
const MAX_ID = 2_147_483_647;

/** `path` is relative to /api/v1. */
export function resolveOperation(method: string, path: string): Resolution {
  for (const compiled of compiledPaths) {
    const m = compiled.regex.exec(path);
    if (!m) continue;
    const operation = compiled.byMethod.get(method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase());
    if (!operation) return { kind: 'method-not-allowed', allowed: [...compiled.byMethod.keys()].sort() };
    const pathParams: Record<string, number> = {};
    // As the path has them (what request validation checks).
    const rawPathParams: Record<string, string> = {};
    // Ids beyond PostgreSQL's integer range can name no row: -1 makes the lookup fail as "not found".
    compiled.paramNames.forEach((name, i) => {
      const id = Number(m[i + 1]);
      pathParams[name] = id <= MAX_ID ? id : -1;
      rawPathParams[name] = m[i + 1]!;
    });
    return { kind: 'operation', operation, pathParams, rawPathParams };
  }
  return { kind: 'not-found' };
}
