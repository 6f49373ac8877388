// Regenerates apps/server/src/lib/zulip-emoji.json, Parley's table of Unicode emoji names, from Zulip's
// own table (for maintainers; neither the server nor the tests run this).
//
// Zulip names its Unicode emoji itself (tools/setup/emoji/emoji_names.py in the Zulip server
// repository: for each emoji code a canonical name and aliases); its name → code and code → name maps
// (name_to_codepoint, codepoint_to_name) are built from that table alone. zulip-terminal ships a copy
// of it (zulipterminal/unicode_emojis.py: canonical name → code and aliases). Either file is accepted:
//
//   node apps/server/scripts/zulip-emoji.mjs <zulip-terminal checkout | Zulip checkout | the .py file>
//
// e.g. from the bare mirror of zulip-terminal:
//   mkdir -p /tmp/zt && git --git-dir=<mirror>/repo archive HEAD | tar -x -C /tmp/zt
//   node apps/server/scripts/zulip-emoji.mjs /tmp/zt
//
// The output maps each code (Zulip's form: lower-case hex code points joined by `-`, no U+FE0F) to its
// names, the canonical name first; one code per line, codes sorted, so that updates diff well.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const OUTPUT = fileURLToPath(new URL('../src/lib/zulip-emoji.json', import.meta.url));
const CANDIDATES = ['zulipterminal/unicode_emojis.py', 'tools/setup/emoji/emoji_names.py'];
const CODE = /^[0-9a-f]{1,6}(-[0-9a-f]{1,6})*$/;

function inputFile(arg) {
  if (!arg) throw new Error('usage: node apps/server/scripts/zulip-emoji.mjs <checkout or .py file>');
  if (statSync(arg).isFile()) return arg;
  for (const candidate of CANDIDATES) {
    const file = path.join(arg, candidate);
    if (existsSync(file)) return file;
  }
  throw new Error(`${arg} holds neither ${CANDIDATES.join(' nor ')}`);
}

/**
 * The value assigned to `name` in a Python source file, for the literals these tables use: dicts,
 * lists, strings (either quote, backslash escapes), with comments and trailing commas.
 */
function pythonLiteral(source, name) {
  const start = new RegExp(`^${name}\\s*(?::[^=\\n]*)?=\\s*`, 'm').exec(source);
  if (!start) throw new Error(`no ${name} = ... in the input`);
  let pos = start.index + start[0].length;

  const skip = () => {
    for (;;) {
      while (pos < source.length && /\s/.test(source[pos])) pos++;
      if (source[pos] !== '#') return;
      while (pos < source.length && source[pos] !== '\n') pos++;
    }
  };
  const fail = (what) => {
    throw new Error(`${what} at offset ${pos}: ${JSON.stringify(source.slice(pos, pos + 40))}`);
  };
  const string = () => {
    const quote = source[pos++];
    let out = '';
    while (source[pos] !== quote) {
      if (pos >= source.length || source[pos] === '\n') fail('unterminated string');
      if (source[pos] === '\\') {
        const next = source[pos + 1];
        const simple = { n: '\n', t: '\t', '\\': '\\', "'": "'", '"': '"' }[next];
        if (simple !== undefined) {
          out += simple;
          pos += 2;
        } else if (next === 'u' || next === 'x' || next === 'U') {
          const length = { x: 2, u: 4, U: 8 }[next];
          out += String.fromCodePoint(parseInt(source.slice(pos + 2, pos + 2 + length), 16));
          pos += 2 + length;
        } else {
          fail('unsupported escape');
        }
      } else {
        out += source[pos++];
      }
    }
    pos++;
    return out;
  };
  const value = () => {
    skip();
    const c = source[pos];
    if (c === "'" || c === '"') return string();
    if (c === '{' || c === '[') {
      const isDict = c === '{';
      const close = isDict ? '}' : ']';
      const out = isDict ? {} : [];
      pos++;
      for (;;) {
        skip();
        if (source[pos] === close) {
          pos++;
          return out;
        }
        const item = value();
        if (isDict) {
          skip();
          if (source[pos++] !== ':') fail('expected :');
          if (typeof item !== 'string') fail('non-string key');
          if (Object.hasOwn(out, item)) fail(`duplicate key ${item}`);
          out[item] = value();
        } else {
          out.push(item);
        }
        skip();
        if (source[pos] === ',') pos++;
        else if (source[pos] !== close) fail(`expected , or ${close}`);
      }
    }
    return fail('unsupported value');
  };
  return value();
}

/** code → [canonical name, ...aliases], from either file's shape. */
function namesByCode(source) {
  const entries = [];
  if (/^EMOJI_DATA\b/m.test(source)) {
    // zulip-terminal: canonical name → { code, aliases }.
    for (const [name, info] of Object.entries(pythonLiteral(source, 'EMOJI_DATA'))) entries.push([info.code, [name, ...info.aliases]]);
  } else {
    // Zulip: code → { canonical_name, aliases }.
    for (const [code, info] of Object.entries(pythonLiteral(source, 'EMOJI_NAME_MAPS'))) entries.push([code, [info.canonical_name, ...info.aliases]]);
  }
  const seen = new Map();
  const byCode = new Map();
  for (const [code, names] of entries) {
    if (typeof code !== 'string' || !CODE.test(code)) throw new Error(`bad emoji code ${JSON.stringify(code)}`);
    if (byCode.has(code)) throw new Error(`emoji code ${code} twice`);
    for (const name of names) {
      if (typeof name !== 'string' || name === '' || name.includes(':')) throw new Error(`bad emoji name ${JSON.stringify(name)} (${code})`);
      if (seen.has(name)) throw new Error(`emoji name ${name} names both ${seen.get(name)} and ${code}`);
      seen.set(name, code);
    }
    byCode.set(code, names);
  }
  return new Map([...byCode].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const file = inputFile(process.argv[2]);
const source = readFileSync(file, 'utf8');
const table = namesByCode(source);
const copiedBy = /^EMOJI_DATA\b/m.test(source) ? ", as zulip-terminal copies it (zulipterminal/unicode_emojis.py)" : '';
const header = {
  about:
    "Zulip's names of Unicode emoji: each emoji code (lower-case hex code points joined by '-', without U+FE0F) " +
    'with its names, the canonical name first, then its aliases. From Zulip\'s tools/setup/emoji/emoji_names.py' +
    `${copiedBy}; regenerate with apps/server/scripts/zulip-emoji.mjs.`,
  license: 'Apache-2.0; Copyright Kandra Labs, Inc. and other Zulip contributors.',
};
const lines = [...table].map(([code, names]) => `    ${JSON.stringify(code)}: ${JSON.stringify(names)}`);
const text = `{\n  "about": ${JSON.stringify(header.about)},\n  "license": ${JSON.stringify(header.license)},\n  "codes": {\n${lines.join(',\n')}\n  }\n}\n`;
JSON.parse(text);
writeFileSync(OUTPUT, text);
const names = [...table.values()].reduce((n, list) => n + list.length, 0);
console.log(`${path.relative(process.cwd(), OUTPUT)}: ${table.size} emoji, ${names} names (from ${file})`);
