// The initial state of POST /register. Each area contributes its own piece: a contributor names the
// kinds of state it answers (Zulip's `fetch_event_types` names) and reads them with the database
// handle it is given, which is the register transaction's snapshot, so the state and the queue's
// starting event id describe the same moment.
import { realmImagesState } from '../lib/realm-images.ts';
import type { RawSql } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { subscriptionsWithChannels } from '../data/subscriptions.repo.ts';
import { maxMessageIdOfUser, stateSourcesPresent, type StateSource } from '../data/register-state.repo.ts';
import { readSettingsRow } from '../data/user-settings.repo.ts';
import { defaultSettingsRow, legacySettingsState, userSettingsState } from '../lib/user-settings.ts';
import { listChannelsOfRealmKept, defaultChannelIds, channelDisplayFactsKept } from '../data/channels.repo.ts';
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
import { MAX_MESSAGE_LENGTH, MAX_REMINDER_NOTE_LENGTH, MAX_TOPIC_LENGTH, EMPTY_TOPIC_DISPLAY_NAME } from '../lib/message-limits.ts';
import { realmUsersState } from './realm-users-state.ts';
import { avatarUrl } from '../lib/avatar.ts';
import { realmEmojiDict } from './realm-emoji.ts';
import { userGroupsOfRealmKept } from './user-groups.ts';
import { customProfileFields } from './profile-fields.ts';
import { defaultExternalAccounts } from '../lib/profile-fields.ts';
import { defaultChannelGroups } from './default-channels.ts';
import { savedSnippetsOf } from './saved-snippets.ts';
import { channelFactsRequest, formerSubscriptionsOfUser, neverSubscribedChannels, presentChannels, subscriptionsOfUser } from './channels.ts';
import { formatGroupSettingValues } from './group-settings.ts';
import { realmSettingsState, realmUserDefaultsState } from './realm-settings.ts';
import { unreadMessagesState, recentDirectConversations } from './message-state.ts';
import { remindersOf, scheduledMessagesOf } from './scheduled-messages.ts';
import { draftsState } from './drafts.ts';
import { mutedTopicsOfUser, userTopicsOfUser } from '../data/user-topics.repo.ts';
import { userStatusState } from './user-status.ts';
import { mutedUsersState } from './muted-users.ts';
import { alertWordsOf } from './alert-words.ts';
import { presenceState } from './presence.ts';
import { linkifiersList } from './linkifiers.ts';
import { playgroundsList } from './playgrounds.ts';
import { OFFLINE_THRESHOLD_SECS, PRESENCE_PING_INTERVAL_SECS } from '../lib/presence.ts';
import { realmBotsState } from './bots.ts';
import { seesEveryBot } from '../access/bots.ts';
import { emojiDict } from '../lib/realm-emoji.ts';
import type { ApiKeyCipher } from '../security/secrets.ts';
import { serverThumbnailFormats } from '../lib/thumbnails.ts';

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
  /** The server's upload limit (config maxFileUploadSizeMib). */
  maxFileUploadSizeMib: number;
  /** `presences` in the modern format: `slim_presence`, or the `simplified_presence_events` capability. */
  modernPresence: boolean;
  /** `presence_history_limit_days` (null: Zulip's default of 14 days). */
  presenceHistoryLimitDays: number | null;
  /** The server has presence turned off (PARLEY_PRESENCE_DISABLED): `realm_presence_disabled`. */
  presenceDisabled: boolean;
  /** The client reads linkifiers' URL templates (the `linkifier_url_template` capability): `realm_linkifiers`. */
  linkifierUrlTemplate: boolean;
  /** Decrypts the bots' API keys of `realm_bots` (the server's API key cipher). */
  apiKeyCipher: ApiKeyCipher;
}

interface StateContext {
  db: RawSql;
  realm: Realm;
  user: User;
  options: RegisterOptions;
  /** Reads several contributors need, made once per /register (the same snapshot). */
  shared: SharedReads;
}

