// The events the server stores (table `event`), read back by tests: take a mark before a request, then
// read what was stored after it. Every event read here is checked against the spec's event schemas
// (`Event` in spec/dist/openapi.json): a payload that matches none fails the test that read it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import type { TestServer } from './test-server.ts';
import { activeUsers } from './people.ts';

/** A stored event: its payload and its recipients (user ids, ascending). */
export interface StoredEvent {
  userIds: number[];
  payload: any;
}

/** The id of the newest stored event (0 when there is none): the events after it are "since" the mark. */
export async function markEvents(env: TestServer): Promise<bigint> {
  const last = await env.running.deps.db.event.findFirst({ orderBy: { id: 'desc' } });
  return last?.id ?? 0n;
}

/**
 * The events stored after `mark`, oldest first, with their recipients. A realm-wide row stores no user
 * ids: it goes to every active user of the organization, so its recipients are those users (read now).
 * Each payload is checked against the spec (see checkStoredEvent).
 */
export async function eventsSince(env: TestServer, mark: bigint): Promise<StoredEvent[]> {
  const rows = await env.running.deps.db.event.findMany({ where: { id: { gt: mark } }, orderBy: { id: 'asc' } });
  for (const r of rows) assertStoredEventMatchesSpec(r.payload, r.id);
  const everyone = new Map<number, number[]>();
  for (const realmId of new Set(rows.filter((r) => r.realmWide).map((r) => r.realmId))) {
    everyone.set(realmId, (await activeUsers(env, realmId)).map((u) => u.id));
  }
  return rows.map((r) => ({ userIds: r.realmWide ? everyone.get(r.realmId)! : [...r.userIds].sort((a, b) => a - b), payload: r.payload }));
}

/** The payloads of the events stored after `mark`, oldest first (each checked against the spec). */
export async function eventPayloadsSince(env: TestServer, mark: bigint): Promise<any[]> {
  const rows = await env.running.deps.db.event.findMany({ where: { id: { gt: mark } }, orderBy: { id: 'asc' } });
  for (const r of rows) assertStoredEventMatchesSpec(r.payload, r.id);
  return rows.map((r) => r.payload);
}

// ---------------------------------------------------------------------------------------------
// Checking payloads against the spec's event schemas

const here = path.dirname(fileURLToPath(import.meta.url));
const spec = JSON.parse(readFileSync(path.join(here, '../../../../spec/dist/openapi.json'), 'utf8'));
const schemas: Record<string, any> = spec.components.schemas;

// OpenAPI 3.1 schemas are JSON Schema 2020-12; OpenAPI's own keywords (example, discriminator…) are
// annotations here. The components are compiled as one document so that `#/components/schemas/…` resolve.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: 'parley-openapi', components: spec.components }, 'parley-openapi');
const validators = new Map<string, ValidateFunction>();
function validatorFor(name: string): ValidateFunction {
  let v = validators.get(name);
  if (!v) {
    v = ajv.compile({ $ref: `parley-openapi#/components/schemas/${name}` });
    validators.set(name, v);
  }
  return v;
}

/** The leaf event schemas (one `type`, and `op` / `message_type` where the type has several shapes), by name. */
export const EVENT_SCHEMAS: ReadonlyMap<string, { type: string; ops: string[] | null; messageType: string | null }> = new Map(
  Object.entries(schemas)
    .filter(([name, s]) => name.startsWith('Event') && s.properties?.type?.const !== undefined)
    .map(([name, s]) => {
      const op = s.properties.op;
      return [name, { type: s.properties.type.const, ops: op ? (op.const !== undefined ? [op.const] : op.enum) : null, messageType: s.properties.message_type?.const ?? null }];
    }),
);

/** The leaf schema for a payload's `type` (and `op`, `message_type`), or null when the spec has none. */
export function eventSchemaNameFor(payload: any): string | null {
  for (const [name, s] of EVENT_SCHEMAS) {
    if (s.type !== payload?.type) continue;
    if ((s.ops === null) !== (payload.op === undefined)) continue;
    if (s.ops && !s.ops.includes(payload.op)) continue;
    if (s.messageType !== null && s.messageType !== payload.message_type) continue;
    return name;
  }
  return null;
}

/**
 * What kind of event a payload is: `type`, `/op`, and for the ops whose payload varies by property,
 * `:` and which property (realm_user update: the changed person field; realm and stream update: the
 * property; realm update_dict: the data keys).
 */
export function eventKind(payload: any): string {
  let kind = String(payload?.type);
  if (payload?.op !== undefined) kind += `/${payload.op}`;
  if (payload?.type === 'realm_user' && payload.op === 'update') kind += `:${Object.keys(payload.person ?? {}).filter((k) => k !== 'user_id').sort().join(',')}`;
  else if ((payload?.type === 'realm' || payload?.type === 'stream') && payload.op === 'update') kind += `:${payload.property}`;
  else if (payload?.type === 'realm' && payload.op === 'update_dict') kind += `:${Object.keys(payload.data ?? {}).sort().join(',')}`;
  return kind;
}

