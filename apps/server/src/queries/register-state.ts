// The initial state of POST /register. Each area contributes its own piece: a contributor names the
// kinds of state it answers (Zulip's `fetch_event_types` names) and reads them with the database
// handle it is given, which is the register transaction's snapshot, so the state and the queue's
// starting event id describe the same moment.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { listUsers } from '../data/users.repo.ts';
import { subscriptionStatesOfUser, maxMessageIdOfUser } from '../data/register-state.repo.ts';
import { readSettingsRow } from '../data/user-settings.repo.ts';
import { defaultSettingsRow, legacySettingsState, userSettingsState } from '../lib/user-settings.ts';
import { listChannelsOfRealm, defaultChannelIds } from '../data/channels.repo.ts';
import { hasMetadataAccess, loadChannelViewer } from '../access/channels.ts';
import {
  canCreateSomeChannel,
  canInviteOthersToRealm,
  canSubscribeOthersToChannels,
  seesDefaultChannels,
} from '../access/visibility.ts';
import { isModeratorRole, roleFlagsOf } from '../access/roles.ts';
import { settingsOf } from '../lib/group-settings.ts';
import { MAX_CHANNEL_DESCRIPTION_LENGTH, MAX_CHANNEL_NAME_LENGTH } from '../lib/channel-format.ts';
import { renderMarkdown } from '../lib/markdown.ts';
import { MAX_MESSAGE_LENGTH, MAX_REMINDER_NOTE_LENGTH, MAX_TOPIC_LENGTH, EMPTY_TOPIC_DISPLAY_NAME } from '../lib/message-limits.ts';
import { formatUsers } from './users.ts';
import { userGroupsOfRealm } from './user-groups.ts';
import { customProfileFields } from './profile-fields.ts';
import { formerSubscriptionsOfUser, neverSubscribedChannels, presentChannels, subscriptionsOfUser } from './channels.ts';
import { formatGroupSettingValues } from './group-settings.ts';
import { unreadMessagesState, recentDirectConversations } from './message-state.ts';
import { remindersOf, scheduledMessagesOf } from './scheduled-messages.ts';
import { draftsState } from './drafts.ts';
import { mutedTopicsOfUser, userTopicsOfUser } from '../data/user-topics.repo.ts';

export interface RegisterOptions {
  clientGravatar: boolean;
  includeSubscribers: 'true' | 'false' | 'partial';
  userSettingsObject: boolean;
  /** The client understands `"include_deactivated_groups"`. */
  includeDeactivatedGroups: boolean;
  /** The client understands the empty topic (`""`); others get its display name. */
  emptyTopicName: boolean;
  longpollTimeoutSeconds: number;
  pushNotificationsEnabled: boolean;
}

interface StateContext {
  db: Db;
  realm: Realm;
  user: User;
  options: RegisterOptions;
  /** Reads several contributors need, made once per /register (the same snapshot). */
  shared: SharedReads;
}

/** Each read runs on first use, then every contributor gets the same answer. */
function sharedReads(db: Db, realm: Realm, user: User) {
  const once = <T>(read: () => Promise<T>) => {
    let value: Promise<T> | null = null;
    return () => (value ??= read());
  };
  return {
    viewer: once(() => loadChannelViewer(db, user)),
    subscriptionStates: once(() => subscriptionStatesOfUser(db, user.id)),
    channels: once(() => listChannelsOfRealm(db, realm.id, { excludeArchived: true })),
  };
}
type SharedReads = ReturnType<typeof sharedReads>;

interface StateContributor {
  /** The kinds of state (fetch_event_types names) this contributor answers. */
  kinds: readonly string[];
  read(ctx: StateContext): Promise<Record<string, unknown>>;
}

/** Kinds Parley has no feature for yet: answered with their empty value so clients find every key. */
const EMPTY_STATE: Record<string, Record<string, unknown>> = {
  alert_words: { alert_words: [] },
  muted_users: { muted_users: [] },
  presence: { presences: {}, presence_last_update_id: -1, server_timestamp: 0 },
  realm_emoji: { realm_emoji: {} },
  realm_filters: { realm_filters: [] },
  realm_linkifiers: { realm_linkifiers: [] },
  realm_playgrounds: { realm_playgrounds: [] },
  realm_bot: { realm_bots: [] },
  realm_domains: { realm_domains: [] },
  default_stream_groups: { realm_default_stream_groups: [] },
  user_status: { user_status: {} },
  starred_messages: { starred_messages: [] },
  stop_words: { stop_words: [] },
  video_calls: { has_zoom_token: false },
  onboarding_steps: { onboarding_steps: [] },
  saved_snippets: { saved_snippets: [] },
  realm_export_consent: {},
  navigation_views: { navigation_views: [] },
  channel_folders: { channel_folders: [] },
};

