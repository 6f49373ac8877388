// The narrow term model (lib/narrow.ts) and its two readers: GET /messages (parseNarrow, buildNarrow:
// strict, Zulip's errors) and event-queue narrows (events/present.ts matchesNarrow: lenient, names
// compared case-insensitively, operators it does not know do not filter).
import { describe, expect, it } from 'vitest';
import { BadNarrowError, buildNarrow, parseNarrow, type NarrowContext } from '../../src/lib/narrow.ts';
import { matchesNarrow } from '../../src/events/present.ts';

const channelMessage = { type: 'stream', stream_id: 7, display_recipient: 'Denmark', subject: 'Castle', sender_id: 3, sender_email: 'Iago@Example.com' };
const people = [
  { id: 3, email: 'iago@example.com' },
  { id: 4, email: 'Hamlet@example.com' },
];
const directMessage = { type: 'private', display_recipient: people, sender_id: 3, sender_email: 'iago@example.com' };
const toSelf = { type: 'private', display_recipient: [people[0]], sender_id: 3, sender_email: 'iago@example.com' };

describe('event-queue narrows (matchesNarrow)', () => {
  it('no narrow, or no list, lets everything through', () => {
    for (const narrow of [[], null, undefined, {}, 'channel']) expect(matchesNarrow(channelMessage, narrow)).toBe(true);
  });

  it('channel and stream: by name (case-insensitively) or id; never a direct message', () => {
    expect(matchesNarrow(channelMessage, [['stream', 'denmark']])).toBe(true);
    expect(matchesNarrow(channelMessage, [['channel', 'DENMARK']])).toBe(true);
    expect(matchesNarrow(channelMessage, [{ operator: 'channel', operand: 7 }])).toBe(true);
    expect(matchesNarrow(channelMessage, [{ operator: 'stream', operand: 8 }])).toBe(false);
    expect(matchesNarrow(channelMessage, [['channel', 'Norway']])).toBe(false);
    expect(matchesNarrow(directMessage, [['channel', 'Denmark']])).toBe(false);
  });

  it('topic and subject: case-insensitively, channel messages only', () => {
    expect(matchesNarrow(channelMessage, [['topic', 'castle']])).toBe(true);
    expect(matchesNarrow(channelMessage, [['subject', 'CASTLE']])).toBe(true);
    expect(matchesNarrow(channelMessage, [['topic', 'moat']])).toBe(false);
    expect(matchesNarrow({ ...directMessage, subject: 'castle' }, [['subject', 'castle']])).toBe(false);
  });

  it('sender: by address (case-insensitively) or id', () => {
    expect(matchesNarrow(channelMessage, [['sender', 'iago@example.COM']])).toBe(true);
    expect(matchesNarrow(channelMessage, [{ operator: 'sender', operand: 3 }])).toBe(true);
    expect(matchesNarrow(channelMessage, [{ operator: 'sender', operand: 4 }])).toBe(false);
  });

  it('is:dm and is:private: direct messages; other `is` operands do not filter', () => {
    for (const operand of ['dm', 'private']) {
      expect(matchesNarrow(directMessage, [['is', operand]])).toBe(true);
      expect(matchesNarrow(channelMessage, [['is', operand]])).toBe(false);
      expect(matchesNarrow(channelMessage, [{ operator: 'is', operand, negated: true }])).toBe(true);
      expect(matchesNarrow(directMessage, [{ operator: 'is', operand, negated: true }])).toBe(false);
    }
    expect(matchesNarrow(channelMessage, [['is', 'starred']])).toBe(true);
    expect(matchesNarrow(channelMessage, [{ operator: 'is', operand: 'starred', negated: true }])).toBe(true);
  });

  it('dm and pm-with: every person named takes part (addresses or ids), the sender talking to someone', () => {
    expect(matchesNarrow(directMessage, [['dm', 'hamlet@example.com']])).toBe(true);
    expect(matchesNarrow(directMessage, [['pm-with', 'HAMLET@example.com, iago@example.com']])).toBe(true);
    expect(matchesNarrow(directMessage, [{ operator: 'dm', operand: [4] }])).toBe(true);
    expect(matchesNarrow(directMessage, [{ operator: 'pm-with', operand: [4, 5] }])).toBe(false);
    expect(matchesNarrow(toSelf, [['dm', 'iago@example.com']])).toBe(true);
    expect(matchesNarrow(channelMessage, [['dm', 'iago@example.com']])).toBe(false);
  });

  it('negation, and every term must hold', () => {
    expect(matchesNarrow(channelMessage, [{ operator: 'topic', operand: 'castle', negated: true }])).toBe(false);
    expect(matchesNarrow(channelMessage, [{ operator: 'topic', operand: 'moat', negated: true }])).toBe(true);
    // Only `true` negates.
    expect(matchesNarrow(channelMessage, [{ operator: 'topic', operand: 'moat', negated: 'true' }])).toBe(false);
    expect(matchesNarrow(channelMessage, [['channel', 'denmark'], ['topic', 'castle'], ['sender', 'iago@example.com']])).toBe(true);
    expect(matchesNarrow(channelMessage, [['channel', 'denmark'], ['topic', 'moat']])).toBe(false);
  });

  it('operators it does not know do not filter (pm_with, streams, search, near...)', () => {
    for (const operator of ['pm_with', 'streams', 'channels', 'search', 'near', 'has', 'bogus']) {
      expect(matchesNarrow(channelMessage, [[operator, 'nothing-matches-this']])).toBe(true);
      expect(matchesNarrow(channelMessage, [{ operator, operand: 'nothing-matches-this', negated: true }])).toBe(true);
    }
  });
});

