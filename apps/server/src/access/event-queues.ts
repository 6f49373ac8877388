// Who may hold which kind of event queue, and when a change ends a queue's right to what it asked for.
// A queue receives only events published after it was registered (actions/event-queues.ts clamps
// last_event_id), each stored for the audience entitled to it when it happened; what remains to decide
// is whether the queue's owner still is who the queue was registered for.
import { JsonableError } from '../errors.ts';
import type { User } from '../data/models.ts';
import { isGuest } from './roles.ts';

/** Guests cannot follow every public channel (Zulip's all_public_streams). */
export const mayFollowAllPublicChannels = (user: Pick<User, 'role'>) => !isGuest(user);

export function checkCanRegisterQueue(user: Pick<User, 'role'>, request: { allPublicStreams: boolean }): void {
  if (request.allPublicStreams && !mayFollowAllPublicChannels(user)) throw new JsonableError('User not authorized for this query');
}

/** A role change after which the user's all_public_streams queues must end (they are deleted with it). */
export const roleChangeEndsAllPublicChannelQueues = (newRole: number) => !mayFollowAllPublicChannels({ role: newRole });

/**
 * Whether a stored event ends the queue's stream: the queue's owner was deactivated (their queues are
 * deleted in the same transaction), or, for an all_public_streams queue, became a guest. Delivery stops
 * before such an event, so a poll parked before the change never carries what happened after it.
 */
export function eventEndsQueue(event: { type: string; payload: Record<string, unknown> }, queue: { userId: number; allPublicStreams: boolean }): boolean {
  if (event.type !== 'realm_user' || event.payload['op'] !== 'update') return false;
  const person = event.payload['person'] as Record<string, unknown> | undefined;
  if (!person || person['user_id'] !== queue.userId) return false;
  if (person['is_active'] === false) return true;
  return queue.allPublicStreams && typeof person['role'] === 'number' && roleChangeEndsAllPublicChannelQueues(person['role']);
}
