// How the simulated clients of the load test and bench/register-burst.bench.ts register: as Zulip's
// mobile app does (all state, apply_markdown, client_gravatar, slim presence, no subscriber lists, the
// modern client capabilities).
export const MOBILE_CAPABILITIES = JSON.stringify({
  notification_settings_null: true,
  bulk_message_deletion: true,
  user_avatar_url_field_optional: true,
  stream_typing_notifications: true,
  user_settings_object: true,
  linkifier_url_template: true,
  user_list_incomplete: true,
  include_deactivated_groups: true,
  archived_channels: true,
  empty_topic_name: true,
  simplified_presence_events: true,
});

/** The form body of such a registration (`passive`: no state, fetch_event_types=[]). */
export const mobileRegisterBody = (options: { passive?: boolean } = {}) =>
  new URLSearchParams({
    apply_markdown: 'true',
    client_gravatar: 'true',
    slim_presence: 'true',
    include_subscribers: 'false',
    client_capabilities: MOBILE_CAPABILITIES,
    ...(options.passive ? { fetch_event_types: '[]' } : {}),
  }).toString();
