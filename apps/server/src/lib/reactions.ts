// Emoji reactions: which emoji a reaction names (Zulip's get_emoji_data, used when a request leaves out
// the code or the type) and whether a name, code and type agree (Zulip's check_emoji_request), and the
// reaction objects of messages and `reaction` events.
//
// Three namespaces (reaction_type): `unicode_emoji` (code: lower-case hex code points joined by `-`,
// lib/emoji.ts), `realm_emoji` (an organization's custom emoji; code: its id; Parley has none yet, so
// no such code is valid) and `zulip_extra_emoji` (only `zulip`, code `zulip`).
import { JsonableError } from '../errors.ts';
import { emojiCodeForName, isUnicodeEmojiCode } from './emoji.ts';

export const ReactionType = { UNICODE: 'unicode_emoji', REALM: 'realm_emoji', ZULIP_EXTRA: 'zulip_extra_emoji' } as const;

/** The one emoji of the zulip_extra_emoji namespace: its name and its code. */
const ZULIP_EMOJI = 'zulip';

/** A reaction as message objects list it (`reactions`), in reaction order. */
export interface MessageReaction {
  emoji_name: string;
  emoji_code: string;
  reaction_type: string;
  user_id: number;
}

/**
 * The code and type of the emoji a name denotes (Zulip's get_emoji_data): an active custom emoji of
 * the organization (none in Parley), else `zulip`, else a Unicode emoji name; `Emoji '<name>' does
 * not exist` otherwise.
 */
export function emojiForName(name: string): { code: string; type: string } {
  if (name === ZULIP_EMOJI) return { code: ZULIP_EMOJI, type: ReactionType.ZULIP_EXTRA };
  const code = emojiCodeForName(name);
  if (code !== undefined) return { code, type: ReactionType.UNICODE };
  throw new JsonableError(`Emoji '${name}' does not exist`);
}

/**
 * Zulip's check_emoji_request: why a new reaction (not a vote for an existing one) may not name this
 * emoji, or null when it may. The caller raises it only once it knows the reaction is no vote.
 */
export function emojiRequestError(name: string, code: string, type: string): JsonableError | null {
  switch (type) {
    case ReactionType.REALM:
      // No custom emoji exist: every code is unknown.
      return new JsonableError('Invalid custom emoji.');
    case ReactionType.ZULIP_EXTRA:
      if (code !== ZULIP_EMOJI) return new JsonableError('Invalid emoji code.');
      if (name !== code) return new JsonableError('Invalid emoji name.');
      return null;
    case ReactionType.UNICODE:
      if (!isUnicodeEmojiCode(code)) return new JsonableError('Invalid emoji code.');
      if (emojiCodeForName(name) !== code) return new JsonableError('Invalid emoji name.');
      return null;
    default:
      return new JsonableError('Invalid emoji type.');
  }
}

export class ReactionExistsError extends JsonableError {
  constructor() {
    super('Reaction already exists.', { code: 'REACTION_ALREADY_EXISTS' });
  }
}

export class ReactionDoesNotExistError extends JsonableError {
  constructor() {
    super("Reaction doesn't exist.", { code: 'REACTION_DOES_NOT_EXIST' });
  }
}
