// The validator checks requests against a mechanical projection of the spec, built at start-up:
// Zulip accepts every parameter from the body or the query string, and our decoder has already merged
// them and parsed the JSON-encoded ones into real values. So each operation's query parameters
// (`schema` or `content: application/json`) are folded into one form-body object schema, which the
// validator then checks strictly (no type coercion) against the decoded values.
type Json = Record<string, any>;

export interface ParamRules {
  /** Enum failures answer `Invalid <name>: Value error, Not in the list of possible values`. */
  listCheck: Set<string>;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Follows local `$ref`s (`#/components/…`) to the node they name. */
export function deref(spec: Json, node: Json): Json {
  let current = node;
  while (current && typeof current.$ref === 'string' && current.$ref.startsWith('#/')) {
    current = current.$ref
      .slice(2)
      .split('/')
      .reduce((acc: Json, key: string) => acc?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
  }
  return current;
}

/** The longest list any request parameter may hold unless the spec says otherwise. */
export const MAX_LIST_ITEMS = 10_000;

/** Formats the projection puts on request integers; registered with Ajv in http/validate.ts. */
export const INTEGER_RANGE_FORMATS = {
  /** Every integer the spec leaves unbounded: PostgreSQL's `integer`. */
  'parley-int32': { type: 'number' as const, validate: (n: number) => n >= -2_147_483_648 && n <= 2_147_483_647 },
  /** `format: int64` integers (timestamps): what a JavaScript number holds exactly. */
  'parley-int64': { type: 'number' as const, validate: (n: number) => Number.isSafeInteger(n) },
};
export const isIntegerRangeFormat = (format: string) => Object.hasOwn(INTEGER_RANGE_FORMATS, format);

/**
 * A copy of a request schema (references inlined) in which every integer carries a range format, so
 * that no integer the database cannot hold, wherever it sits (scalar, list element, object field),
 * gets past validation. Response schemas are left as they are.
 */
function boundIntegers(spec: Json, node: Json, depth = 0): Json {
  const schema = deref(spec, node);
  if (!schema || typeof schema !== 'object' || depth > 32) return schema;
  const copy: Json = Array.isArray(schema) ? [] : {};
  for (const [key, value] of Object.entries<any>(schema)) {
    if (key === 'properties' || key === 'patternProperties') {
      copy[key] = Object.fromEntries(Object.entries<Json>(value).map(([name, sub]) => [name, boundIntegers(spec, sub, depth + 1)]));
    } else if (['items', 'additionalProperties', 'not'].includes(key) && value && typeof value === 'object') {
      copy[key] = boundIntegers(spec, value, depth + 1);
    } else if (['oneOf', 'anyOf', 'allOf', 'prefixItems'].includes(key) && Array.isArray(value)) {
      copy[key] = value.map((sub: Json) => boundIntegers(spec, sub, depth + 1));
    } else {
      copy[key] = value;
    }
  }
  const types = Array.isArray(copy.type) ? copy.type : [copy.type];
  // Lists are bounded too, so that no request can ask for unbounded work (or more bind parameters
  // than PostgreSQL takes).
  if (types.includes('array') && copy.maxItems === undefined) copy.maxItems = MAX_LIST_ITEMS;
  if (types.includes('integer') && (copy.maximum === undefined || copy.minimum === undefined)) {
    copy.format = copy.format === 'int64' ? 'parley-int64' : 'parley-int32';
  }
  return copy;
}

/**
 * `responses: false` (responses are not validated, as in production): the projection leaves out the
 * response schemas, and the component schemas nothing else refers to, which the validator would
 * otherwise register with Ajv at start (http/validate.ts), on the path to the first answer.
 */
export function buildValidationSpec(spec: Json, options: { responses: boolean } = { responses: true }): { validationSpec: Json; rules: Map<string, ParamRules> } {
  const out: Json = structuredClone(spec);
  out.servers = [{ url: '/api/v1' }];
  delete out.security;
  const rules = new Map<string, ParamRules>();
  for (const item of Object.values<Json>(out.paths ?? {})) {
    const shared = (item.parameters ?? []).map((p: Json) => deref(out, p));
    delete item.parameters;
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      delete op.security;
      const params = [...shared, ...(op.parameters ?? []).map((p: Json) => deref(out, p))];
      const properties: Json = {};
      const required: string[] = [];
      const pathParams = params.filter((p: Json) => p.in === 'path');
      for (const p of params) {
        if (p.in !== 'query') continue;
        properties[p.name] = boundIntegers(out, p.schema ?? p.content?.['application/json']?.schema ?? {});
        if (p.required) required.push(p.name);
      }
      const requestBody = op.requestBody ? deref(out, op.requestBody) : undefined;
      const form = requestBody?.content?.['application/x-www-form-urlencoded'];
      const formSchema = form ? deref(out, form.schema ?? {}) : undefined;
      for (const [name, schema] of Object.entries<Json>(formSchema?.properties ?? {})) properties[name] = boundIntegers(out, schema);
      required.push(...(formSchema?.required ?? []));
      op.parameters = pathParams;
      op.requestBody = {
        required: false,
        content: {
          'application/x-www-form-urlencoded': {
            schema: { type: 'object', additionalProperties: false, properties, ...(required.length ? { required } : {}) },
          },
        },
      };
      const listCheck = new Set<string>();
      for (const [name, schema] of Object.entries<Json>(properties)) {
        if (deref(out, schema)?.['x-zulip-invalid-message'] === 'list') listCheck.add(name);
      }
      rules.set(op.operationId, { listCheck });
      if (!options.responses) op.responses = { default: { description: 'Responses are not validated.' } };
    }
  }
  if (!options.responses) keepReferencedSchemas(out);
  return { validationSpec: out, rules };
}

/** Drops the component schemas that nothing outside `components.schemas` refers to, directly or not. */
function keepReferencedSchemas(spec: Json): void {
  const schemas: Json = spec.components?.schemas ?? {};
  const kept = new Set<string>();
  const prefix = '#/components/schemas/';
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node as Json)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith(prefix)) {
        const name = value.slice(prefix.length).replace(/~1/g, '/').replace(/~0/g, '~');
        if (!kept.has(name) && schemas[name] !== undefined) {
          kept.add(name);
          visit(schemas[name]);
        }
      } else {
        visit(value);
      }
    }
  };
  visit({ ...spec, components: { ...spec.components, schemas: {} } });
  for (const name of Object.keys(schemas)) if (!kept.has(name)) delete schemas[name];
}
