import { wirePlan } from './generated/wire-plan.ts';
import type { WireOperation } from './types.ts';

const operations: readonly WireOperation[] = Object.values(wirePlan);

/** The operation for an HTTP method and OpenAPI path template, e.g. ('PATCH', '/users/{user_id}'). */
export function findOperation(method: string, pathTemplate: string): WireOperation | undefined {
  const m = method.toLowerCase();
  return operations.find((op) => op.method === m && op.path === pathTemplate);
}

/**
 * Encodes parameters as Zulip clients do: strings raw, everything else as JSON text; parameters the
 * operation declares as JSON are always JSON-encoded (even strings, e.g. `"unlimited"`). Unknown
 * parameters are encoded by their value's type. `undefined` values are dropped (as the Python client
 * drops None).
 */
export function encodeParams(operation: WireOperation | undefined, values: Record<string, unknown>): URLSearchParams {
  const out = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const declaredJson = operation && Object.hasOwn(operation.params, name) ? operation.params[name]!.json : undefined;
    const json = declaredJson ?? typeof value !== 'string';
    out.append(name, json ? JSON.stringify(value) : String(value));
  }
  return out;
}
