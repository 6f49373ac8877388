// Users' statuses: what a status update asks for, checked as Zulip's check_update_user_status does,
// and a stored status as clients see it (Zulip's format_user_status).
import type { Schema } from '@parley/api-types';
import { JsonableError } from '../errors.ts';
import { emojiForName, emojiRequestError, ReactionType } from './reactions.ts';
import { NO_REALM_EMOJI, type RealmEmojiIndex } from './realm-emoji.ts';

/** Zulip's limit on a status text, in characters (code points), after stripping. */
export const MAX_STATUS_TEXT_LENGTH = 60;

/** A status update's parameters, as the request sent them. */
export interface StatusUpdateRequest {
  /** Deprecated: sets presence_enabled to its opposite. */
  away?: boolean;
  statusText?: string;
  emojiName?: string;
  emojiCode?: string;
  reactionType?: string;
}

/** What an update changes: a field left undefined is kept. */
export interface CheckedStatusUpdate {
  away?: boolean;
  statusText?: string;
  emoji?: { name: string; code: string; type: string };
}

/**
 * The status text stripped, or Zulip's parameter error when it is then over the limit (checked with
 * the other parameters, before anything else).
 */
export function checkStatusText(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const stripped = text.trim();
  if ([...stripped].length > MAX_STATUS_TEXT_LENGTH) throw new JsonableError(`status_text is too long (limit: ${MAX_STATUS_TEXT_LENGTH} characters)`);
  return stripped;
}

/**
 * Zulip's check_update_user_status: something must change; the empty emoji name clears the emoji
 * (whatever code and type came with it); a name without code or type takes them from the emoji the
 * name denotes; code or type without a name is refused; a named emoji must exist and agree with its
 * code and type. `statusText` is the already-checked text.
 */
export function checkStatusUpdate(request: StatusUpdateRequest, statusText: string | undefined, realmEmoji: RealmEmojiIndex = NO_REALM_EMOJI): CheckedStatusUpdate {
  const { away, emojiName } = request;
  if (away === undefined && statusText === undefined && emojiName === undefined) throw new JsonableError('Client did not pass any new values.');
  let emoji: CheckedStatusUpdate['emoji'];
  if (emojiName === '') {
    emoji = { name: '', code: '', type: ReactionType.UNICODE };
  } else if (emojiName !== undefined) {
    let code = request.emojiCode;
    let type = request.reactionType;
    if (code === undefined || type === undefined) {
      const found = emojiForName(emojiName, realmEmoji);
      code ??= found.code;
      type ??= found.type;
    }
    const error = emojiRequestError(emojiName, code, type, realmEmoji);
    if (error) throw error;
    emoji = { name: emojiName, code, type };
  } else if (request.emojiCode || request.reactionType) {
    throw new JsonableError('Client must pass emoji_name if they pass either emoji_code or reaction_type.');
  }
  return {
    ...(away !== undefined ? { away } : {}),
    ...(statusText !== undefined ? { statusText } : {}),
    ...(emoji ? { emoji } : {}),
  };
}

/** A status as clients see it (state, GET /users/{id}/status): only what is set. */
export type UserStatusObject = Schema<'UserStatus'>;

/** Zulip's format_user_status: `away` when presence is off, the text when set, the emoji's three fields when it has a name. */
export function formatUserStatus(row: { presenceEnabled: boolean; statusText: string; emojiName: string; emojiCode: string; reactionType: string }): UserStatusObject {
  const status: UserStatusObject = {};
  if (!row.presenceEnabled) status.away = true;
  if (row.statusText) status.status_text = row.statusText;
  if (row.emojiName) {
    status.emoji_name = row.emojiName;
    status.emoji_code = row.emojiCode;
    // Stored only after checkStatusUpdate accepted it: one of the three namespaces.
    status.reaction_type = row.reactionType as NonNullable<UserStatusObject['reaction_type']>;
  }
  return status;
}

/** The `user_status` event of a checked update (Zulip's do_update_user_status): only what it changed. */
export function userStatusEvent(userId: number, update: CheckedStatusUpdate): Record<string, unknown> {
  return {
    type: 'user_status',
    user_id: userId,
    ...(update.away !== undefined ? { away: update.away } : {}),
    ...(update.statusText !== undefined ? { status_text: update.statusText } : {}),
    ...(update.emoji ? { emoji_name: update.emoji.name, emoji_code: update.emoji.code, reaction_type: update.emoji.type } : {}),
  };
}
