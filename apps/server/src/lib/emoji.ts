// Unicode emoji names: Zulip's table, for reactions and for `:name:` in messages.
//
// Zulip names its Unicode emoji itself rather than using iamcal's or gemoji's short names: each emoji
// has a canonical name and aliases (`1f44d`: `+1`, `thumbs_up`, `like`; `1f642`: `smile`; `1f6e0`:
// `working_on_it`, `hammer_and_wrench`, `tools`), and its name → code and code → name maps are built
// from that table alone. zulip-emoji.json next to this file is a copy of the table (Apache-2.0, from
// Zulip; apps/server/scripts/zulip-emoji.mjs regenerates it), read once, when this module is first
// imported.
//
// Codes are in Zulip's form: lower-case hex code points joined by `-`, with the variation selector
// U+FE0F left out (`2764` for :heart:, `0023-20e3` for :hash:), which is what Zulip puts in the
// `emoji-<code>` class of a rendered emoji and in a reaction's emoji_code.
import { readFileSync } from 'node:fs';

interface EmojiTable {
  /** code → [canonical name, ...aliases]. */
  codes: Record<string, string[]>;
}

function loadTable(): { names: ReadonlyMap<string, string>; canonical: ReadonlyMap<string, string> } {
  // Read next to this source file (import.meta.url keeps meaning this file in the esbuild bundle).
  const table = JSON.parse(readFileSync(new URL('./zulip-emoji.json', import.meta.url), 'utf8')) as EmojiTable;
  const names = new Map<string, string>();
  const canonical = new Map<string, string>();
  for (const [code, [first, ...aliases]] of Object.entries(table.codes)) {
    if (first === undefined) throw new Error(`zulip-emoji.json: emoji ${code} has no name`);
    canonical.set(code, first);
    for (const name of [first, ...aliases]) names.set(name, code);
  }
  return { names, canonical };
}

const { names: NAMES, canonical: CANONICAL } = loadTable();

/** The emoji code (e.g. `1f44d`) of a Unicode emoji name or alias (e.g. `thumbs_up`), or undefined for an unknown name (Zulip's name_to_codepoint). */
export function emojiCodeForName(name: string): string | undefined {
  return NAMES.get(name);
}

/** Whether `code` (Zulip's form, e.g. `1f44d`) is a Unicode emoji Zulip names (Zulip's codepoint_to_name). */
export function isUnicodeEmojiCode(code: string): boolean {
  return CANONICAL.has(code);
}
