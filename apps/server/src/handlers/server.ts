import type { Handler } from '../http/handler.ts';
import { FEATURE_LEVEL, MERGE_BASE, ZULIP_VERSION } from '../version.ts';
import { renderMarkdown } from '../lib/markdown.ts';
import { realmIconUrl } from '../lib/realm-images.ts';

export const getServerSettings: Handler<'get-server-settings'> = async ({ realm, deps }) => ({
  zulip_version: ZULIP_VERSION,
  zulip_feature_level: FEATURE_LEVEL,
  zulip_merge_base: MERGE_BASE,
  push_notifications_enabled: deps.config.pushNotificationsEnabled,
  is_incompatible: false,
  email_auth_enabled: true,
  require_email_format_usernames: true,
  authentication_methods: { password: true, dev: false },
  external_authentication_methods: [],
  realm_url: realm.url,
  realm_uri: realm.url,
  realm_name: realm.name,
  realm_icon: realmIconUrl(realm),
  realm_description: renderMarkdown(realm.description),
  realm_web_public_access_enabled: realm.enableSpectatorAccess,
});
