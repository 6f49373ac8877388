// The organization export in Zulip's layout (zerver/lib/export.py), written as a stream: one
// `zulip-export-<random>/` directory in a .tar.gz holding
//   realm.json           the organization's tables (zerver_realm, zerver_userprofile, zerver_stream,
//                        zerver_recipient, zerver_subscription, groups, reactions, emoji, …)
//   messages-000001.json zerver_message and zerver_usermessage (flags as `flags_mask`), a batch of at
//                        most 1000 messages per file (Zulip's MESSAGE_BATCH_CHUNK_SIZE), fewer when
//                        their per-user rows pass USER_MESSAGES_PER_FILE
//   attachment.json      zerver_attachment (the exported messages' files)
//   analytics.json       (empty tables: Parley keeps no analytics counts)
//   uploads/, avatars/, emoji/, realm_icons/   the files, each folder with its records.json
//   stats.json           the number of rows of each table and of each folder's records
// Ids are Parley's own. Rows are named and encoded as Zulip's: foreign keys under the field's name
// (`sender`, `recipient`, `user_profile`), datetimes as float seconds since the epoch, JSON-text
// fields as text. Recipients, which Parley does not store, are derived: every user and channel has
// one, and every group direct message conversation (three or more people) a zerver_huddle row; a
// recipient's id is `type_id * 4 + type` (type 1 personal, 2 stream, 3 huddle), so that a message's
// recipient is known without a lookup table.
//
// What each type leaves out (Zulip's rules, see exportedMessageCondition): a public export (type 1)
// holds only public channels' messages; a full export with consent (type 2) adds the private
// channels' messages and direct messages of the members who consented. Private per-user data (alert
// words, muted users, topic visibility, scheduled messages, personal settings) is exported only for
// those members, and the per-user message rows of a consent export only for them (as Zulip's
// fetch_usermessages). The real e-mail address of a user whose address administrators may not see is
// replaced by the address other users see, unless they consented to a full export.
import { randomBytes, createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Writable } from 'node:stream';
import type { AppDeps } from '../deps.ts';
import {
  ExportType,
  consentedUserIds,
  directMessageGroups,
  exportAlertWords,
  exportAttachments,
  exportBotConfigData,
  exportBotProfiles,
  exportBotServices,
  exportBotStorageData,
  exportChannels,
  exportClientNames,
  exportGroupMembers,
  exportGroupSubgroups,
  exportLinkifiers,
  exportMessageBatch,
  exportMutedUsers,
  exportPlaygrounds,
  exportPresence,
  exportProfileFieldValues,
  exportProfileFields,
  exportReactions,
  exportRealmRow,
  exportRealmEmoji,
  exportRealmUserDefault,
  exportScheduledMessages,
  exportSubscriptions,
  exportUserGroups,
  exportUserMessages,
  exportUserStatuses,
  exportUserTopics,
  exportUsers,
  exportedMessageCondition,
  type ExportTypeValue,
  appliedMigrationNames,
} from '../data/exports.repo.ts';
import { ZULIP_VERSION } from '../version.ts';
import { avatarBasePath, avatarKeys } from '../lib/avatar.ts';
import { publicEmailOf } from '../access/users.ts';
import { emojiKeys } from '../lib/realm-emoji.ts';
import { createTarGzWriter, type TarGzWriter } from './tarball.ts';
import { createJsonArrayFile, createJsonTablesFile, type TableRows } from './json-file.ts';

/** Zulip's MESSAGE_BATCH_CHUNK_SIZE: messages per messages-NNNNNN.json file. */
export const MESSAGES_PER_FILE = 1000;
/** A file closes early once its messages' per-user rows pass this (bounds a file's size in memory). */
export const USER_MESSAGES_PER_FILE = 100_000;

/** Rows read per statement for realm.json's tables that grow with the organization (subscriptions, group members, reactions). */
export const ROWS_PER_PAGE = 5000;

/** Zulip's Recipient types. */
const PERSONAL = 1;
const STREAM = 2;
const HUDDLE = 3;
const recipientId = (type: number, typeId: number) => typeId * 4 + type;

/** Zulip's UserProfile.EMAIL_ADDRESS_VISIBILITY_NOBODY. */
const EMAIL_VISIBILITY_NOBODY = 4;

const ts = (d: Date | null | undefined): number | null => (d ? d.getTime() / 1000 : null);
const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Zulip's message_edit_history_visibility_policy values. */
const EDIT_HISTORY_POLICY: Readonly<Record<string, number>> = { all: 1, moves: 2, none: 3 };
/** Zulip's RealmTopicsPolicyEnum and StreamTopicsPolicyEnum values. */
const REALM_TOPICS_POLICY: Readonly<Record<string, number>> = { allow_empty_topic: 1, disable_empty_topic: 2 };
const STREAM_TOPICS_POLICY: Readonly<Record<string, number>> = { inherit: 1, allow_empty_topic: 2, disable_empty_topic: 3, empty_topic_only: 4 };

