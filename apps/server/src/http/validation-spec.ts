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

function deref(spec: Json, node: Json): Json {
  let current = node;
  while (current && typeof current.$ref === 'string' && current.$ref.startsWith('#/')) {
    current = current.$ref
      .slice(2)
      .split('/')
      .reduce((acc: Json, key: string) => acc?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], spec);
  }
  return current;
}

export function buildValidationSpec(spec: Json): { validationSpec: Json; rules: Map<string, ParamRules> } {
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
        properties[p.name] = p.schema ?? p.content?.['application/json']?.schema ?? {};
        if (p.required) required.push(p.name);
      }
      const requestBody = op.requestBody ? deref(out, op.requestBody) : undefined;
      const form = requestBody?.content?.['application/x-www-form-urlencoded'];
      const formSchema = form ? deref(out, form.schema ?? {}) : undefined;
      Object.assign(properties, formSchema?.properties ?? {});
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
    }
  }
  return { validationSpec: out, rules };
}
