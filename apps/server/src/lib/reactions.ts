// Emoji reactions: which emoji a reaction names (Zulip's get_emoji_data, used when a request leaves out
// the code or the type) and whether a name, code and type agree (Zulip's check_emoji_request), and the
// reaction objects of messages and `reaction` events.
//
// Three namespaces (reaction_type): `unicode_emoji` (code: lower-case hex code points joined by `-`,
// lib/emoji.ts), `realm_emoji` (an organization's custom emoji; code: its id, lib/realm-emoji.ts) and
// `zulip_extra_emoji` (only `zulip`, code `zulip`).
import { JsonableError } from '../errors.ts';
import { emojiCodeForName, isUnicodeEmojiCode } from './emoji.ts';
import { NO_REALM_EMOJI, type RealmEmojiIndex } from './realm-emoji.ts';

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
 * the organization, else `zulip`, else a Unicode emoji name; `Emoji '<name>' does
 * not exist` otherwise.
 */
export function emojiForName(name: string, realmEmoji: RealmEmojiIndex = NO_REALM_EMOJI): { code: string; type: string } {
  const custom = realmEmoji.activeByName.get(name);
  if (custom) return { code: custom.id, type: ReactionType.REALM };
  if (name === ZULIP_EMOJI) return { code: ZULIP_EMOJI, type: ReactionType.ZULIP_EXTRA };
  const code = emojiCodeForName(name);
  if (code !== undefined) return { code, type: ReactionType.UNICODE };
  throw new JsonableError(`Emoji '${name}' does not exist`);
}

/**
 * Zulip's check_emoji_request: why a new reaction (not a vote for an existing one) may not name this
 * emoji, or null when it may. The caller raises it only once it knows the reaction is no vote.
 */
export function emojiRequestError(name: string, code: string, type: string, realmEmoji: RealmEmojiIndex = NO_REALM_EMOJI): JsonableError | null {
  switch (type) {
    case ReactionType.REALM: {
      const custom = realmEmoji.byId.get(code);
      if (!custom) return new JsonableError('Invalid custom emoji.');
      if (custom.name !== name) return new JsonableError('Invalid custom emoji name.');
      if (custom.deactivated) return new JsonableError('This custom emoji has been deactivated.');
      return null;
    }
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
