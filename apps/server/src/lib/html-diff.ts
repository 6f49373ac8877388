// content_html_diff of GET /messages/{message_id}/history: two renderings of a message compared word by
// word (jsdiff's array diff over tokens), tags kept whole so the result stays well-formed HTML; removed
// words are wrapped in <span class="highlight_text_deleted">, added ones in
// <span class="highlight_text_inserted">, as Zulip's web client styles them.
import { diffArrays } from 'diff';

/** Tags, runs of whitespace and words, in order (their concatenation is the input). */
const tokens = (html: string) => html.match(/<[^>]*>|\s+|[^<\s]+/g) ?? [];

export function htmlDiff(before: string, after: string): string {
  let out = '';
  for (const part of diffArrays(tokens(before), tokens(after))) {
    const kind = part.added ? 'inserted' : part.removed ? 'deleted' : null;
    for (const token of part.value) {
      // Tags (and whitespace) are never wrapped: a span must not straddle an element's boundary.
      if (kind === null || token.startsWith('<') || /^\s+$/.test(token)) {
        if (kind !== 'deleted' || !token.startsWith('<')) out += token;
      } else {
        out += `<span class="highlight_text_${kind}">${token}</span>`;
      }
    }
  }
  return out;
}
