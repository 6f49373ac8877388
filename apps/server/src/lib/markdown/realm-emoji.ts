// `:name:` of an organization's custom emoji in Markdown (Zulip's realm emoji, which take precedence
// over a Unicode emoji of the same name): an image, as Zulip renders it,
// `<img alt=":name:" class="emoji" src="<source_url>" title="name with spaces">`.
import type { EmojiInfo, RealmEmojiIndex } from '../realm-emoji.ts';

/** Inline token of a custom emoji: meta.realmEmoji holds its EmojiInfo. */
export const REALM_EMOJI_TOKEN = 'zulip_realm_emoji';

/** The active custom emoji named `name`, if the rendering knows the organization's. */
export const realmEmojiNamed = (index: RealmEmojiIndex | null, name: string): EmojiInfo | undefined => index?.activeByName.get(name);

const escapeAttribute = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function renderRealmEmoji(emoji: EmojiInfo): string {
  return `<img alt=":${escapeAttribute(emoji.name)}:" class="emoji" src="${escapeAttribute(emoji.source_url)}" title="${escapeAttribute(emoji.name.replace(/_/g, ' '))}">`;
}