const CONTRIBUTORS: StateContributor[] = [
  {
    kinds: ['realm'],
    async read({ db, realm, options }) {
      const settings = settingsOf('realm');
      const values = await formatGroupSettingValues(
        db,
        realm.id,
        settings.map((s) => realm[s.column]).filter((id): id is number => id !== null),
      );
      const state: Record<string, unknown> = {
        realm_name: realm.name,
        realm_description: renderMarkdown(realm.description),
        realm_url: realm.url,
        realm_uri: realm.url,
        realm_icon_url: `${realm.url}/static/icon.png`,
        realm_icon_source: 'G',
        realm_logo_url: '',
        realm_night_logo_url: '',
        realm_default_language: realm.defaultLanguage,
        realm_invite_required: realm.inviteRequired,
        realm_email_changes_disabled: realm.emailChangesDisabled,
        realm_name_changes_disabled: realm.nameChangesDisabled,
        realm_enable_spectator_access: realm.enableSpectatorAccess,
        realm_waiting_period_threshold: realm.waitingPeriodThreshold,
        realm_message_retention_days: realm.messageRetentionDays ?? -1,
        realm_topics_policy: realm.topicsPolicy,
        realm_moderation_request_channel_id: realm.moderationRequestChannelId ?? -1,
        realm_date_created: Math.floor(realm.createdAt.getTime() / 1000),
        realm_push_notifications_enabled: options.pushNotificationsEnabled,
        realm_empty_topic_display_name: EMPTY_TOPIC_DISPLAY_NAME,
        realm_is_zephyr_mirror_realm: false,
        realm_presence_disabled: false,
        realm_mandatory_topics: realm.topicsPolicy === 'disable_empty_topic',
        realm_allow_message_editing: realm.allowMessageEditing,
        realm_message_content_edit_limit_seconds: realm.messageContentEditLimitSeconds,
        realm_move_messages_within_stream_limit_seconds: realm.moveMessagesWithinStreamLimitSeconds,
        realm_move_messages_between_streams_limit_seconds: realm.moveMessagesBetweenStreamsLimitSeconds,
        realm_message_content_delete_limit_seconds: realm.messageContentDeleteLimitSeconds,
        realm_message_edit_history_visibility_policy: realm.messageEditHistoryVisibilityPolicy,
        // Deprecated (feature level 358): false only when no edit history is shown.
        realm_allow_edit_history: realm.messageEditHistoryVisibilityPolicy !== 'none',
        realm_enable_read_receipts: realm.enableReadReceipts,
        realm_user_group_edit_policy: 1,
        realm_available_video_chat_providers: {},
        realm_authentication_methods: { Email: { enabled: true, available: true } },
        max_message_length: MAX_MESSAGE_LENGTH,
        max_topic_length: MAX_TOPIC_LENGTH,
        max_reminder_note_length: MAX_REMINDER_NOTE_LENGTH,
        max_stream_name_length: MAX_CHANNEL_NAME_LENGTH,
        max_stream_description_length: MAX_CHANNEL_DESCRIPTION_LENGTH,
        max_channel_folder_name_length: 60,
        max_channel_folder_description_length: 1024,
        max_bulk_new_subscription_messages: 100,
        max_avatar_file_size_mib: 5,
        max_file_upload_size_mib: 25,
        max_icon_file_size_mib: 5,
        max_logo_file_size_mib: 5,
        server_typing_started_wait_period_milliseconds: 30_000,
        server_typing_stopped_wait_period_milliseconds: 12_000,
        server_typing_started_expiry_period_milliseconds: 45_000,
        server_presence_ping_interval_seconds: 60,
        server_presence_offline_threshold_seconds: 140,
        server_min_deactivated_realm_deletion_days: 14,
        server_max_deactivated_realm_deletion_days: null,
        server_needs_upgrade: false,
        event_queue_longpoll_timeout_seconds: options.longpollTimeoutSeconds,
        server_generation: 0,
        server_emoji_data_url: '',
        server_avatar_changes_disabled: false,
        server_name_changes_disabled: false,
        server_web_public_streams_enabled: true,
        server_inline_image_preview: false,
        server_inline_url_embed_preview: false,
        giphy_api_key: '',
        giphy_rating_options: {},
        jitsi_server_url: null,
        development_environment: false,
        password_min_length: 6,
        password_max_length: 100,
        password_min_guesses: 10_000,
        realm_default_external_accounts: {},
        upgrade_text_for_wide_organization_logo: '',
        zulip_plan_is_not_limited: true,
        demo_organization_scheduled_deletion_date: null,
      };
      for (const s of settings) {
        const id = realm[s.column];
        if (id !== null) state[`realm_${s.name}`] = values.get(id);
      }
      return state;
    },
  },
  {
    kinds: ['realm_user'],
    async read({ db, realm, user, options, shared }) {
      const subject = await shared.viewer();
      const everyone = await listUsers(db, realm.id);
      const formatted = await formatUsers(db, realm, user, everyone, { clientGravatar: options.clientGravatar, includeProfile: true });
      const active = formatted.filter((u) => u.is_active);
      const inactive = formatted.filter((u) => !u.is_active);
      const me = formatted.find((u) => u.user_id === user.id)!;
      return {
        realm_users: active,
        realm_non_active_users: inactive,
        cross_realm_bots: [],
        user_id: user.id,
        email: me.email,
        delivery_email: me.delivery_email ?? user.deliveryEmail,
        full_name: user.fullName,
        avatar_url: me.avatar_url,
        avatar_source: 'G',
        avatar_url_medium: me.avatar_url,
        avatar_version: me.avatar_version,
        is_admin: roleFlagsOf(user).is_admin,
        is_owner: roleFlagsOf(user).is_owner,
        is_moderator: isModeratorRole(user),
        is_guest: roleFlagsOf(user).is_guest,
        is_billing_admin: false,
        role: user.role,
        can_create_streams: canCreateSomeChannel(subject, realm),
        can_subscribe_other_users: canSubscribeOthersToChannels(subject, realm),
        can_invite_others_to_realm: canInviteOthersToRealm(subject, realm),
        user_email: me.email,
        profile_data: me.profile_data ?? {},
      };
    },
  },
  {
    // Every user, guests and bots included (only GET /user_groups is members-only, as in Zulip).
    kinds: ['realm_user_groups'],
    async read({ db, realm, options }) {
      return { realm_user_groups: await userGroupsOfRealm(db, realm, { includeDeactivated: options.includeDeactivatedGroups }) };
    },
  },
  {
    kinds: ['custom_profile_fields'],
    async read({ db, realm }) {
      return {
        custom_profile_fields: await customProfileFields(db, realm),
        custom_profile_field_types: CUSTOM_PROFILE_FIELD_TYPES,
      };
    },
  },
  {
    // Zulip's gather_subscriptions_helper: former subscriptions and never-subscribed channels only
    // while the user can see them, subscriber lists only where the user may know them.
    kinds: ['subscription'],
    async read({ db, realm, user, options, shared }) {
      const subject = await shared.viewer();
      return {
        subscriptions: await subscriptionsOfUser(db, realm, user, options.includeSubscribers),
        unsubscribed: await formerSubscriptionsOfUser(db, realm, subject, options.includeSubscribers),
        never_subscribed: await neverSubscribedChannels(db, realm, subject, await shared.channels(), await shared.subscriptionStates(), options.includeSubscribers),
      };
    },
  },
  {
    kinds: ['stream'],
    async read({ db, realm, shared }) {
      const subject = await shared.viewer();
      const states = await shared.subscriptionStates();
      const channels = await shared.channels();
      return { streams: await presentChannels(db, realm.id, channels.filter((c) => hasMetadataAccess(subject, c, states.get(c.id) === true)), { includeDefault: true }) };
    },
  },
  {
    // Not for guests: Zulip pretends the organization has no default channels.
    kinds: ['default_streams'],
    async read({ db, realm, user, shared }) {
      if (!seesDefaultChannels(user)) return { realm_default_streams: [] };
      const ids = new Set(await defaultChannelIds(db, realm.id));
      const channels = (await shared.channels()).filter((c) => ids.has(c.id));
      return { realm_default_streams: await presentChannels(db, realm.id, channels) };
    },
  },
  // Personal settings (lib/user-settings.ts): the `user_settings` object, and for clients without
  // `user_settings_object` also the legacy top-level keys of the display and notification settings.
  {
    kinds: ['user_settings'],
    async read({ db, user }) {
      return { user_settings: userSettingsState((await readSettingsRow(db, user.id)) ?? defaultSettingsRow(), user) };
    },
  },
  ...(['display', 'notifications'] as const).map((group) => ({
    kinds: [group === 'display' ? 'update_display_settings' : 'update_global_notifications'],
    async read({ db, user, options }: StateContext) {
      return options.userSettingsObject ? {} : legacySettingsState(group, (await readSettingsRow(db, user.id)) ?? defaultSettingsRow(), user);
    },
  })),
  {
    kinds: ['message'],
    async read({ db, user }) {
      return { max_message_id: await maxMessageIdOfUser(db, user.id) };
    },
  },
  {
    kinds: ['update_message_flags', 'message'],
    async read({ db, realm, user }) {
      return { unread_msgs: await unreadMessagesState(db, realm, user) };
    },
  },
  {
    kinds: ['user_topic'],
    async read({ db, user, options }) {
      const rows = await userTopicsOfUser(db, user.id);
      return {
        user_topics: rows.map((r) => ({
          stream_id: r.channelId,
          topic_name: r.topicName === '' && !options.emptyTopicName ? EMPTY_TOPIC_DISPLAY_NAME : r.topicName,
          last_updated: Math.floor(r.lastUpdated.getTime() / 1000),
          visibility_policy: r.visibilityPolicy,
        })),
      };
    },
  },
  {
    kinds: ['muted_topics'],
    async read({ db, user }) {
      return { muted_topics: await mutedTopicsOfUser(db, user.id) };
    },
  },
  {
    kinds: ['drafts'],
    async read({ db, user }) {
      return { drafts: await draftsState(db, user) };
    },
  },
  {
    kinds: ['scheduled_messages'],
    async read({ db, user }) {
      return { scheduled_messages: await scheduledMessagesOf(db, user) };
    },
  },
  {
    kinds: ['reminders'],
    async read({ db, user }) {
      return { reminders: await remindersOf(db, user) };
    },
  },
  {
    kinds: ['recent_private_conversations'],
    async read({ db, user }) {
      return { recent_private_conversations: await recentDirectConversations(db, user.id) };
    },
  },
  ...Object.entries(EMPTY_STATE).map(([kind, value]) => ({ kinds: [kind], read: async () => value })),
];

