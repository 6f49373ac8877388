// The organization's default channels (channel.is_default: the channels new users join) and default
// channel groups (named sets of channels offered at sign-up). Each change runs in one transaction:
// the caller's right (administrators), the channels (read, then locked and checked again) and the
// group (locked) are checked, in Zulip's order, before anything is written; the `default_streams` or
// `default_stream_groups` event, for every user who is not a guest, is stored in the same transaction.
import type { AppDeps } from '../deps.ts';
import type { Db } from '../data/db.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import type { QueuedEvent } from '../data/events.repo.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { defaultChannelIds, lockChannelForUser, shareLockChannels, updateChannel } from '../data/channels.repo.ts';
import {
  addChannelsToDefaultGroup,
  createDefaultChannelGroup,
  deleteDefaultChannelGroup,
  findDefaultChannelGroupByName,
  lockDefaultChannelGroup,
  removeChannelFromDefaultGroups,
  removeChannelsFromDefaultGroup,
  updateDefaultChannelGroup,
  type DefaultChannelGroupRow,
} from '../data/default-channels.repo.ts';
import { JsonableError } from '../errors.ts';
import { accessChannelById, accessChannelByName, loadChannelViewer, nonGuestAudience, type PermissionSubject } from '../access/channels.ts';
import { checkCanManageDefaultChannels } from '../access/default-channels.ts';
import { defaultChannelGroups } from '../queries/default-channels.ts';
import { defaultStreamsEvent } from './channels.ts';

/** Zulip's DefaultStreamGroup.MAX_NAME_LENGTH. */
export const MAX_GROUP_NAME_LENGTH = 60;

const invalidChannelId = () => new JsonableError('Invalid channel ID');

/** Every group, to every user who is not a guest. */
async function groupsEvent(tx: Db, realm: Realm): Promise<QueuedEvent> {
  return { audience: nonGuestAudience(), payload: { type: 'default_stream_groups', default_stream_groups: await defaultChannelGroups(tx, realm.id) } };
}

/** The caller's channel permissions, once they are known to manage default channels. */
async function manager(tx: Db, actor: User): Promise<PermissionSubject> {
  const subject = await loadChannelViewer(tx, actor);
  checkCanManageDefaultChannels(subject);
  return subject;
}

/** The channel as `accessChannelById` grants it, then locked: it must still be active. */
async function lockAccessedChannel(tx: Db, realm: Realm, subject: PermissionSubject, channelId: number, requireContentAccess: boolean): Promise<Channel> {
  await accessChannelById(tx, realm, subject, channelId, { requireContentAccess, allowArchived: false });
  const locked = await lockChannelForUser(tx, realm.id, channelId, subject.user.id);
  if (!locked || locked.channel.isArchived) throw invalidChannelId();
  return locked.channel;
}

// ---------------------------------------------------------------------------------------------
// Default channels

/** POST /default_streams: a readable, active, public channel becomes a default one (no event when it is one already). */
export async function doAddDefaultChannel(deps: AppDeps, realm: Realm, actor: User, channelId: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const subject = await manager(tx, actor);
    const channel = await lockAccessedChannel(tx, realm, subject, channelId, true);
    if (channel.inviteOnly) throw new JsonableError('Private channels cannot be made default.');
    if (channel.isDefault) return;
    await updateChannel(tx, channel.id, { isDefault: true });
    await deps.events.publish(tx, afterCommit, realm.id, [defaultStreamsEvent(await defaultChannelIds(tx, realm.id))]);
  });
}

/** DELETE /default_streams: the channel needs only to be visible; the event is sent even when it was not a default one, as in Zulip. */
export async function doRemoveDefaultChannel(deps: AppDeps, realm: Realm, actor: User, channelId: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const subject = await manager(tx, actor);
    const channel = await lockAccessedChannel(tx, realm, subject, channelId, false);
    if (channel.isDefault) await updateChannel(tx, channel.id, { isDefault: false });
    await deps.events.publish(tx, afterCommit, realm.id, [defaultStreamsEvent(await defaultChannelIds(tx, realm.id))]);
  });
}

// ---------------------------------------------------------------------------------------------
// Default channel groups

/** Zulip's check_default_stream_group_name (a NUL never gets here: the parameter decoder refuses it). */
function checkGroupName(name: string): void {
  if (name.trim() === '') throw new JsonableError(`Invalid default channel group name '${name}'`);
  if ([...name].length > MAX_GROUP_NAME_LENGTH) throw new JsonableError(`Default channel group name too long (limit: ${MAX_GROUP_NAME_LENGTH} characters)`);
}

const groupExists = (name: string) => new JsonableError(`Default channel group '${name}' already exists`);

/** The channels named (as `access_stream_by_name`: active, readable), share-locked and checked again. */
async function channelsByNames(tx: Db, realm: Realm, subject: PermissionSubject, names: string[]): Promise<Channel[]> {
  const found: Channel[] = [];
  for (const name of names) found.push(await accessChannelByName(tx, realm, subject, name));
  const locked = new Map((await shareLockChannels(tx, realm.id, found.map((c) => c.id))).map((c) => [c.id, c]));
  return found.map((c, i) => {
    const now = locked.get(c.id);
    if (!now || now.isArchived) throw new JsonableError(`Invalid channel name '${names[i]}'`);
    return now;
  });
}

