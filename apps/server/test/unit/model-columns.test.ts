// Raw statements name columns by the model's field names (data/db.ts columnOf, modelColumns: a field's
// column is its name in snake_case), and POST /register reads its state that way. The schema must keep
// that convention: a field stored under another column name would fail every registration at run time.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Prisma, columnOf } from '../../src/data/db.ts';

const SCALARS = new Set(['String', 'Int', 'Boolean', 'DateTime', 'Json', 'BigInt', 'Float', 'Decimal', 'Bytes']);
const schema = readFileSync(new URL('../../../../packages/db/prisma/schema.prisma', import.meta.url), 'utf8');

/** Every scalar field of every model: [model, field, column]. */
function scalarFields(): Array<[string, string, string]> {
  const out: Array<[string, string, string]> = [];
  for (const [, model, body] of schema.matchAll(/^model (\w+) \{\n([\s\S]*?)\n\}/gm)) {
    for (const line of body!.split('\n')) {
      const m = /^\s+(\w+)\s+(\w+)[?[\]]*(.*)$/.exec(line);
      if (!m || !SCALARS.has(m[2]!)) continue;
      const mapped = /@map\("([^"]+)"\)/.exec(m[3]!);
      out.push([model!, m[1]!, mapped ? mapped[1]! : m[1]!]);
    }
  }
  return out;
}

describe('model columns', () => {
  it("every scalar field of the schema is stored under its name in snake_case", () => {
    const fields = scalarFields();
    // The parse found the models raw statements read (a parse finding nothing would prove nothing).
    for (const name of Object.values(Prisma.ChannelScalarFieldEnum)) expect(fields.some(([model, field]) => model === 'Channel' && field === name)).toBe(true);
    for (const name of Object.values(Prisma.UserScalarFieldEnum)) expect(fields.some(([model, field]) => model === 'User' && field === name)).toBe(true);
    expect(fields.filter(([, field, column]) => columnOf(field) !== column).map(([model, field, column]) => `${model}.${field} → ${column}`)).toEqual([]);
  });
});
