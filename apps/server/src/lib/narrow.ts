// Narrows, without I/O. One term model (a term in either wire shape, and what each operator spelling
// means) read two ways: GET /messages and POST /messages/flags/narrow (Zulip's lib/narrow.py) parse the
// terms strictly and check their operands, then turn them, once the channels and users they name have
// been looked up, into message conditions the data layer compiles to SQL (data/message-fetch.repo.ts);
// event-queue narrows (/register's `narrow`) are read leniently and matched against message events
// (events/present.ts matchesNarrow). Also the search highlighting of the results (Zulip's
// highlight_string).
//
// Security invariant (Zulip's NarrowBuilder): a condition only ever removes messages from the set the
// caller may read; negated terms are negated conditions, never a way to reach other rows.
import { JsonableError } from '../errors.ts';
import { MESSAGE_FLAG_BITS } from './message-flags.ts';
import { topicFromClient } from './message-limits.ts';

export type NarrowOperand = string | number | number[];

/**
 * One term of a narrow, from either wire shape: [operator, operand] (never negated) or {operator,
 * operand, negated}. `operator` is the spelling the client sent (error texts quote it); what it means
 * is operatorMeaning's answer. Parsed terms (parseNarrow) have a checked operand; an event queue's
 * (normaliseNarrow) have whatever was stored.
 */
export interface NarrowTerm<Operand = NarrowOperand> {
  operator: string;
  operand: Operand;
  negated: boolean;
}

/** Zulip's BadNarrowOperatorError. */
export class BadNarrowError extends JsonableError {
  constructor(desc: string) {
    super(`Invalid narrow operator: ${desc}`, { code: 'BAD_NARROW', data: { desc } });
  }
}

/** Zulip's InvalidOperatorCombinationError. */
export class InvalidNarrowCombinationError extends JsonableError {
  constructor(desc: string) {
    super(`Invalid narrow operator combination: ${desc}`, { code: 'BAD_NARROW', data: { desc } });
  }
}

/** Zulip's LARGER_THAN_MAX_MESSAGE_ID: the anchor of `newest`. */
export const LARGER_THAN_MAX_MESSAGE_ID = 10_000_000_000_000_000;
/** Message ids are PostgreSQL integers. */
export const MAX_MESSAGE_ID = 2_147_483_647;

// ---------------------------------------------------------------------------------------------
// The term model: what each operator spelling means, for each of the two readers.

/** The operators, each by its own name; older spellings stand for them (OPERATOR_SPELLINGS). */
export type NarrowOperator = 'channel' | 'channels' | 'topic' | 'sender' | 'near' | 'id' | 'search' | 'has' | 'in' | 'is' | 'dm' | 'dm-including' | 'group-pm-with' | 'with';

/** GET /messages and POST /messages/flags/narrow ('messages'), or an event queue's narrow ('events'). */
export type NarrowReader = 'messages' | 'events';

/**
 * Every spelling of an operator, and the operator it means. `only`: the one reader that knows the
 * spelling: GET /messages has no `subject` (Zulip's NarrowBuilder: `unknown operator subject`), and
 * event-queue narrows do not know the underscored forms (which, as any operator they do not know, then
 * do not filter).
 */
const OPERATOR_SPELLINGS = new Map<string, { means: NarrowOperator; only?: NarrowReader }>([
  ['channel', { means: 'channel' }],
  ['stream', { means: 'channel' }],
  ['channels', { means: 'channels' }],
  ['streams', { means: 'channels' }],
  ['topic', { means: 'topic' }],
  ['subject', { means: 'topic', only: 'events' }],
  ['sender', { means: 'sender' }],
  ['near', { means: 'near' }],
  ['id', { means: 'id' }],
  ['search', { means: 'search' }],
  ['has', { means: 'has' }],
  ['in', { means: 'in' }],
  ['is', { means: 'is' }],
  ['dm', { means: 'dm' }],
  ['pm-with', { means: 'dm' }],
  ['pm_with', { means: 'dm', only: 'messages' }],
  ['dm-including', { means: 'dm-including' }],
  ['group-pm-with', { means: 'group-pm-with' }],
  ['group_pm_with', { means: 'group-pm-with', only: 'messages' }],
  ['with', { means: 'with' }],
]);

