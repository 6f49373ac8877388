// Creating an organization: the realm, its system groups and its organization-level permissions.
import type { Db, PrismaClient } from '../data/db.ts';
import { inTransaction } from '../data/transactions.ts';
import { createSystemGroups } from '../data/system-groups.repo.ts';
import { createRealm, setRealmGroupSettings } from '../data/realms-admin.repo.ts';

export async function doCreateRealm(db: PrismaClient, input: { name: string; url: string }) {
  return inTransaction(db, (tx) => createRealmInTransaction(tx, input));
}

export async function createRealmInTransaction(tx: Db, input: { name: string; url: string }) {
    const realm = await createRealm(tx, input);
    const g = await createSystemGroups(tx, realm.id);
    // Zulip's defaults for a new organization.
    return setRealmGroupSettings(tx, realm.id, {
      canAddSubscribersGroupId: g['role:members'],
      canCreateGroupsId: g['role:members'],
      canCreatePublicChannelGroupId: g['role:members'],
      canCreatePrivateChannelGroupId: g['role:members'],
      canCreateWebPublicChannelGroupId: g['role:owners'],
      canInviteUsersGroupId: g['role:members'],
      canManageAllGroupsId: g['role:administrators'],
      canMentionManyUsersGroupId: g['role:administrators'],
      canAccessAllUsersGroupId: g['role:everyone'],
      canSetTopicsPolicyGroupId: g['role:moderators'],
      directMessagePermissionGroupId: g['role:everyone'],
      createMultiuseInviteGroupId: g['role:administrators'],
    });
}
