// Whose presence a request may read. Every user of the organization reads everyone's (Zulip's default:
// its CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE server setting is off, and Parley does not restrict
// which users a guest sees); what this decides is which user a request names, and that the user has a
// presence at all: an active human.
import type { Db } from '../data/db.ts';
import type { Realm } from '../data/models.ts';
import { presenceSubjectById, presenceSubjectsByDeliveryEmail, type PresenceSubject } from '../data/presence.repo.ts';
import { JsonableError } from '../errors.ts';
import { parseUserIdOrEmail } from '../lib/presence.ts';
import { publicEmailOf, userIdOfHiddenAddress } from './users.ts';

/**
 * The user GET /users/{user_id_or_email}/presence names (Zulip's get_presence_backend): by ID, or by
 * the address everyone sees (a real address hidden from others does not name its owner, even for
 * those who may see it, as in Zulip). `No such user` for unknown and deactivated users, `Presence is
 * not supported for bot users.` for bots.
 */
export async function accessPresenceSubject(db: Db, realm: Realm, userIdOrEmail: string): Promise<PresenceSubject> {
  const named = parseUserIdOrEmail(userIdOrEmail);
  let subject: PresenceSubject | null;
  if ('id' in named) {
    subject = named.id > 0 && named.id <= 2_147_483_647 ? await presenceSubjectById(db, realm.id, named.id) : null;
  } else {
    // As Zulip's get_active_user: the address everyone sees (`email`), compared case-insensitively.
    const address = named.email.trim().toLowerCase();
    const hiddenId = userIdOfHiddenAddress(realm, address);
    const candidates = hiddenId !== null ? [await presenceSubjectById(db, realm.id, hiddenId)] : await presenceSubjectsByDeliveryEmail(db, realm.id, address);
    subject = candidates.find((c) => c !== null && publicEmailOf(realm, c, c.emailVisibility).toLowerCase() === address) ?? null;
  }
  if (!subject || !subject.isActive) throw new JsonableError('No such user');
  if (subject.isBot) throw new JsonableError('Presence is not supported for bot users.');
  return subject;
}