/** Zulip's get_direct_message_group_hash. */
export const huddleHash = (ids: readonly number[]) =>
  createHash('sha1').update([...new Set(ids)].sort((a, b) => a - b).join(',')).digest('hex');

/** The subdomain of the organization's URL (Zulip's string_id); "" for the root domain or an IP address. */
function stringIdOf(url: string): string {
  try {
    const host = new URL(url).hostname;
    if (/^[\d.]+$/.test(host) || host.includes(':')) return '';
    const labels = host.split('.');
    return labels.length >= 3 ? labels[0]! : '';
  } catch {
    return '';
  }
}

/**
 * Zulip's migration_status.json (zerver/lib/migration_status.py, MigrationStatusJson): the exporting
 * server's version and, per Django app, its migrations as `showmigrations --list` prints them ("[X]
 * <name>" when applied). Zulip's import refuses an export without it, and checks it: the same major
 * version as its own (the part of zulip_version before the first "."), then, for every app both sides
 * have, the same set of migrations; an app only one side has is a warning, not a refusal. Parley has
 * none of Zulip's apps: it lists its own migrations (the database's applied ones) under a `parley`
 * app, which a Zulip server of the same major version (11, the version Parley's API follows) accepts
 * with warnings. Written indented by two spaces, as Zulip writes it.
 */
async function migrationStatus(db: Pick<AppDeps, 'db'>['db']): Promise<{ migrations_by_app: Record<string, string[]>; zulip_version: string }> {
  const names = await appliedMigrationNames(db);
  return { migrations_by_app: { parley: names.map((name) => `[X] ${name}`) }, zulip_version: ZULIP_VERSION };
}

export interface ExportSummary {
  /** The archive's top-level directory (and, with `.tar.gz`, its usual file name). */
  directory: string;
  stats: Record<string, unknown>;
  messages: number;
}

export interface ExportOptions {
  /** Called after each message file (progress on a terminal). */
  onProgress?: (messagesWritten: number) => void;
  /** The archive's top-level directory; a random `zulip-export-xxxxxxxx` by default. */
  directory?: string;
  /** Rows per statement of realm.json's paged tables (ROWS_PER_PAGE; tests make it small to cross pages). */
  rowsPerPage?: number;
}

/** Zulip's tarball directory name: `zulip-export-` and eight random characters. */
export const exportDirectoryName = () => `zulip-export-${randomBytes(6).toString('base64url').toLowerCase().replace(/[^a-z0-9]/g, 'x').slice(0, 8)}`;

/**
 * Writes the export of organization `realmId` of type `type` to `output` as a .tar.gz, reading the
 * database and storage as it goes (never the whole organization in memory). `output` is ended once
 * the archive is complete; on failure it is destroyed with the error, which is thrown.
 */