describe('GET /messages narrows (parseNarrow, buildNarrow)', () => {
  const ctx: NarrowContext = {
    viewerId: 3,
    canAccessPublicChannels: true,
    channelByName: (name) => (name.toLowerCase() === 'denmark' ? { id: 7, isWebPublic: false, historyReadable: true } : undefined),
    channelById: (id) => (id === 7 ? { id: 7, isWebPublic: false, historyReadable: true } : undefined),
    userByEmail: (email) => ({ 'iago@example.com': 3, 'hamlet@example.com': 4 })[email],
    userById: (id) => (id === 3 || id === 4 ? id : undefined),
  };
  const build = (narrow: unknown) => buildNarrow(parseNarrow(narrow), ctx);

  it('reads both shapes, with their checks', () => {
    expect(parseNarrow([['stream', 'Denmark'], { operator: 'topic', operand: 'castle', negated: true }])).toEqual([
      { operator: 'stream', operand: 'Denmark', negated: false },
      { operator: 'topic', operand: 'castle', negated: true },
    ]);
    expect(parseNarrow(undefined)).toEqual([]);
    expect(() => parseNarrow({})).toThrow('narrow is not a list');
    expect(() => parseNarrow([['stream']])).toThrow('Invalid narrow[0]: Value error, element is not a string pair');
    expect(() => parseNarrow([{ operator: 'topic' }])).toThrow('Invalid narrow[0]: Value error, operand is missing');
    expect(() => parseNarrow([{ operator: 'topic', operand: 'x', negated: 'yes' }])).toThrow('negated is not a boolean');
    expect(() => parseNarrow([{ operator: 'dm', operand: [1, 'x'] }])).toThrow('operand[1] is not an integer');
    expect(() => parseNarrow([{ operator: 'pm_with', operand: [1] }])).toThrow('operand is not a string');
  });

  it('aliases: stream/channel, pm-with/pm_with/dm, group_pm_with/group-pm-with, is:private/is:dm; no subject', () => {
    expect(build([['stream', 'denmark']]).conditions).toEqual(build([['channel', 'Denmark']]).conditions);
    expect(build([['streams', 'public']]).conditions).toEqual(build([['channels', 'public']]).conditions);
    const dm = [{ condition: { kind: 'conversation', userIds: [3, 4] }, negated: false }];
    for (const operator of ['dm', 'pm-with', 'pm_with']) expect(build([[operator, 'hamlet@example.com']]).conditions).toEqual(dm);
    const groups = [{ condition: { kind: 'direct-including', userId: 4, groupsOnly: true }, negated: false }];
    for (const operator of ['group-pm-with', 'group_pm_with']) expect(build([[operator, 'hamlet@example.com']]).conditions).toEqual(groups);
    expect(build([['dm-including', 'hamlet@example.com']]).conditions).toEqual([{ condition: { kind: 'direct-including', userId: 4, groupsOnly: false }, negated: false }]);
    expect(build([['dm-including', 'iago@example.com']]).conditions).toEqual([{ condition: { kind: 'direct' }, negated: false }]);
    expect(build([['is', 'private']]).conditions).toEqual(build([['is', 'dm']]).conditions);
    expect(() => build([['subject', 'castle']])).toThrow(new BadNarrowError('unknown operator subject'));
    expect(() => build([['is', 'bogus']])).toThrow(new BadNarrowError("unknown 'is' operand bogus"));
    expect(() => build([['channel', 'denmark'], ['is', 'private']])).toThrow(new BadNarrowError('No message can be both a channel message and direct message'));
    expect(() => build([['topic', 'castle'], ['pm_with', 'hamlet@example.com']])).toThrow(new BadNarrowError('No message can be both a channel message and direct message'));
    expect(build([['channel', 'denmark'], { operator: 'is', operand: 'private', negated: true }]).conditions).toHaveLength(2);
  });

  it('history: a positive channel term whose history may be read, unless an `is` term other than is:resolved', () => {
    expect(build([['stream', 'denmark']]).includeHistory).toBe(true);
    expect(build([['channel', 'denmark'], ['is', 'starred']]).includeHistory).toBe(false);
    expect(build([['channel', 'denmark'], ['is', 'resolved']]).includeHistory).toBe(true);
    expect(build([['streams', 'public']]).includeHistory).toBe(true);
    expect(build([['stream', 'denmark']]).hasChannelTerm).toBe(true);
    expect(build([['streams', 'public']]).hasChannelTerm).toBe(false);
  });
});