/** Each read runs on first use, then every contributor gets the same answer. */
function sharedReads(db: RawSql, realm: Realm, user: User) {
  const once = <T>(read: () => Promise<T>) => {
    let value: Promise<T> | null = null;
    return () => (value ??= read());
  };
  // Kept while unchanged (data/digest-cache.ts: one digest row instead of every channel's row and facts).
  const channels = once(() => listChannelsOfRealmKept(db, realm.id, { excludeArchived: true }));
  // Every subscription row of the user (active or not) with its channel, in one statement.
  const subscriptionRows = once(() => subscriptionsWithChannels(db, user.id, 'all'));
  return {
    viewer: once(() => loadChannelViewer(db, user)),
    subscriptionRows,
    subscriptionStates: once(async () => new Map((await subscriptionRows()).map((r) => [r.channelId, r.active]))),
    channels,
    // The display facts (subscriber counts, first messages, setting groups) of every channel above,
    // read once for the channel kinds of state.
    channelFacts: once(async () => channelDisplayFactsKept(db, realm.id, channelFactsRequest(await channels()))),
    sources: once(() => stateSourcesPresent(db, realm.id, user.id, { everyBot: seesEveryBot(user) })),
  };
}
type SharedReads = ReturnType<typeof sharedReads>;

interface StateContributor {
  /** The kinds of state (fetch_event_types names) this contributor answers. */
  kinds: readonly string[];
  /**
   * The table the state is read from, when it usually has no row for the user or organization: all
   * such tables are checked in one statement first, and a kind without rows answers `empty` unread.
   */
  from?: { source: StateSource; empty: Record<string, unknown> };
  read(ctx: StateContext): Promise<Record<string, unknown>>;
}

/** The custom profile field types clients offer (id, name), as Zulip lists them. */
const CUSTOM_PROFILE_FIELD_TYPES = {
  SHORT_TEXT: { id: 1, name: 'Text (short)' },
  LONG_TEXT: { id: 2, name: 'Text (long)' },
  SELECT: { id: 3, name: 'List of options' },
  DATE: { id: 4, name: 'Date' },
  URL: { id: 5, name: 'Link' },
  USER: { id: 6, name: 'Users' },
  EXTERNAL_ACCOUNT: { id: 7, name: 'External account' },
  PRONOUNS: { id: 8, name: 'Pronouns' },
};