export async function exportRealm(deps: Pick<AppDeps, 'db' | 'storage'>, realmId: number, type: ExportTypeValue, output: Writable, options: ExportOptions = {}): Promise<ExportSummary & { size: number; sha256: string }> {
  const tar = createTarGzWriter(output);
  try {
    const summary = await writeExport(deps, realmId, type, tar, options);
    const written = await tar.finish();
    return { ...summary, ...written };
  } catch (error) {
    tar.abort(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
}

async function writeExport(deps: Pick<AppDeps, 'db' | 'storage'>, realmId: number, type: ExportTypeValue, tar: TarGzWriter, options: ExportOptions): Promise<ExportSummary> {
  const { db, storage } = deps;
  const dir = options.directory ?? exportDirectoryName();
  const rowsPerPage = options.rowsPerPage ?? ROWS_PER_PAGE;
  const stats: Record<string, unknown> = {};
  const countTables = (file: string, tables: Record<string, unknown[]>) => {
    stats[file] = Object.fromEntries(Object.keys(tables).sort().map((k) => [k, tables[k]!.length]));
  };
  const addJson = (name: string, value: unknown, indent?: number) => tar.addBuffer(`${dir}/${name}`, Buffer.from(JSON.stringify(value, null, indent), 'utf8'));

  const realm = await exportRealmRow(db, realmId);
  const consented = type === ExportType.FULL_WITH_CONSENT ? await consentedUserIds(db, realmId) : [];
  const privateDataUsers = new Set(consented);
  const condition = exportedMessageCondition(realmId, type, consented);

  // ---- Users
  const realmUrl = { url: realm.url };
  const users = await exportUsers(db, realmId);
  const userIds = users.map((u) => u.id);
  // Zulip's `email`: the address everyone sees (`user<id>@<host>` when the real one is hidden).
  const emailOf = new Map(users.map((u) => [u.id, publicEmailOf(realmUrl, u, u.settings?.emailAddressVisibility ?? 1)]));
  const botIds = users.filter((u) => u.isBot).map((u) => u.id);
  const botProfiles = new Map((await exportBotProfiles(db, realmId)).map((b) => [b.user_id, b]));
  const zerver_userprofile = users.map((u) => {
    const settings = u.settings;
    const visibility = settings?.emailAddressVisibility ?? 1;
    const consentedUser = privateDataUsers.has(u.id);
    const keepsAddress = u.isBot || visibility !== EMAIL_VISIBILITY_NOBODY || consentedUser;
    const row: Record<string, unknown> = {
      id: u.id,
      realm: realmId,
      email: emailOf.get(u.id),
      delivery_email: keepsAddress ? u.deliveryEmail : emailOf.get(u.id),
      full_name: u.fullName,
      role: u.role,
      is_active: u.isActive,
      is_bot: u.isBot,
      bot_type: u.botType,
      bot_owner: u.botOwnerId,
      is_mirror_dummy: false,
      date_joined: ts(u.dateJoined),
      last_login: ts(u.lastLogin),
      timezone: u.timezone,
      avatar_source: u.avatarSource,
      avatar_version: u.avatarVersion,
      can_change_user_emails: u.canChangeUserEmails,
      email_address_visibility: visibility,
      allow_private_data_export: settings?.allowPrivateDataExport ?? false,
    };
    const bot = botProfiles.get(u.id);
    if (bot) {
      row.default_sending_stream = bot.default_sending_stream_id;
      row.default_events_register_stream = bot.default_events_register_stream_id;
      row.default_all_public_streams = bot.default_all_public_streams;
    }
    // Personal settings are private data: only for the members who consented to a full export.
    if (settings && consentedUser) {
      for (const [key, value] of Object.entries(settings)) if (key !== 'userId') row[snake(key)] = value;
    }
    return row;
  });

  // ---- Channels, recipients, subscriptions
  const channels = await exportChannels(db, realmId);
  const zerver_stream = channels.map((c) => ({
    id: c.id,
    realm: realmId,
    name: c.name,
    description: c.description,
    rendered_description: c.renderedDescription,
    invite_only: c.inviteOnly,
    is_web_public: c.isWebPublic,
    history_public_to_subscribers: c.historyPublicToSubscribers,
    deactivated: c.isArchived,
    message_retention_days: c.messageRetentionDays,
    topics_policy: STREAM_TOPICS_POLICY[c.topicsPolicy] ?? 1,
    folder: c.folderId,
    date_created: ts(c.createdAt),
    creator: c.creatorId,
    recipient: recipientId(STREAM, c.id),
    can_add_subscribers_group: c.canAddSubscribersGroupId,
    can_administer_channel_group: c.canAdministerChannelGroupId,
    can_delete_any_message_group: c.canDeleteAnyMessageGroupId,
    can_delete_own_message_group: c.canDeleteOwnMessageGroupId,
    can_move_messages_out_of_channel_group: c.canMoveMessagesOutOfChannelGroupId,
    can_move_messages_within_channel_group: c.canMoveMessagesWithinChannelGroupId,
    can_remove_subscribers_group: c.canRemoveSubscribersGroupId,
    can_resolve_topics_group: c.canResolveTopicsGroupId,
    can_send_message_group: c.canSendMessageGroupId,
    can_subscribe_group: c.canSubscribeGroupId,
  }));
  const huddles = await directMessageGroups(db, realmId);
  const huddleIdOf = new Map<string, number>();
  const zerver_huddle = huddles.map((ids, index) => {
    const id = index + 1;
    huddleIdOf.set(ids.join(','), id);
    return { id, huddle_hash: huddleHash(ids), recipient: recipientId(HUDDLE, id), group_size: ids.length };
  });
  const zerver_recipient = [
    ...users.map((u) => ({ id: recipientId(PERSONAL, u.id), type: PERSONAL, type_id: u.id })),
    ...channels.map((c) => ({ id: recipientId(STREAM, c.id), type: STREAM, type_id: c.id })),
    ...zerver_huddle.map((h) => ({ id: h.recipient, type: HUDDLE, type_id: h.id })),
  ].sort((a, b) => a.id - b.id);
  let subscriptionId = 0;
  const personalSubscription = (userId: number, recipient: number, isUserActive: boolean) => ({
    id: ++subscriptionId, user_profile: userId, recipient, active: true, is_user_active: isUserActive, is_muted: false, color: '#c2c2c2',
    pin_to_top: false, desktop_notifications: null, audible_notifications: null, push_notifications: null, email_notifications: null, wildcard_mentions_notify: null,
  });
  const activeOf = new Map(users.map((u) => [u.id, u.isActive]));
  // Read a page at a time as realm.json is written: users' own, then each channel's, then each group DM's.
  async function* zerver_subscription(): AsyncIterable<Array<Record<string, unknown>>> {
    yield users.map((u) => personalSubscription(u.id, recipientId(PERSONAL, u.id), u.isActive));
    for (const c of channels) {
      for (let after = 0; ; ) {
        const page = await exportSubscriptions(db, c.id, after, rowsPerPage);
        if (page.length === 0) break;
        after = page[page.length - 1]!.user_id;
        yield page.map((s) => ({
          id: ++subscriptionId, user_profile: s.user_id, recipient: recipientId(STREAM, s.channel_id), active: s.active, is_user_active: s.is_user_active,
          is_muted: s.is_muted, color: s.color, pin_to_top: s.pin_to_top, desktop_notifications: s.desktop_notifications, audible_notifications: s.audible_notifications,
          push_notifications: s.push_notifications, email_notifications: s.email_notifications, wildcard_mentions_notify: s.wildcard_mentions_notify,
        }));
        if (page.length < rowsPerPage) break;
      }
    }
    for (const h of zerver_huddle) yield huddles[h.id - 1]!.map((userId) => personalSubscription(userId, h.recipient, activeOf.get(userId) ?? false));
  }

  // ---- Groups (Zulip's UserGroup / NamedUserGroup split: anonymous setting groups have no named row)
  const groups = await exportUserGroups(db, realmId);
  const zerver_usergroup = groups.map((g) => ({ id: g.id, realm: realmId }));
  const zerver_namedusergroup = groups
    .filter((g) => g.name !== null)
    .map((g) => ({
      id: g.id,
      usergroup_ptr: g.id,
      realm_for_sharding: realmId,
      name: g.name,
      description: g.description,
      is_system_group: g.isSystemGroup,
      deactivated: g.deactivated,
      date_created: ts(g.createdAt),
      creator: g.creatorId,
      can_add_members_group: g.canAddMembersGroupId,
      can_join_group: g.canJoinGroupId,
      can_leave_group: g.canLeaveGroupId,
      can_manage_group: g.canManageGroupId,
      can_mention_group: g.canMentionGroupId,
      can_remove_members_group: g.canRemoveMembersGroupId,
    }));
  let membershipId = 0;
  async function* zerver_usergroupmembership(): AsyncIterable<Array<Record<string, unknown>>> {
    for (const g of groups) {
      for (let after = 0; ; ) {
        const page = await exportGroupMembers(db, g.id, after, rowsPerPage);
        if (page.length === 0) break;
        after = page[page.length - 1]!.user_id;
        yield page.map((m) => ({ id: ++membershipId, user_group: m.group_id, user_profile: m.user_id }));
        if (page.length < rowsPerPage) break;
      }
    }
  }
  const zerver_groupgroupmembership = (await exportGroupSubgroups(db, realmId)).map((m, i) => ({ id: i + 1, supergroup: m.supergroup_id, subgroup: m.subgroup_id }));

  // ---- The organization and its settings
  const r = realm;
  const zerver_realm = [
    {
      id: r.id,
      name: r.name,
      description: r.description,
      string_id: stringIdOf(r.url),
      date_created: ts(r.createdAt),
      deactivated: r.deactivated,
      enable_spectator_access: r.enableSpectatorAccess,
      email_changes_disabled: r.emailChangesDisabled,
      name_changes_disabled: r.nameChangesDisabled,
      avatar_changes_disabled: r.avatarChangesDisabled,
      invite_required: r.inviteRequired,
      message_retention_days: r.messageRetentionDays,
      waiting_period_threshold: r.waitingPeriodThreshold,
      default_language: r.defaultLanguage,
      topics_policy: REALM_TOPICS_POLICY[r.topicsPolicy] ?? 1,
      moderation_request_channel: r.moderationRequestChannelId,
      allow_message_editing: r.allowMessageEditing,
      message_content_edit_limit_seconds: r.messageContentEditLimitSeconds,
      move_messages_within_stream_limit_seconds: r.moveMessagesWithinStreamLimitSeconds,
      move_messages_between_streams_limit_seconds: r.moveMessagesBetweenStreamsLimitSeconds,
      message_content_delete_limit_seconds: r.messageContentDeleteLimitSeconds,
      message_edit_history_visibility_policy: EDIT_HISTORY_POLICY[r.messageEditHistoryVisibilityPolicy] ?? 1,
      enable_read_receipts: r.enableReadReceipts,
      default_code_block_language: r.defaultCodeBlockLanguage,
      digest_emails_enabled: r.digestEmailsEnabled,
      digest_weekday: r.digestWeekday,
      disallow_disposable_email_addresses: r.disallowDisposableEmailAddresses,
      emails_restricted_to_domains: r.emailsRestrictedToDomains,
      enable_guest_user_dm_warning: r.enableGuestUserDmWarning,
      enable_guest_user_indicator: r.enableGuestUserIndicator,
      giphy_rating: r.giphyRating,
      inline_image_preview: r.inlineImagePreview,
      inline_url_embed_preview: r.inlineUrlEmbedPreview,
      jitsi_server_url: r.jitsiServerUrl,
      message_content_allowed_in_email_notifications: r.messageContentAllowedInEmailNotifications,
      org_type: r.orgType,
      require_e2ee_push_notifications: r.requireE2eePushNotifications,
      require_unique_names: r.requireUniqueNames,
      send_welcome_emails: r.sendWelcomeEmails,
      video_chat_provider: r.videoChatProvider,
      want_advertise_in_communities_directory: r.wantAdvertiseInCommunitiesDirectory,
      welcome_message_custom_text: r.welcomeMessageCustomText,
      new_stream_announcements_stream: r.newStreamAnnouncementsStreamId,
      signup_announcements_stream: r.signupAnnouncementsStreamId,
      zulip_update_announcements_stream: r.zulipUpdateAnnouncementsStreamId,
      custom_upload_quota_gb: r.customUploadQuotaGb,
      can_access_all_users_group: r.canAccessAllUsersGroupId,
      can_add_custom_emoji_group: r.canAddCustomEmojiGroupId,
      can_add_subscribers_group: r.canAddSubscribersGroupId,
      can_create_bots_group: r.canCreateBotsGroupId,
      can_create_groups: r.canCreateGroupsId,
      can_create_private_channel_group: r.canCreatePrivateChannelGroupId,
      can_create_public_channel_group: r.canCreatePublicChannelGroupId,
      can_create_web_public_channel_group: r.canCreateWebPublicChannelGroupId,
      can_create_write_only_bots_group: r.canCreateWriteOnlyBotsGroupId,
      can_delete_any_message_group: r.canDeleteAnyMessageGroupId,
      can_delete_own_message_group: r.canDeleteOwnMessageGroupId,
      can_invite_users_group: r.canInviteUsersGroupId,
      can_manage_all_groups: r.canManageAllGroupsId,
      can_manage_billing_group: r.canManageBillingGroupId,
      can_mention_many_users_group: r.canMentionManyUsersGroupId,
      can_move_messages_between_channels_group: r.canMoveMessagesBetweenChannelsGroupId,
      can_move_messages_between_topics_group: r.canMoveMessagesBetweenTopicsGroupId,
      can_resolve_topics_group: r.canResolveTopicsGroupId,
      can_set_delete_message_policy_group: r.canSetDeleteMessagePolicyGroupId,
      can_set_topics_policy_group: r.canSetTopicsPolicyGroupId,
      can_summarize_topics_group: r.canSummarizeTopicsGroupId,
      create_multiuse_invite_group: r.createMultiuseInviteGroupId,
      direct_message_initiator_group: r.directMessageInitiatorGroupId,
      direct_message_permission_group: r.directMessagePermissionGroupId,
    },
  ];

  const fields = await exportProfileFields(db, realmId);
  const zerver_customprofilefield = fields.map((f) => ({
    id: f.id, realm: realmId, name: f.name, hint: f.hint, order: f.order, field_type: f.fieldType, field_data: JSON.stringify(f.fieldData ?? {}),
    display_in_profile_summary: f.displayInProfileSummary, required: f.required, editable_by_user: f.editableByUser,
  }));
  const zerver_customprofilefieldvalue = (await exportProfileFieldValues(db, realmId)).map((v, i) => ({
    id: i + 1, user_profile: v.userId, field: v.fieldId, value: v.value, rendered_value: v.renderedValue,
  }));
  const zerver_defaultstream = channels.filter((c) => c.isDefault).map((c, i) => ({ id: i + 1, realm: realmId, stream: c.id }));
  const emoji = await exportRealmEmoji(db, realmId);
  const zerver_realmemoji = emoji.map((e) => ({ id: e.id, realm: realmId, author: e.authorId, name: e.name, file_name: e.fileName, is_animated: e.isAnimated, deactivated: e.deactivated }));
  const zerver_realmfilter = (await exportLinkifiers(db, realmId)).map((l) => ({ id: l.id, realm: realmId, pattern: l.pattern, url_template: l.urlTemplate, order: l.order }));
  const zerver_realmplayground = (await exportPlaygrounds(db, realmId)).map((p) => ({ id: p.id, realm: realmId, name: p.name, pygments_language: p.pygmentsLanguage, url_template: p.urlTemplate }));
  const userDefault = await exportRealmUserDefault(db, realmId);
  const defaults = userDefault && typeof userDefault.settings === 'object' && userDefault.settings !== null && !Array.isArray(userDefault.settings) ? userDefault.settings : {};
  const zerver_realmuserdefault = [{ id: realmId, realm: realmId, ...defaults }];
  const zerver_userpresence = (await exportPresence(db, realmId)).map((p, i) => ({
    id: i + 1, user_profile: p.userId, realm: realmId, last_connected_time: ts(p.lastConnectedTime), last_active_time: ts(p.lastActiveTime), last_update_id: Number(p.lastUpdateId),
  }));
  const zerver_userstatus = (await exportUserStatuses(db, realmId)).map((s, i) => ({
    id: i + 1, user_profile: s.userId, realm: realmId, status_text: s.statusText, emoji_name: s.emojiName, emoji_code: s.emojiCode, reaction_type: s.reactionType, timestamp: ts(s.updatedAt),
  }));

  // ---- Private per-user data: the consenting members' only
  const privateIds = [...privateDataUsers];
  const zerver_usertopic = privateIds.length
    ? (await exportUserTopics(db, privateIds)).map((t) => ({
        id: t.id, user_profile: t.userId, stream: t.channelId, recipient: recipientId(STREAM, t.channelId), topic_name: t.topicName, last_updated: ts(t.lastUpdated), visibility_policy: t.visibilityPolicy,
      }))
    : [];
  const zerver_muteduser = privateIds.length
    ? (await exportMutedUsers(db, privateIds)).map((m, i) => ({ id: i + 1, user_profile: m.userId, muted_user: m.mutedUserId, date_muted: ts(m.dateMuted) }))
    : [];
  const zerver_alertword = privateIds.length ? (await exportAlertWords(db, privateIds)).map((a) => ({ id: a.id, user_profile: a.userId, realm: realmId, word: a.word })) : [];
  const directRecipient = (senderId: number, ids: readonly number[]): number => {
    const people = [...new Set([...ids, senderId])].sort((a, b) => a - b);
    if (people.length >= 3) {
      const huddle = huddleIdOf.get(people.join(','));
      return huddle === undefined ? recipientId(PERSONAL, senderId) : recipientId(HUDDLE, huddle);
    }
    return recipientId(PERSONAL, people.find((id) => id !== senderId) ?? senderId);
  };

  // ---- Clients and reactions of the exported messages
  const clientNames = await exportClientNames(db, condition);
  const clientIdOf = new Map(clientNames.map((name, i) => [name, i + 1]));
  const zerver_client = clientNames.map((name, i) => ({ id: i + 1, name }));
  async function* zerver_reaction(): AsyncIterable<Array<Record<string, unknown>>> {
    for (let after = 0; ; ) {
      const page = await exportReactions(db, condition, after, rowsPerPage);
      if (page.length === 0) break;
      after = page[page.length - 1]!.id;
      yield page.map((x) => ({ id: x.id, user_profile: x.user_id, message: x.message_id, emoji_name: x.emoji_name, emoji_code: x.emoji_code, reaction_type: x.reaction_type }));
      if (page.length < rowsPerPage) break;
    }
  }
  const zerver_scheduledmessage = privateIds.length
    ? (await exportScheduledMessages(db, privateIds)).map((s) => ({
        id: s.id, sender: s.senderId, realm: realmId,
        recipient: s.channelId !== null ? recipientId(STREAM, s.channelId) : directRecipient(s.senderId, s.directUserIds),
        stream: s.channelId, subject: s.topic, content: s.content, rendered_content: s.renderedContent,
        sending_client: null, scheduled_timestamp: ts(s.scheduledAt), read_by_sender: s.readBySender, delivered: s.delivered,
        delivered_message: s.deliveredMessageId, failed: s.failed, failure_message: s.failureMessage, delivery_type: s.deliveryType,
        reminder_target_message_id: s.reminderTargetMessageId,
      }))
    : [];
  const zerver_service = botIds.length ? (await exportBotServices(db, botIds)).map((s) => ({ id: s.id, user_profile: s.botId, name: s.name, base_url: s.baseUrl, token: s.token, interface: s.interface })) : [];
  const zerver_botconfigdata = botIds.length ? (await exportBotConfigData(db, botIds)).map((b, i) => ({ id: i + 1, bot_profile: b.botId, key: b.key, value: b.value })) : [];
  const zerver_botstoragedata = botIds.length ? (await exportBotStorageData(db, botIds)).map((b, i) => ({ id: i + 1, bot_profile: b.botId, key: b.key, value: b.value })) : [];

  const realmTables: Record<string, TableRows> = {
    zerver_realm,
    zerver_realmauditlog: [],
    zerver_realmauthenticationmethod: [],
    zerver_realmdomain: [],
    zerver_realmexport: [],
    zerver_realmuserdefault,
    zerver_defaultstream,
    zerver_customprofilefield,
    zerver_customprofilefieldvalue,
    zerver_realmemoji,
    zerver_realmfilter,
    zerver_realmplayground,
    zerver_client,
    zerver_userprofile,
    zerver_userprofile_mirrordummy: [],
    zerver_userprofile_crossrealm: [],
    zerver_service,
    zerver_botconfigdata,
    zerver_botstoragedata,
    zerver_usergroup,
    zerver_namedusergroup,
    zerver_usergroupmembership: zerver_usergroupmembership(),
    zerver_groupgroupmembership,
    zerver_stream,
    zerver_huddle,
    zerver_recipient,
    zerver_subscription: zerver_subscription(),
    zerver_reaction: zerver_reaction(),
    zerver_scheduledmessage,
    zerver_alertword,
    zerver_muteduser,
    zerver_usertopic,
    zerver_userpresence,
    zerver_userstatus,
    zerver_onboardingstep: [],
    zerver_onboardingusermessage: [],
  };
  // realm.json is written to a temporary file a page at a time (a tar entry's size comes before its
  // bytes), then streamed into the archive.
  const staging = await mkdtemp(path.join(os.tmpdir(), 'parley-export-'));
  try {
    const file = path.join(staging, 'realm.json');
    const json = createJsonTablesFile(file);
    const counts: Record<string, number> = {};
    try {
      for (const [name, rows] of Object.entries(realmTables)) counts[name] = await json.table(name, rows);
    } catch (error) {
      json.destroy();
      throw error;
    }
    const size = await json.close();
    stats.realm = Object.fromEntries(Object.keys(counts).sort().map((k) => [k, counts[k]]));
    await tar.addStream(`${dir}/realm.json`, size, createReadStream(file));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }

  // ---- Messages, a file at a time (cursor on the id)
  const userMessageUsers = type === ExportType.FULL_WITH_CONSENT ? privateIds : userIds;
  let afterId = 0;
  let fileNumber = 0;
  let messagesWritten = 0;
  let userMessageId = 0;
  for (;;) {
    const batch = await exportMessageBatch(db, condition, afterId, MESSAGES_PER_FILE);
    if (batch.length === 0) break;
    // Close the file early when its per-user rows would pass the bound (always at least one message).
    let cut = batch.length;
    let rows = 0;
    for (let i = 0; i < batch.length; i++) {
      rows += batch[i]!.recipients;
      if (rows > USER_MESSAGES_PER_FILE && i > 0) {
        cut = i;
        break;
      }
    }
    const messages = batch.slice(0, cut);
    afterId = messages[messages.length - 1]!.id;
    const ids = messages.map((m) => m.id);
    const zerver_message = messages.map((m) => ({
      id: m.id,
      sender: m.sender_id,
      recipient: m.channel_id !== null ? recipientId(STREAM, m.channel_id) : directRecipient(m.sender_id, m.direct_user_ids),
      realm: realmId,
      subject: m.topic,
      content: m.content,
      rendered_content: m.rendered_content,
      rendered_content_version: 1,
      date_sent: ts(m.date_sent),
      last_edit_time: ts(m.last_edit_time),
      edit_history: m.edit_history === null || m.edit_history === undefined ? null : JSON.stringify(m.edit_history),
      sending_client: clientIdOf.get(m.sending_client) ?? null,
      has_attachment: m.has_attachment,
      has_image: m.rendered_content.includes('message_inline_image'),
      has_link: m.rendered_content.includes('<a '),
      is_channel_message: m.channel_id !== null,
      type: 1,
    }));
    const zerver_usermessage = userMessageUsers.length
      ? (await exportUserMessages(db, ids, userMessageUsers)).map((um) => ({ id: ++userMessageId, user_profile: um.user_id, message: um.message_id, flags_mask: Number(um.flags) }))
      : [];
    fileNumber += 1;
    const name = `messages-${String(fileNumber).padStart(6, '0')}.json`;
    const tables = { zerver_message, zerver_usermessage };
    countTables(name.replace(/\.json$/, ''), tables);
    await addJson(name, tables);
    messagesWritten += messages.length;
    options.onProgress?.(messagesWritten);
  }

  /** Copies one storage object into the archive; false when storage has no such object. */
  const copy = async (key: string, archivePath: string): Promise<{ size: number; contentType: string | null } | null> => {
    const read = await storage.get(key);
    if (read === null || 'unsatisfiable' in read) return null;
    await tar.addStream(`${dir}/${archivePath}`, read.size, read.body);
    return { size: read.size, contentType: read.contentType };
  };
  const now = Date.now() / 1000;

  // ---- Attachments, their files, and the uploads' and avatars' records, never held whole: a page of
  // attachments at a time, their files copied into the archive as attachment.json and the records are
  // written to temporary files, which follow the files into the archive (an entry's size comes first).
  const files = await mkdtemp(path.join(os.tmpdir(), 'parley-export-'));
  const attachmentJson = createJsonTablesFile(path.join(files, 'attachment.json'));
  const uploadRecords = createJsonArrayFile(path.join(files, 'uploads.json'));
  const avatarRecords = createJsonArrayFile(path.join(files, 'avatars.json'));
  try {
    async function* zerver_attachment(): AsyncIterable<Array<Record<string, unknown>>> {
      for (let after = 0; ; ) {
        const page = await exportAttachments(db, condition, after, rowsPerPage);
        if (page.length === 0) break;
        after = page[page.length - 1]!.id;
        for (const a of page) {
          const copied = await copy(`files/${a.path_id}`, `uploads/${a.path_id}`);
          if (!copied) continue;
          await uploadRecords.add({
            realm_id: realmId, user_profile_id: a.owner_id, user_profile_email: emailOf.get(a.owner_id) ?? a.owner_email, s3_path: a.path_id, path: a.path_id,
            size: copied.size, last_modified: ts(a.create_time) ?? now, content_type: a.content_type,
          });
        }
        yield page.map((a) => ({
          id: a.id, owner: a.owner_id, realm: realmId, path_id: a.path_id, file_name: a.file_name, size: Number(a.size), content_type: a.content_type,
          create_time: ts(a.create_time), is_realm_public: null, is_web_public: null, messages: a.message_ids, scheduled_messages: [],
        }));
        if (page.length < rowsPerPage) break;
      }
    }
    stats.attachment = { zerver_attachment: await attachmentJson.table('zerver_attachment', zerver_attachment()) };
    await tar.addStream(`${dir}/attachment.json`, await attachmentJson.close(), createReadStream(path.join(files, 'attachment.json')));
    const analytics = { analytics_realmcount: [], analytics_streamcount: [], analytics_usercount: [] };
    countTables('analytics', analytics);
    await addJson('analytics.json', analytics);
    await tar.addStream(`${dir}/uploads/records.json`, await uploadRecords.close(), createReadStream(path.join(files, 'uploads.json')));
    stats.uploads_records = uploadRecords.rows;

    // Avatars: Zulip keeps `<hash>.png`, `<hash>-medium.png` and `<hash>.original`; Parley keeps the two
    // sizes, and the medium one stands in for the original (an importer re-makes the sizes from it).
    for (const u of users) {
      if (u.avatarSource !== 'U') continue;
      const keys = avatarKeys(realmId, u.id, u.avatarVersion);
      const base = avatarBasePath(realmId, u.id, u.avatarVersion);
      for (const [key, archived] of [[keys.small, `${base}.png`], [keys.medium, `${base}-medium.png`], [keys.medium, `${base}.original`]] as const) {
        const copied = await copy(key, `avatars/${archived}`);
        if (!copied) continue;
        await avatarRecords.add({
          realm_id: realmId, user_profile_id: u.id, user_profile_email: emailOf.get(u.id), avatar_version: u.avatarVersion, s3_path: archived, path: archived,
          size: copied.size, last_modified: now, content_type: 'image/png',
        });
      }
    }
    await tar.addStream(`${dir}/avatars/records.json`, await avatarRecords.close(), createReadStream(path.join(files, 'avatars.json')));
    stats.avatars_records = avatarRecords.rows;
  } finally {
    for (const open of [attachmentJson, uploadRecords, avatarRecords]) open.destroy();
    await rm(files, { recursive: true, force: true });
  }

  // Custom emoji: `<realm id>/emoji/images/<file name>` and its `.original` (Zulip's layout).
  const emojiRecords: Array<Record<string, unknown>> = [];
  for (const e of emoji) {
    const fileName = e.fileName!;
    const image = `${realmId}/emoji/images/${fileName}`;
    for (const archived of [image, `${image}.original`]) {
      const copied = await copy(emojiKeys(realmId, fileName).image, `emoji/${archived}`);
      if (!copied) continue;
      emojiRecords.push({ realm_id: realmId, author: e.authorId, path: archived, s3_path: archived, file_name: fileName, name: e.name, deactivated: e.deactivated });
    }
  }
  await addJson('emoji/records.json', emojiRecords.sort((x, y) => String(x.path).localeCompare(String(y.path))));
  await addJson('realm_icons/records.json', []);
  await addJson('migration_status.json', await migrationStatus(db), 2);

  stats.emoji_records = emojiRecords.length;
  stats.realm_icons_records = 0;
  await addJson('stats.json', stats);
  return { directory: dir, stats, messages: messagesWritten };
}
