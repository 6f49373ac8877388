// Unicode emoji names for `:name:` in messages.
//
// The names are iamcal's emoji-datasource short names (`smile`, `+1`, `thumbsup`, `heart`, `tada`,
// `octopus`, ...), read from emojibase-data's copy of that table (`en/shortcodes/iamcal.json`, about
// 48 KB: one entry per emoji, hex code points → name or names), which is the only file of the package
// this module loads. It is read once, when the module is first imported.
//
// Codes are in Zulip's form: lower-case hex code points joined by `-`, with the variation selector
// U+FE0F left out (`2764` for :heart:, `0023-20e3` for :hash:), which is what Zulip puts in the
// `emoji-<code>` class of a rendered emoji and in a reaction's emoji_code.
import { createRequire } from 'node:module';

type ShortcodeTable = Record<string, string | string[]>;

/** Names that exist in the table but are not emoji on their own (Zulip refuses them too). */
const EXCLUDED_NAME = /^skin-tone-\d$/;

function loadNames(): ReadonlyMap<string, string> {
  // createRequire rather than a JSON import: JSON modules still print an experimental warning on
  // Node 20, and require resolves the same way under tsx and in the esbuild bundle (import.meta.url
  // keeps meaning this source file there).
  const require = createRequire(import.meta.url);
  const table = require('emojibase-data/en/shortcodes/iamcal.json') as ShortcodeTable;
  const names = new Map<string, string>();
  for (const [hexcode, value] of Object.entries(table)) {
    const code = toZulipCode(hexcode);
    for (const name of typeof value === 'string' ? [value] : value) {
      if (!EXCLUDED_NAME.test(name) && !names.has(name)) names.set(name, code);
    }
  }
  return names;
}

/** `1F937-200D-2640-FE0F` → `1f937-200d-2640`. */
function toZulipCode(hexcode: string): string {
  return hexcode
    .toLowerCase()
    .split('-')
    .filter((part) => part !== 'fe0f')
    .join('-');
}

const NAMES = loadNames();

/** The emoji code (e.g. `1f604`) of a Unicode emoji name (e.g. `smile`), or undefined for an unknown name. */
export function emojiCodeForName(name: string): string | undefined {
  return NAMES.get(name);
}

/** Every Unicode emoji code that has a name (the codes of NAMES): what a reaction's emoji_code may be. */
const CODES: ReadonlySet<string> = new Set(NAMES.values());

/** Whether `code` (Zulip's form, e.g. `1f44d`) is a Unicode emoji with a name (Zulip's codepoint_to_name). */
export function isUnicodeEmojiCode(code: string): boolean {
  return CODES.has(code);
}