/** Kinds Parley has no feature for yet: answered with their empty value so clients find every key. */
const EMPTY_STATE: Record<string, Record<string, unknown>> = {
  realm_domains: { realm_domains: [] },
  starred_messages: { starred_messages: [] },
  stop_words: { stop_words: [] },
  video_calls: { has_zoom_token: false },
  onboarding_steps: { onboarding_steps: [] },
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
        // Every organization setting (lib/realm-settings.ts) and what Zulip derives from them.
        ...(await realmSettingsState(db, realm)),
        realm_url: realm.url,
        realm_uri: realm.url,
        // realm_icon_url, realm_icon_source, realm_logo_url, realm_logo_source, realm_night_logo_url, realm_night_logo_source.
        ...realmImagesState(realm),
        realm_date_created: Math.floor(realm.createdAt.getTime() / 1000),
        realm_push_notifications_enabled: options.pushNotificationsEnabled,
        realm_empty_topic_display_name: EMPTY_TOPIC_DISPLAY_NAME,
        realm_is_zephyr_mirror_realm: false,
        realm_presence_disabled: options.presenceDisabled,
        realm_user_group_edit_policy: 1,
        max_message_length: MAX_MESSAGE_LENGTH,
        max_topic_length: MAX_TOPIC_LENGTH,
        max_reminder_note_length: MAX_REMINDER_NOTE_LENGTH,
        max_stream_name_length: MAX_CHANNEL_NAME_LENGTH,
        max_stream_description_length: MAX_CHANNEL_DESCRIPTION_LENGTH,
        max_channel_folder_name_length: 60,
        max_channel_folder_description_length: 1024,
        max_bulk_new_subscription_messages: 100,
        max_avatar_file_size_mib: 5,
        max_file_upload_size_mib: options.maxFileUploadSizeMib,
        // Zulip's upload_quota_bytes in MiB (custom_upload_quota_gb is in GiB); null: no quota.
        realm_upload_quota_mib: realm.customUploadQuotaGb === null ? null : realm.customUploadQuotaGb * 1024,
        max_icon_file_size_mib: 5,
        max_logo_file_size_mib: 5,
        server_typing_started_wait_period_milliseconds: 30_000,
        server_typing_stopped_wait_period_milliseconds: 12_000,
        server_typing_started_expiry_period_milliseconds: 45_000,
        server_presence_ping_interval_seconds: PRESENCE_PING_INTERVAL_SECS,
        server_presence_offline_threshold_seconds: OFFLINE_THRESHOLD_SECS,
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
        // Thumbnail formats the server makes of uploaded images (lib/thumbnails.ts).
        server_thumbnail_formats: serverThumbnailFormats(),
        giphy_api_key: '',
        development_environment: false,
        password_min_length: 6,
        password_max_length: 100,
        password_min_guesses: 10_000,
        realm_default_external_accounts: defaultExternalAccounts(),
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
      // As JSON text, made again only for the users changed since another registration (realm-users-state.ts).
      const { active, inactive, me } = await realmUsersState(db, realm, user, { clientGravatar: options.clientGravatar });
      return {
        realm_users: active,
        realm_non_active_users: inactive,
        cross_realm_bots: [],
        user_id: user.id,
        email: me.email,
        delivery_email: me.delivery_email ?? user.deliveryEmail,
        full_name: user.fullName,
        avatar_url: avatarUrl(user),
        avatar_source: user.avatarSource,
        avatar_url_medium: avatarUrl(user, true),
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
      return { realm_user_groups: await userGroupsOfRealmKept(db, realm, { includeDeactivated: options.includeDeactivatedGroups }) };
    },
  },
  {
    kinds: ['custom_profile_fields'],
    from: { source: 'custom_profile_field', empty: { custom_profile_fields: [], custom_profile_field_types: CUSTOM_PROFILE_FIELD_TYPES } },
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
      const known = await shared.channelFacts();
      const rows = await shared.subscriptionRows();
      return {
        subscriptions: await subscriptionsOfUser(db, realm, user, options.includeSubscribers, { known, rows: rows.filter((r) => r.active) }),
        unsubscribed: await formerSubscriptionsOfUser(db, realm, subject, options.includeSubscribers, {
          known,
          rows: rows.filter((r) => !r.active && !r.channel.isArchived),
        }),
        never_subscribed: await neverSubscribedChannels(db, realm, subject, await shared.channels(), await shared.subscriptionStates(), options.includeSubscribers, known),
      };
    },
  },
  {
    kinds: ['stream'],
    async read({ db, realm, shared }) {
      const subject = await shared.viewer();
      const states = await shared.subscriptionStates();
      const channels = await shared.channels();
      const visible = channels.filter((c) => hasMetadataAccess(subject, c, states.get(c.id) === true));
      return { streams: await presentChannels(db, realm.id, visible, { includeDefault: true, known: await shared.channelFacts() }) };
    },
  },
  {
    // Not for guests: Zulip pretends the organization has no default channels (IDs since feature level 330).
    kinds: ['default_streams'],
    async read({ db, realm, user }) {
      return { realm_default_streams: seesDefaultChannels(user) ? await defaultChannelIds(db, realm.id) : [] };
    },
  },
  {
    // Not for guests either, as in Zulip.
    kinds: ['default_stream_groups'],
    from: { source: 'default_channel_group', empty: { realm_default_stream_groups: [] } },
    async read({ db, realm, user }) {
      return { realm_default_stream_groups: seesDefaultChannels(user) ? await defaultChannelGroups(db, realm.id) : [] };
    },
  },
  {
    kinds: ['saved_snippets'],
    from: { source: 'saved_snippet', empty: { saved_snippets: [] } },
    async read({ db, user }) {
      return { saved_snippets: await savedSnippetsOf(db, user) };
    },
  },
  {
    // What new users' settings start as (PATCH /realm/user_settings_defaults).
    kinds: ['realm_user_settings_defaults'],
    async read({ db, realm }) {
      return { realm_user_settings_defaults: await realmUserDefaultsState(db, realm) };
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
    from: { source: 'user_topic', empty: { user_topics: [] } },
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
    from: { source: 'user_topic', empty: { muted_topics: [] } },
    async read({ db, user }) {
      return { muted_topics: await mutedTopicsOfUser(db, user.id) };
    },
  },
  {
    kinds: ['drafts'],
    from: { source: 'draft', empty: { drafts: [] } },
    async read({ db, user }) {
      return { drafts: await draftsState(db, user) };
    },
  },
  {
    kinds: ['scheduled_messages'],
    from: { source: 'scheduled_message', empty: { scheduled_messages: [] } },
    async read({ db, user }) {
      return { scheduled_messages: await scheduledMessagesOf(db, user) };
    },
  },
  {
    kinds: ['reminders'],
    from: { source: 'scheduled_message', empty: { reminders: [] } },
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
  {
    kinds: ['muted_users'],
    from: { source: 'muted_user', empty: { muted_users: [] } },
    async read({ db, user }) {
      return { muted_users: await mutedUsersState(db, user) };
    },
  },
  {
    kinds: ['alert_words'],
    from: { source: 'alert_word', empty: { alert_words: [] } },
    async read({ db, user }) {
      return { alert_words: await alertWordsOf(db, user) };
    },
  },
  {
    kinds: ['user_status'],
    from: { source: 'user_status', empty: { user_status: {} } },
    async read({ db, realm }) {
      return { user_status: await userStatusState(db, realm) };
    },
  },
  {
    // Zulip's fetch_initial_state_data: the last presence_history_limit_days days, in the register's snapshot.
    kinds: ['presence'],
    async read({ db, realm, options }) {
      return presenceState(db, realm, { format: options.modernPresence ? 'modern' : 'legacy', historyDays: options.presenceHistoryLimitDays, disabled: options.presenceDisabled });
    },
  },
  {
    // Zulip's: an empty list for clients that cannot read URL templates; the legacy `realm_filters`
    // is always empty.
    kinds: ['realm_linkifiers'],
    from: { source: 'realm_linkifier', empty: { realm_linkifiers: [] } },
    async read({ db, realm, options }) {
      return { realm_linkifiers: options.linkifierUrlTemplate ? await linkifiersList(db, realm.id) : [] };
    },
  },
  { kinds: ['realm_filters'], read: async () => ({ realm_filters: [] }) },
  {
    kinds: ['realm_emoji'],
    from: { source: 'realm_emoji', empty: { realm_emoji: emojiDict([]) } },
    read: async ({ db, realm }) => ({ realm_emoji: await realmEmojiDict(db, realm.id) }),
  },
  {
    kinds: ['realm_playgrounds'],
    from: { source: 'realm_playground', empty: { realm_playgrounds: [] } },
    async read({ db, realm }) {
      return { realm_playgrounds: await playgroundsList(db, realm.id) };
    },
  },
  {
    // Zulip's get_owned_bot_dicts: the user's bots (every bot for administrators), with their API keys.
    kinds: ['realm_bot'],
    from: { source: 'bot', empty: { realm_bots: [] } },
    async read({ db, user, options }) {
      return { realm_bots: await realmBotsState(db, options.apiKeyCipher, user) };
    },
  },
  ...Object.entries(EMPTY_STATE).map(([kind, value]) => ({ kinds: [kind], read: async () => value })),
];

/** Every kind of state Parley answers (what `/register` returns without fetch_event_types). */
export const STATE_KINDS: readonly string[] = [...new Set(CONTRIBUTORS.flatMap((c) => c.kinds))];

/** The state for the requested kinds (every kind when null), read with `db` (one snapshot). */
export async function readRegisterState(db: RawSql, realm: Realm, user: User, kinds: readonly string[] | null, options: RegisterOptions): Promise<Record<string, unknown>> {
  const wanted = kinds ? new Set(kinds) : null;
  const ctx: StateContext = { db, realm, user, options, shared: sharedReads(db, realm, user) };
  const state: Record<string, unknown> = {};
  for (const contributor of CONTRIBUTORS) {
    if (wanted && !contributor.kinds.some((k) => wanted.has(k))) continue;
    if (contributor.from && !(await ctx.shared.sources())[contributor.from.source]) Object.assign(state, contributor.from.empty);
    else Object.assign(state, await contributor.read(ctx));
  }
  return state;
}