/** The operator a spelling means to `reader`; null: not an operator it knows. */
export function operatorMeaning(spelling: string, reader: NarrowReader): NarrowOperator | null {
  const known = OPERATOR_SPELLINGS.get(spelling);
  return known && (known.only === undefined || known.only === reader) ? known.means : null;
}

/** What an `is` operand means: is:private is the older spelling of is:dm. */
export function isOperandMeaning<T>(operand: T): T | 'dm' {
  return operand === 'private' ? 'dm' : operand;
}

/** Whether the term's operator means `operator` to GET /messages. */
const means = (term: NarrowTerm<unknown>, operator: NarrowOperator) => operatorMeaning(term.operator, 'messages') === operator;

// Zulip's NarrowParameter and can_narrow_define_conversation list these by spelling (no underscored
// forms): they stay lists of spellings.
const DM_OPERATORS = new Set(['dm', 'pm-with']);
/** Operators whose operand may be a string or an integer (ids). */
const ID_OPERATORS = new Set(['channel', 'stream', 'id', 'sender', 'group-pm-with', 'dm-including', 'with']);
/** Operators a spectator may use (Zulip's is_spectator_compatible). */
const SPECTATOR_OPERATORS = new Set<NarrowOperator | null>(['channel', 'channels', 'topic', 'sender', 'has', 'search', 'near', 'id', 'with']);

const isInteger = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);

/** Python's str() of an operand, as Zulip's error texts show it. */
export function operandText(operand: NarrowOperand): string {
  return Array.isArray(operand) ? `[${operand.join(', ')}]` : String(operand);
}

// ---------------------------------------------------------------------------------------------
// Reading terms: the two wire shapes; strictly (Zulip's NarrowParameter: element shapes, then operand
// types by operator) for GET /messages, leniently for event queues.

/** The parts of one element of a narrow list, in either shape, unchecked. */
function termParts(element: unknown): { operator: unknown; operand: unknown; negated: unknown } {
  if (Array.isArray(element)) return { operator: element[0], operand: element[1], negated: false };
  const e = element as Record<string, unknown>;
  return { operator: e['operator'], operand: e['operand'], negated: e['negated'] };
}

/**
 * An event queue's narrow as terms, unchecked (it only ever filters events): not a list, no terms; the
 * operator as text, negated only when `true`.
 */
export function normaliseNarrow(narrow: unknown): NarrowTerm<unknown>[] {
  if (!Array.isArray(narrow)) return [];
  return narrow.map((element) => {
    const { operator, operand, negated } = termParts(element);
    return { operator: String(operator), operand, negated: negated === true };
  });
}

function elementError(index: number, message: string): JsonableError {
  return new JsonableError(`Invalid narrow[${index}]: Value error, ${message}`);
}

/** The narrow parameter as decoded (a JSON list), as terms; throws Zulip's parsing errors. */
export function parseNarrow(raw: unknown): NarrowTerm[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new JsonableError('narrow is not a list');
  return raw.map((element, index) => parseTerm(element, index));
}

function parseTerm(element: unknown, index: number): NarrowTerm {
  if (Array.isArray(element)) {
    if (element.length !== 2 || element.some((x) => typeof x !== 'string')) throw elementError(index, 'element is not a string pair');
  } else if (element !== null && typeof element === 'object') {
    const e = element as Record<string, unknown>;
    if (e['operand'] === undefined || e['operand'] === null) throw elementError(index, 'operand is missing');
    if (e['operator'] === undefined || e['operator'] === null) throw elementError(index, 'operator is missing');
  } else {
    throw elementError(index, 'dict or list required');
  }
  const parts = termParts(element);
  const { operator, operand } = parts;
  const negated = parts.negated ?? false;
  // Operand first, then operator and negated (Zulip's validate_terms order); plain messages.
  const op = typeof operator === 'string' ? operator : '';
  if (ID_OPERATORS.has(op)) {
    if (typeof operand !== 'string' && !isInteger(operand)) throw new JsonableError('operand is not a string or integer');
  } else if (DM_OPERATORS.has(op)) {
    if (Array.isArray(operand)) {
      const bad = operand.findIndex((x) => !isInteger(x));
      if (bad >= 0) throw new JsonableError(`operand[${bad}] is not an integer`);
    } else if (typeof operand !== 'string') {
      throw new JsonableError('operand is not a string or an integer list');
    }
  } else if (op === 'search') {
    if (typeof operand !== 'string') throw new JsonableError('operand is not a string');
    if (operand.trim() === '') throw new JsonableError('operand cannot be blank');
  } else if (typeof operand !== 'string') {
    throw new JsonableError('operand is not a string');
  }
  if (typeof operator !== 'string') throw new JsonableError('operator is not a string');
  if (typeof negated !== 'boolean') throw new JsonableError('negated is not a boolean');
  return { operator, operand: operand as NarrowOperand, negated };
}