/**
 * Fields the server stores for its own use when delivering (as Zulip's internal event fields do) and
 * that never reach a client: delivery must strip them. They are removed before checking.
 */
export const INTERNAL_EVENT_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'stream/create': ['for_unarchiving'],
  'stream/delete': ['for_archiving'],
};

/**
 * Kinds of stored event whose payload Parley knowingly sends in a shape other than Zulip's (and the
 * spec's). They are tolerated when stored, so that the tests of other features keep running, and the
 * contract test (test/contract/events.test.ts) fails once a kind listed here matches the spec: then
 * remove it from this list. Keys are eventKind() values.
 */
export const KNOWN_EVENT_DIVERGENCES: Readonly<Record<string, string>> = {};

/** The payload as a client would receive it: internal fields removed, and the queue position `id` added. */
export function deliveredForm(payload: any, id: number): any {
  const internal = INTERNAL_EVENT_FIELDS[`${payload?.type}/${payload?.op}`] ?? [];
  const copy: any = { id, ...payload };
  for (const field of internal) delete copy[field];
  // Delivery-only fields (events/present.ts): never sent to clients.
  for (const field of Object.keys(copy)) if (field.startsWith('_')) delete copy[field];
  // A message event's recipient flags are stored per recipient beside the payload.
  if ((copy.type === 'message' || copy.type === 'update_message') && copy.flags === undefined) copy.flags = [];
  return copy;
}

export interface EventCheck {
  kind: string;
  /** The leaf schema for the payload's type/op, or null when the spec has none. */
  schema: string | null;
  /** Null when the payload matches; otherwise what is wrong. */
  problem: string | null;
}

/**
 * The errors worth showing: where a union (oneOf/anyOf) failed, only those of its closest branch (the
 * one with the fewest errors) instead of every branch's, and not the union's own summary error.
 */
function closestBranchErrors(errors: ErrorObject[]): ErrorObject[] {
  const branchOf = (e: ErrorObject) => /^(.*?\/(?:oneOf|anyOf))\/(\d+)\//.exec(e.schemaPath);
  const byUnion = new Map<string, Map<string, number>>();
  for (const e of errors) {
    const m = branchOf(e);
    if (!m) continue;
    const branches = byUnion.get(m[1]!) ?? new Map<string, number>();
    branches.set(m[2]!, (branches.get(m[2]!) ?? 0) + 1);
    byUnion.set(m[1]!, branches);
  }
  const best = new Map([...byUnion].map(([union, branches]) => [union, [...branches].sort((a, b) => a[1] - b[1])[0]![0]]));
  return errors.filter((e) => {
    if ((e.keyword === 'oneOf' || e.keyword === 'anyOf') && byUnion.has(e.schemaPath)) return false;
    const m = branchOf(e);
    return !m || best.get(m[1]!) === m[2];
  });
}

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return closestBranchErrors(errors ?? [])
    .slice(0, 8)
    .map((e) => `${e.instancePath || '(root)'} ${e.message}${e.keyword === 'additionalProperties' ? ` (${(e.params as { additionalProperty?: string }).additionalProperty})` : ''}`)
    .join('; ');
}

/** Checks one stored payload (without `id`) against the spec's `Event` union and its own leaf schema. */
export function checkStoredEvent(payload: unknown, id = 1): EventCheck {
  const kind = eventKind(payload);
  const schema = eventSchemaNameFor(payload);
  const event = deliveredForm(payload, id);
  if (schema === null) return { kind, schema, problem: `the spec has no event schema for type ${JSON.stringify((payload as { type?: unknown } | null)?.type)} op ${JSON.stringify((payload as { op?: unknown } | null)?.op)}` };
  const leaf = validatorFor(schema);
  if (!leaf(event)) return { kind, schema, problem: `does not match ${schema}: ${describeErrors(leaf.errors)}` };
  const union = validatorFor('Event');
  if (!union(event)) return { kind, schema, problem: `matches ${schema} but not the Event union: ${describeErrors(union.errors)}` };
  return { kind, schema, problem: null };
}

/** Throws (failing the test) when a stored payload matches no event schema, unless its kind is a known divergence. */
export function assertStoredEventMatchesSpec(payload: unknown, rowId: bigint | number): void {
  const check = checkStoredEvent(payload, Number(rowId));
  if (check.problem === null || KNOWN_EVENT_DIVERGENCES[check.kind] !== undefined) return;
  throw new Error(`Stored event ${rowId} (${check.kind}) breaks the contract: it ${check.problem}\npayload: ${JSON.stringify(payload)}`);
}