const isDefaultChannel = (channel: Channel, group: string) => {
  if (channel.isDefault) throw new JsonableError(`'${channel.name}' is a default channel and cannot be added to '${group}'`);
};

async function lockGroup(tx: Db, realm: Realm, groupId: number): Promise<DefaultChannelGroupRow> {
  const group = await lockDefaultChannelGroup(tx, realm.id, groupId);
  if (!group) throw new JsonableError(`Default channel group with id '${groupId}' does not exist.`);
  return group;
}

/** POST /default_stream_groups/create. */
export async function doCreateDefaultChannelGroup(deps: AppDeps, realm: Realm, actor: User, input: { name: string; description: string; channelNames: string[] }): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const subject = await manager(tx, actor);
    const channels = await channelsByNames(tx, realm, subject, input.channelNames);
    for (const channel of channels) isDefaultChannel(channel, input.name);
    checkGroupName(input.name);
    if (await findDefaultChannelGroupByName(tx, realm.id, input.name)) throw groupExists(input.name);
    await createDefaultChannelGroup(tx, { realmId: realm.id, name: input.name, description: input.description, channelIds: channels.map((c) => c.id) });
    await deps.events.publish(tx, afterCommit, realm.id, [await groupsEvent(tx, realm)]);
  }).catch((error) => {
    if (isUniqueViolation(error)) throw groupExists(input.name);
    throw error;
  });
}

/**
 * PATCH /default_stream_groups/{group_id}: a new name, then a new description, each with its event
 * (Zulip's order). A new name follows the rules of creation (Zulip does not check it here).
 */
export async function doUpdateDefaultChannelGroupInfo(deps: AppDeps, realm: Realm, actor: User, groupId: number, input: { name?: string; description?: string }): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    await manager(tx, actor);
    if (!input.name && !input.description) throw new JsonableError('You must pass "new_description" or "new_group_name".');
    const group = await lockGroup(tx, realm, groupId);
    const events: QueuedEvent[] = [];
    if (input.name !== undefined) {
      if (input.name === group.name) throw new JsonableError(`This default channel group is already named '${input.name}'`);
      if (await findDefaultChannelGroupByName(tx, realm.id, input.name)) throw groupExists(input.name);
      checkGroupName(input.name);
      await updateDefaultChannelGroup(tx, group.id, { name: input.name });
      events.push(await groupsEvent(tx, realm));
    }
    if (input.description !== undefined) {
      await updateDefaultChannelGroup(tx, group.id, { description: input.description });
      events.push(await groupsEvent(tx, realm));
    }
    await deps.events.publish(tx, afterCommit, realm.id, events);
  }).catch((error) => {
    if (isUniqueViolation(error)) throw groupExists(input.name!);
    throw error;
  });
}

/** PATCH /default_stream_groups/{group_id}/streams: all the channels or none; `op` is looked at last, as in Zulip. */
export async function doUpdateDefaultChannelGroupChannels(deps: AppDeps, realm: Realm, actor: User, groupId: number, op: string, channelNames: string[]): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    const subject = await manager(tx, actor);
    const group = await lockGroup(tx, realm, groupId);
    const channels = await channelsByNames(tx, realm, subject, channelNames);
    const members = new Set(group.channelIds);
    if (op === 'add') {
      for (const channel of channels) {
        isDefaultChannel(channel, group.name);
        if (members.has(channel.id)) throw new JsonableError(`Channel '${channel.name}' is already present in default channel group '${group.name}'`);
        members.add(channel.id);
      }
      await addChannelsToDefaultGroup(tx, group.id, channels.map((c) => c.id));
    } else if (op === 'remove') {
      for (const channel of channels) {
        if (!members.has(channel.id)) throw new JsonableError(`Channel '${channel.name}' is not present in default channel group '${group.name}'`);
      }
      await removeChannelsFromDefaultGroup(tx, group.id, channels.map((c) => c.id));
    } else {
      throw new JsonableError('Invalid value for "op". Specify one of "add" or "remove".');
    }
    await deps.events.publish(tx, afterCommit, realm.id, [await groupsEvent(tx, realm)]);
  });
}

/** DELETE /default_stream_groups/{group_id}. */
export async function doRemoveDefaultChannelGroup(deps: AppDeps, realm: Realm, actor: User, groupId: number): Promise<void> {
  await inTransaction(deps.db, async (tx, afterCommit) => {
    await manager(tx, actor);
    const group = await lockGroup(tx, realm, groupId);
    await deleteDefaultChannelGroup(tx, group.id);
    await deps.events.publish(tx, afterCommit, realm.id, [await groupsEvent(tx, realm)]);
  });
}

/**
 * Archiving a channel takes it out of every default channel group (inside the archiving transaction);
 * the event, when it was in one.
 */
export async function removeArchivedChannelFromGroups(tx: Db, realm: Realm, channelId: number): Promise<QueuedEvent[]> {
  return (await removeChannelFromDefaultGroups(tx, channelId)) > 0 ? [await groupsEvent(tx, realm)] : [];
}