/**
 * Zulip's update_narrow_terms_containing_empty_topic_fallback_name: the first topic term naming the
 * empty topic by one of its display names means "".
 */
export function renameEmptyTopicTerms(terms: NarrowTerm[]): NarrowTerm[] {
  const i = terms.findIndex((t) => means(t, 'topic'));
  if (i < 0) return terms;
  const t = terms[i]!;
  if (typeof t.operand !== 'string' || topicFromClient(t.operand) === t.operand) return terms;
  return terms.map((term, j) => (j === i ? { ...term, operand: '' } : term));
}

/** Zulip's can_narrow_define_conversation (used when a `with` message cannot be read). */
export function narrowDefinesConversation(terms: NarrowTerm[]): boolean {
  let channel = false;
  let topic = false;
  for (const t of terms) {
    if (DM_OPERATORS.has(t.operator)) return true;
    if (means(t, 'channel')) channel = true;
    else if (means(t, 'topic')) topic = true;
    if (channel && topic) return true;
  }
  return false;
}

/** The message id of a `with` operand (Python's int()), or null. */
export function withMessageId(operand: NarrowOperand): number | null {
  if (isInteger(operand)) return operand;
  if (typeof operand === 'string' && /^\s*[+-]?\d+\s*$/.test(operand)) return Number(operand.trim());
  return null;
}

/** The operators of a spectator's narrow must all be spectator-compatible, and one must be channels:web-public. */
export function isSpectatorNarrow(terms: NarrowTerm[]): boolean {
  const webPublic = terms.some((t) => means(t, 'channels') && t.operand === 'web-public' && !t.negated);
  return webPublic && terms.every((t) => SPECTATOR_OPERATORS.has(operatorMeaning(t.operator, 'messages')));
}

/** Zulip's clean_narrow_for_web_public_api: spectators may send in:home, which means nothing to them. */
export const withoutInHome = (terms: NarrowTerm[]) => terms.filter((t) => !(means(t, 'in') && t.operand === 'home' && !t.negated));

// ---------------------------------------------------------------------------------------------
// Lookups a narrow needs, and building its conditions.

export interface NarrowLookups {
  channelNames: string[];
  channelIds: number[];
  userEmails: string[];
  userIds: number[];
}

/** The channels and users the terms name (looked up in bulk before building). */
export function narrowLookups(terms: NarrowTerm[]): NarrowLookups {
  const out: NarrowLookups = { channelNames: [], channelIds: [], userEmails: [], userIds: [] };
  for (const { operator, operand } of terms) {
    const meaning = operatorMeaning(operator, 'messages');
    if (meaning === 'channel') {
      if (typeof operand === 'string') out.channelNames.push(operand);
      else if (isInteger(operand)) out.channelIds.push(operand);
    } else if (meaning === 'sender' || meaning === 'dm-including' || meaning === 'group-pm-with') {
      if (typeof operand === 'string') out.userEmails.push(operand);
      else if (isInteger(operand)) out.userIds.push(operand);
    } else if (meaning === 'dm') {
      if (typeof operand === 'string') out.userEmails.push(...operand.split(','));
      else if (Array.isArray(operand)) out.userIds.push(...operand);
    }
  }
  return out;
}

