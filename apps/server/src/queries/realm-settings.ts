// The organization's settings as POST /register answers them: every setting of lib/realm-settings.ts
// as `realm_<name>`, the values derived from them that Zulip adds (legacy policy numbers, the video
// providers and GIPHY ratings clients offer, `jitsi_server_url`), and the defaults of new users'
// settings (`realm_user_settings_defaults`).
import type { RawSql } from '../data/db.ts';
import type { Realm } from '../data/models.ts';
import { readUserDefaults } from '../data/realm-settings.repo.ts';
import { systemGroupIds, type SystemGroupName } from '../data/system-groups.repo.ts';
import { hostnameOf } from '../access/users.ts';
import { GIPHY_RATING_OPTIONS, REALM_SETTINGS, VIDEO_CHAT_PROVIDERS, apiValue, storedValue } from '../lib/realm-settings.ts';
import { userDefaultsState } from '../lib/realm-user-defaults.ts';

/** Zulip's SYSTEM_GROUPS_ENUM_MAP: the legacy policy number of each system group. */
const POLICY_OF_GROUP: Partial<Record<SystemGroupName, number>> = {
  'role:owners': 7,
  'role:administrators': 2,
  'role:moderators': 4,
  'role:fullmembers': 3,
  'role:members': 1,
  'role:everyone': 5,
  'role:nobody': 6,
};
/** Zulip's SYSTEM_GROUPS_TO_WILDCARD_MENTION_POLICY_MAP. */
const WILDCARD_POLICY_OF_GROUP: Partial<Record<SystemGroupName, number>> = {
  'role:everyone': 1,
  'role:members': 2,
  'role:fullmembers': 3,
  'role:administrators': 5,
  'role:nobody': 6,
  'role:moderators': 7,
};

/**
 * Zulip's get_corresponding_policy_value_for_group_setting: the policy number of the system group a
 * setting is set to when the older enumeration had it, else the number of the broadest allowed group.
 */
function legacyPolicy(groupName: SystemGroupName | undefined, valid: readonly number[], fallback: number): number {
  const value = groupName ? POLICY_OF_GROUP[groupName] : undefined;
  return value !== undefined && valid.includes(value) ? value : fallback;
}

/** The `realm_*` keys of the `realm` state that come from the organization's settings. */
export async function realmSettingsState(db: RawSql, realm: Realm): Promise<Record<string, unknown>> {
  const state: Record<string, unknown> = {};
  for (const setting of REALM_SETTINGS) state[`realm_${setting.name}`] = apiValue(setting, storedValue(setting, realm));
  const groups = await systemGroupIds(db, realm.id);
  const nameOf = new Map(Object.entries(groups).map(([name, id]) => [id, name as SystemGroupName]));
  const systemName = (id: number | null) => (id === null ? undefined : nameOf.get(id));
  return {
    ...state,
    // Parley sends no digest e-mails: Zulip reports the setting off on such servers.
    settings_send_digest_emails: false,
    realm_digest_emails_enabled: false,
    realm_mandatory_topics: realm.topicsPolicy === 'disable_empty_topic',
    // Deprecated (feature level 358): false only when no edit history is shown.
    realm_allow_edit_history: realm.messageEditHistoryVisibilityPolicy !== 'none',
    realm_create_public_stream_policy: legacyPolicy(systemName(realm.canCreatePublicChannelGroupId), [1, 2, 3, 4], 1),
    realm_create_private_stream_policy: legacyPolicy(systemName(realm.canCreatePrivateChannelGroupId), [1, 2, 3, 4], 1),
    realm_create_web_public_stream_policy: legacyPolicy(systemName(realm.canCreateWebPublicChannelGroupId), [2, 4, 6, 7], 4),
    realm_wildcard_mention_policy: WILDCARD_POLICY_OF_GROUP[systemName(realm.canMentionManyUsersGroupId) ?? 'role:internet'] ?? 1,
    realm_available_video_chat_providers: structuredClone(VIDEO_CHAT_PROVIDERS),
    giphy_rating_options: structuredClone(GIPHY_RATING_OPTIONS),
    // The organization's Jitsi server, or the server's (none).
    server_jitsi_server_url: null,
    jitsi_server_url: realm.jitsiServerUrl,
    realm_authentication_methods: { Email: { enabled: true, available: true } },
    realm_email_auth_enabled: true,
    realm_password_auth_enabled: true,
    realm_bot_domain: hostnameOf(realm.url),
    realm_org_type: realm.orgType,
    // Zulip's PLAN_TYPE_SELF_HOSTED.
    realm_plan_type: 1,
    realm_push_notifications_enabled_end_timestamp: null,
    server_can_summarize_topics: false,
  };
}

/** `realm_user_settings_defaults` of POST /register. */
export async function realmUserDefaultsState(db: RawSql, realm: Realm): Promise<Record<string, unknown>> {
  return userDefaultsState(await readUserDefaults(db, realm.id));
}