/** Every kind of state Parley answers (what `/register` returns without fetch_event_types). */
export const STATE_KINDS: readonly string[] = [...new Set(CONTRIBUTORS.flatMap((c) => c.kinds))];

/** The state for the requested kinds (every kind when null), read with `db` (one snapshot). */
export async function readRegisterState(db: Db, realm: Realm, user: User, kinds: readonly string[] | null, options: RegisterOptions): Promise<Record<string, unknown>> {
  const wanted = kinds ? new Set(kinds) : null;
  const ctx: StateContext = { db, realm, user, options, shared: sharedReads(db, realm, user) };
  const state: Record<string, unknown> = {};
  for (const contributor of CONTRIBUTORS) {
    if (wanted && !contributor.kinds.some((k) => wanted.has(k))) continue;
    Object.assign(state, await contributor.read(ctx));
  }
  return state;
}

/** The custom profile field types clients offer (id, name), as Zulip lists them. */
const CUSTOM_PROFILE_FIELD_TYPES = {
  SHORT_TEXT: { id: 1, name: 'Text (short)' },
  LONG_TEXT: { id: 2, name: 'Text (long)' },
  SELECT: { id: 3, name: 'List of options' },
  DATE: { id: 4, name: 'Date picker' },
  URL: { id: 5, name: 'Link' },
  USER: { id: 6, name: 'Users' },
  EXTERNAL_ACCOUNT: { id: 7, name: 'External account' },
  PRONOUNS: { id: 8, name: 'Pronouns' },
};