/** What building needs to know about a channel a term names. */
export interface NarrowChannel {
  id: number;
  isWebPublic: boolean;
  /** The viewer may read the channel's whole history (Zulip's can_access_stream_history). */
  historyReadable: boolean;
}

export interface NarrowContext {
  /** The viewer's id; null for spectators. */
  viewerId: number | null;
  /** Not a guest (Zulip's can_access_public_streams). */
  canAccessPublicChannels: boolean;
  channelByName(name: string): NarrowChannel | undefined;
  channelById(id: number): NarrowChannel | undefined;
  userByEmail(email: string): number | undefined;
  userById(id: number): number | undefined;
}

export type HasOperand = 'link' | 'image' | 'attachment' | 'reaction';

/** One condition on a message (and, for flags, the viewer's user_message row). */
export type MessageCondition =
  | { kind: 'channel'; channelId: number }
  | { kind: 'public-channels' }
  | { kind: 'web-public-channels' }
  | { kind: 'topic'; topic: string }
  | { kind: 'direct' }
  /** Exactly the conversation of these people (ascending, the viewer included). */
  | { kind: 'conversation'; userIds: number[] }
  /** Direct messages with this person among the participants; groups only (3 people or more) when asked. */
  | { kind: 'direct-including'; userId: number; groupsOnly: boolean }
  | { kind: 'sender'; userId: number }
  | { kind: 'flags-set'; mask: number }
  | { kind: 'unread' }
  | { kind: 'resolved' }
  /** Muted for the viewer: a muted topic, or (unless `topicsOnly`) a muted channel's topic not unmuted or followed. */
  | { kind: 'muted'; topicsOnly: boolean }
  | { kind: 'followed' }
  | { kind: 'id'; id: number }
  | { kind: 'has'; what: HasOperand }
  /** Full-text match of the query; each quoted phrase must also appear as such in the content or the topic (case-insensitive). */
  | { kind: 'search'; query: string; phrases: string[] }
  | { kind: 'never' };

export interface NarrowCondition {
  condition: MessageCondition;
  negated: boolean;
}

export interface BuiltNarrow {
  conditions: NarrowCondition[];
  /**
   * Set when the narrow searches (results then carry match_content and match_subject), with the joined
   * positive search operands whose words are highlighted.
   */
  search: { highlight: string | null } | null;
  /** Whether messages without a user_message row of the viewer may match (Zulip's ok_to_include_history). */
  includeHistory: boolean;
  /** Some term names a channel (muted channels are then not skipped by first_unread). */
  hasChannelTerm: boolean;
}

const MENTION_MASK =
  MESSAGE_FLAG_BITS.mentioned | MESSAGE_FLAG_BITS.stream_wildcard_mentioned | MESSAGE_FLAG_BITS.topic_wildcard_mentioned | MESSAGE_FLAG_BITS.group_mentioned;

/**
 * The conditions of the terms, in Zulip's order: each term in turn (search terms last, joined), the
 * first failure reported. `with` terms must have been replaced before (see queries/messages.ts).
 */
