// POST /typing: ephemeral events, no stored row and no transaction (events/bus.ts publishEphemeral). The
// people involved (address and its visibility, active, typing settings) come from the process's cache (events/typing-people.ts),
// so direct typing runs no query of its own.
import type { AppDeps } from '../deps.ts';
import type { Realm, User } from '../data/models.ts';
import { channelTypingContext, type TypingPerson } from '../data/typing.repo.ts';
import { typingPeopleCache } from '../events/typing-people.ts';
import { JsonableError } from '../errors.ts';
import { permissionSubjectOf } from '../access/group-settings.ts';
import { checkCanSendToChannel } from '../access/messages.ts';
import { hasContentAccess } from '../access/channels.ts';
import { EmailVisibility, publicEmailOf } from '../access/users.ts';
import { MAX_CHANNEL_SIZE_FOR_TYPING, topicFromClient } from '../lib/message-limits.ts';
import type { CachedTableWrites } from '../data/cached-tables.ts';

export type TypingRequest =
  | { kind: 'direct'; op: 'start' | 'stop'; to: number[] | undefined }
  | { kind: 'channel'; op: 'start' | 'stop'; channelId: number | undefined; topic: string | undefined };

/**
 * Writes nothing (no table, so none of data/cached-tables.ts CACHED_TABLES): it says so through `writes`
 * (the handler context's), and the pipeline does not wait for this process's invalidation barrier
 * before answering.
 */
export async function doSetTypingStatus(deps: AppDeps, realm: Realm, sender: User, request: TypingRequest, writes: CachedTableWrites): Promise<Record<string, never>> {
  await publishTyping(deps, realm, sender, request);
  writes.none();
  return {};
}

/**
 * A person as typing events show them: by the address everyone sees (Zulip's `email`). Should the
 * sender's own row be missing, they are shown by the `user{id}@{host}` form, which reveals nothing.
 */
function typingRef(realm: Realm, person: TypingPerson | undefined, fallback: User): { user_id: number; email: string } {
  const owner = person
    ? { id: person.id, isBot: person.is_bot, deliveryEmail: person.delivery_email }
    : { id: fallback.id, isBot: fallback.isBot, deliveryEmail: fallback.deliveryEmail };
  return { user_id: owner.id, email: publicEmailOf(realm, owner, person?.email_address_visibility ?? EmailVisibility.NOBODY) };
}

async function publishTyping(deps: AppDeps, realm: Realm, sender: User, request: TypingRequest): Promise<void> {
  if (request.kind === 'direct') {
    if (request.to === undefined) throw new JsonableError("Missing 'to' argument");
    if (request.to.length === 0) throw new JsonableError("Empty 'to' list");
    const ids = [...new Set([...request.to, sender.id])];
    const people = await typingPeopleCache(deps.listener).people(deps.db, realm.id, ids);
    const self = people.find((p) => p.id === sender.id);
    if (self?.sends_direct === false) throw new JsonableError('User has disabled typing notifications for direct messages');
    const found = new Set(people.map((p) => p.id));
    const unknown = request.to.find((id) => !found.has(id));
    if (unknown !== undefined) throw new JsonableError(`Invalid user ID ${unknown}`);
    const active = people.filter((p) => p.is_active);
    await deps.events.publishEphemeral(
      realm.id,
      active.filter((p) => p.receives).map((p) => p.id),
      {
        type: 'typing',
        op: request.op,
        message_type: 'direct',
        sender: typingRef(realm, self, sender),
        recipients: active.map((p) => typingRef(realm, p, sender)),
      },
    );
    return;
  }
  if (request.channelId === undefined) throw new JsonableError("Missing 'stream_id' argument");
  if (request.topic === undefined) throw new JsonableError('Missing topic');
  const [self] = await typingPeopleCache(deps.listener).people(deps.db, realm.id, [sender.id]);
  if (self?.sends_channel === false) throw new JsonableError('User has disabled typing notifications for channel messages');
  // The channel, the sender's groups and subscription, and the audience: one statement.
  const context = await channelTypingContext(deps.db, realm.id, request.channelId, sender.id, MAX_CHANNEL_SIZE_FOR_TYPING);
  const subject = permissionSubjectOf(sender, context?.senderGroupIds ?? []);
  if (!context || !hasContentAccess(subject, context.channel, context.subscribed)) throw new JsonableError('Invalid channel ID');
  const { channel, subscribed, audience: receiverIds } = context;
  checkCanSendToChannel(subject, channel, { subscribed });
  const topic = topicFromClient(request.topic.trim());
  if (receiverIds === null) return;
  await deps.events.publishEphemeral(realm.id, receiverIds, {
    type: 'typing',
    op: request.op,
    message_type: 'stream',
    sender: typingRef(realm, self, sender),
    stream_id: channel.id,
    topic,
  });
}