export function buildNarrow(terms: NarrowTerm[], ctx: NarrowContext): BuiltNarrow {
  const conditions: NarrowCondition[] = [];
  const push = (condition: MessageCondition, negated: boolean) => conditions.push({ condition, negated });
  let channelNarrow = false;
  let dmNarrow = false;
  // Zulip's check_not_both_channel_and_dm_narrow: only positive terms say what a message must be.
  const mark = (kind: 'channel' | 'dm', negated: boolean) => {
    if (negated) return;
    if (kind === 'channel') channelNarrow = true;
    else dmNarrow = true;
    if (channelNarrow && dmNarrow) throw new BadNarrowError('No message can be both a channel message and direct message');
  };
  const spectator = ctx.viewerId === null;

  for (const { operator, operand, negated } of terms) {
    const meaning = operatorMeaning(operator, 'messages');
    switch (meaning) {
      case 'channel': {
        mark('channel', negated);
        const channel = typeof operand === 'string' ? ctx.channelByName(operand) : ctx.channelById(operand as number);
        if (!channel) throw new BadNarrowError(`unknown channel ${operandText(operand)}`);
        if (spectator && !channel.isWebPublic) throw new BadNarrowError(`unknown web-public channel ${operandText(operand)}`);
        push({ kind: 'channel', channelId: channel.id }, negated);
        break;
      }
      case 'channels':
        mark('channel', negated);
        if (operand === 'public') push({ kind: 'public-channels' }, negated);
        else if (operand === 'web-public') push({ kind: 'web-public-channels' }, negated);
        else throw new BadNarrowError(`unknown channels operand ${operandText(operand)}`);
        break;
      case 'topic':
        mark('channel', negated);
        push({ kind: 'topic', topic: operand as string }, negated);
        break;
      case 'sender': {
        const id = typeof operand === 'string' ? ctx.userByEmail(operand) : ctx.userById(operand as number);
        if (id === undefined) throw new BadNarrowError(`unknown user ${operandText(operand)}`);
        push({ kind: 'sender', userId: id }, negated);
        break;
      }
      case 'near':
        break;
      case 'id': {
        const text = String(operand);
        if (!/^[0-9]+$/.test(text) || Number(text) > MAX_MESSAGE_ID) throw new BadNarrowError('Invalid message ID');
        push({ kind: 'id', id: Number(text) }, negated);
        break;
      }
      case 'search':
        break;
      case 'has':
        if (operand === 'link' || operand === 'image' || operand === 'attachment' || operand === 'reaction') push({ kind: 'has', what: operand }, negated);
        else throw new BadNarrowError(`unknown 'has' operand ${operandText(operand)}`);
        break;
      case 'in':
        if (operand === 'home') push({ kind: 'muted', topicsOnly: false }, !negated);
        else if (operand !== 'all') throw new BadNarrowError(`unknown 'in' operand ${operandText(operand)}`);
        break;
      case 'is':
        buildIs(operand as string, negated, push, mark);
        break;
      case 'dm': {
        mark('dm', negated);
        const users = typeof operand === 'string' ? operand.split(',').map((e) => ctx.userByEmail(e)) : (operand as number[]).map((id) => ctx.userById(id));
        if (users.some((u) => u === undefined)) throw new BadNarrowError(`unknown user in ${operandText(operand)}`);
        if (users.length === 0) {
          push({ kind: 'never' }, negated);
          break;
        }
        const ids = [...new Set([...(users as number[]), ctx.viewerId!])].sort((a, b) => a - b);
        push({ kind: 'conversation', userIds: ids }, negated);
        break;
      }
      case 'dm-including':
      case 'group-pm-with': {
        mark('dm', negated);
        const id = typeof operand === 'string' ? ctx.userByEmail(operand) : ctx.userById(operand as number);
        if (id === undefined) throw new BadNarrowError(`unknown user ${operandText(operand)}`);
        const groupsOnly = meaning !== 'dm-including';
        push(id === ctx.viewerId && !groupsOnly ? { kind: 'direct' } : { kind: 'direct-including', userId: id, groupsOnly }, negated);
        break;
      }
      default:
        // Unknown, and `with` (replaced before).
        throw new BadNarrowError(`unknown operator ${operator}`);
    }
  }

  // Zulip's _by_search_tsearch on the joined operands: a full-text match, and quoted phrases must also
  // appear as such. Negated search terms (which Zulip folds into the positive search, dropping the
  // negation) each exclude the messages they would match.
  const searchTerms = terms.filter((t) => means(t, 'search'));
  const positive = searchTerms.filter((t) => !t.negated).map((t) => t.operand as string);
  const addSearch = (text: string, negated: boolean) => {
    const phrases = (text.match(/"[^"]+"|\S+/g) ?? []).filter((p) => p.length >= 2 && p.startsWith('"') && p.endsWith('"')).map((p) => p.slice(1, -1));
    push({ kind: 'search', query: text, phrases }, negated);
  };
  if (positive.length > 0) addSearch(positive.join(' '), false);
  for (const t of searchTerms) if (t.negated) addSearch(t.operand as string, true);
  const search = searchTerms.length > 0 ? { highlight: positive.length > 0 ? positive.join(' ') : null } : null;

  return { conditions, search, includeHistory: includesHistory(terms, ctx), hasChannelTerm: terms.some((t) => means(t, 'channel')) };
}

function buildIs(
  operand: string,
  negated: boolean,
  push: (c: MessageCondition, negated: boolean) => void,
  mark: (kind: 'channel' | 'dm', negated: boolean) => void,
): void {
  switch (isOperandMeaning(operand)) {
    case 'dm':
      // "Not a direct message" says the message is a channel message.
      if (negated) mark('channel', false);
      else mark('dm', false);
      push({ kind: 'direct' }, negated);
      return;
    case 'starred':
      push({ kind: 'flags-set', mask: MESSAGE_FLAG_BITS.starred }, negated);
      return;
    case 'unread':
      push({ kind: 'unread' }, negated);
      return;
    case 'mentioned':
      push({ kind: 'flags-set', mask: MENTION_MASK }, negated);
      return;
    case 'alerted':
      push({ kind: 'flags-set', mask: MESSAGE_FLAG_BITS.has_alert_word }, negated);
      return;
    case 'resolved':
      push({ kind: 'resolved' }, negated);
      return;
    case 'followed':
      push({ kind: 'followed' }, negated);
      return;
    case 'muted':
      push({ kind: 'muted', topicsOnly: false }, negated);
      return;
    default:
      throw new BadNarrowError(`unknown 'is' operand ${operand}`);
  }
}

/**
 * Zulip's ok_to_include_history: a positive channel term for a channel whose history the viewer may
 * read (the last channel term decides), or a positive channels:public for non-guests; and no `is:`
 * term other than is:resolved (those are about the viewer's own rows). Spectators always read history
 * (limited to web-public channels by their mandatory channels:web-public term).
 */
function includesHistory(terms: NarrowTerm[], ctx: NarrowContext): boolean {
  if (ctx.viewerId === null) return true;
  let include = false;
  for (const t of terms) {
    if (means(t, 'channel') && !t.negated) {
      const channel = typeof t.operand === 'string' ? ctx.channelByName(t.operand) : ctx.channelById(t.operand as number);
      include = channel?.historyReadable ?? false;
    } else if (means(t, 'channels') && t.operand === 'public' && !t.negated && ctx.canAccessPublicChannels) {
      include = true;
    }
  }
  if (terms.some((t) => means(t, 'is') && t.operand !== 'resolved')) include = false;
  return include;
}

// ---------------------------------------------------------------------------------------------
// Search highlighting.

/** Delimiters ts_headline puts around matches; they cannot occur in rendered messages or escaped topics. */
export const TS_START = '<ts-match>';
export const TS_STOP = '</ts-match>';

/** The (offset, length) of each delimited match, in the text without the delimiters. */
export function matchLocations(delimited: string): Array<[number, number]> {
  const locs: Array<[number, number]> = [];
  let plainLength = 0;
  let i = 0;
  while (i < delimited.length) {
    const start = delimited.indexOf(TS_START, i);
    if (start < 0) break;
    plainLength += start - i;
    const stop = delimited.indexOf(TS_STOP, start + TS_START.length);
    if (stop < 0) break;
    const length = stop - start - TS_START.length;
    locs.push([plainLength, length]);
    plainLength += length;
    i = stop + TS_STOP.length;
  }
  return locs;
}

/** Zulip's highlight_string: wraps each match in a highlight span, except matches inside an HTML tag. */
export function highlightString(text: string, locs: Array<[number, number]>): string {
  const start = '<span class="highlight">';
  const stop = '</span>';
  let pos = 0;
  let result = '';
  let inTag = false;
  for (const [offset, length] of locs) {
    const prefix = text.slice(pos, offset);
    const match = text.slice(offset, offset + length);
    for (const character of prefix + match) {
      if (character === '<') inTag = true;
      else if (character === '>') inTag = false;
    }
    result += inTag ? prefix + match : prefix + start + match + stop;
    pos = offset + length;
  }
  return result + text.slice(pos);
}
