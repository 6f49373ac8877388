// Every organization setting of PATCH /realm (issue 25, part 1), with Zulip's facts written out here
// (not read from the server's table): each setting's new value, its echo, its `realm` event in Zulip's
// form (`update`, or `update_dict` for allow_message_editing, message_content_edit_limit_seconds,
// topics_policy and the permission settings), its `realm_<name>` in /register, who may change it
// (owner-only settings, administrators, and everyone else refused), every kind of bad value with
// Zulip's error, nothing half-applied, and the effects Parley implements (the waiting period and
// role:fullmembers, default_language reaching new users, the channel-valued settings' checks).
import { describe, expect, it } from 'vitest';
import type { paths } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { eventsSince, eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers, createAccount, createUser } from '../../helpers/people.ts';
import { directMembers, useSystemGroupIds, type RealmGroupSetting, type SystemGroupName } from '../../helpers/groups.ts';
import { registerQueue } from '../../helpers/queues.ts';
import { useChannel } from '../../helpers/channels.ts';
import { waitFor } from '../../helpers/wait.ts';

type RealmBody = NonNullable<paths['/realm']['patch']['requestBody']>['content']['application/x-www-form-urlencoded'];

const env = useTestServer();
const sys = useSystemGroupIds(env);
const privateChannel = useChannel(env, 'iago', { invite_only: true });
const publicChannel = useChannel(env, 'iago');

const patchRealm = (as: Person, body: RealmBody) => env.client(as).PATCH('/realm', { body });
const rawPatch = (as: Person, form: Record<string, string>) => env.raw('/realm', { method: 'PATCH', as, body: new URLSearchParams(form) });
const readRealm = () => env.running.deps.db.realm.findUniqueOrThrow({ where: { id: env.realmId } });
const realmState = async (as: Person = 'hamlet') => (await registerQueue(env.client(as), { fetch_event_types: ['realm'] })) as Record<string, unknown>;

/**
 * One plain setting: Zulip's default, a new value to send, what PATCH /realm echoes for it, how its
 * `realm` event carries it, and whether only owners may change it. Channel-valued settings name their
 * channel (resolved in the test).
 */
interface Case {
  name: keyof RealmBody & string;
  defaultValue: unknown;
  send: unknown;
  echo: unknown;
  /** The event's value (`update`), or its whole `data` (`update_dict`). */
  event: { op: 'update'; value: unknown } | { op: 'update_dict'; data: Record<string, unknown> };
  /** `realm_<name>` of /register after the change (the event's value unless said). */
  state?: unknown;
  owner?: true;
  /** What resets it (the default as PATCH /realm takes it), when that differs from `defaultValue`. */
  reset?: unknown;
}

const PRIVATE = Symbol('private channel');
const PUBLIC = Symbol('public channel');

const CASES: Case[] = [
  { name: 'allow_message_editing', defaultValue: true, send: false, echo: false, event: { op: 'update_dict', data: { allow_message_editing: false } }, state: false },
  { name: 'avatar_changes_disabled', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'default_code_block_language', defaultValue: '', send: 'python', echo: 'updated', event: { op: 'update', value: 'python' } },
  { name: 'default_language', defaultValue: 'en', send: 'de', echo: 'updated', event: { op: 'update', value: 'de' } },
  { name: 'description', defaultValue: '', send: 'We **build** things.', echo: 'updated', event: { op: 'update', value: 'We **build** things.' } },
  // Parley sends no digests: /register says so whatever is stored, as Zulip does on such servers.
  { name: 'digest_emails_enabled', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true }, state: false },
  { name: 'digest_weekday', defaultValue: 1, send: 4, echo: 4, event: { op: 'update', value: 4 } },
  { name: 'disallow_disposable_email_addresses', defaultValue: true, send: false, echo: false, event: { op: 'update', value: false }, owner: true },
  { name: 'email_changes_disabled', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'emails_restricted_to_domains', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true }, owner: true },
  { name: 'enable_guest_user_dm_warning', defaultValue: true, send: false, echo: false, event: { op: 'update', value: false } },
  { name: 'enable_guest_user_indicator', defaultValue: true, send: false, echo: false, event: { op: 'update', value: false } },
  { name: 'enable_read_receipts', defaultValue: true, send: false, echo: false, event: { op: 'update', value: false } },
  { name: 'enable_spectator_access', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'giphy_rating', defaultValue: 2, send: 4, echo: 4, event: { op: 'update', value: 4 } },
  { name: 'inline_image_preview', defaultValue: true, send: false, echo: false, event: { op: 'update', value: false } },
  { name: 'inline_url_embed_preview', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'invite_required', defaultValue: true, send: false, echo: false, event: { op: 'update', value: false }, owner: true },
  { name: 'jitsi_server_url', defaultValue: null, send: 'https://jitsi.example.com', echo: 'updated', event: { op: 'update', value: 'https://jitsi.example.com' }, reset: 'default' },
  { name: 'message_content_allowed_in_email_notifications', defaultValue: true, send: false, echo: false, event: { op: 'update', value: false } },
  { name: 'message_content_delete_limit_seconds', defaultValue: 600, send: 'unlimited', echo: null, event: { op: 'update', value: null } },
  { name: 'message_content_edit_limit_seconds', defaultValue: 600, send: 3600, echo: 3600, event: { op: 'update_dict', data: { message_content_edit_limit_seconds: 3600 } }, state: 3600 },
  { name: 'message_edit_history_visibility_policy', defaultValue: 'all', send: 'moves', echo: 2, event: { op: 'update', value: 'moves' } },
  { name: 'message_retention_days', defaultValue: -1, send: 30, echo: 30, event: { op: 'update', value: 30 }, owner: true, reset: 'unlimited' },
  { name: 'moderation_request_channel_id', defaultValue: -1, send: PRIVATE, echo: PRIVATE, event: { op: 'update', value: PRIVATE } },
  { name: 'move_messages_between_streams_limit_seconds', defaultValue: 604800, send: 60, echo: 60, event: { op: 'update', value: 60 } },
  { name: 'move_messages_within_stream_limit_seconds', defaultValue: 604800, send: 'unlimited', echo: null, event: { op: 'update', value: null } },
  { name: 'name', defaultValue: null, send: 'Renamed organization', echo: 'updated', event: { op: 'update', value: 'Renamed organization' } },
  { name: 'name_changes_disabled', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'new_stream_announcements_stream_id', defaultValue: -1, send: PUBLIC, echo: PUBLIC, event: { op: 'update', value: PUBLIC } },
  { name: 'org_type', defaultValue: 0, send: 30, echo: 30, event: { op: 'update', value: 30 } },
  { name: 'require_e2ee_push_notifications', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'require_unique_names', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'send_channel_events_messages', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'send_welcome_emails', defaultValue: true, send: false, echo: false, event: { op: 'update', value: false } },
  { name: 'signup_announcements_stream_id', defaultValue: -1, send: PUBLIC, echo: PUBLIC, event: { op: 'update', value: PUBLIC } },
  {
    name: 'topics_policy',
    defaultValue: 'allow_empty_topic',
    send: 'disable_empty_topic',
    echo: 3,
    event: { op: 'update_dict', data: { topics_policy: 'disable_empty_topic', mandatory_topics: true } },
    state: 'disable_empty_topic',
  },
  { name: 'video_chat_provider', defaultValue: 1, send: 0, echo: 0, event: { op: 'update', value: 0 } },
  { name: 'waiting_period_threshold', defaultValue: 0, send: 3, echo: 3, event: { op: 'update', value: 3 }, owner: true },
  { name: 'want_advertise_in_communities_directory', defaultValue: false, send: true, echo: true, event: { op: 'update', value: true } },
  { name: 'welcome_message_custom_text', defaultValue: '', send: 'Welcome aboard!', echo: 'updated', event: { op: 'update', value: 'Welcome aboard!' } },
  { name: 'zulip_update_announcements_stream_id', defaultValue: -1, send: PUBLIC, echo: PUBLIC, event: { op: 'update', value: PUBLIC } },
];

/** The permission settings Parley did not have before (with Zulip's defaults and the groups they refuse). */
const NEW_GROUP_SETTINGS: Array<{ name: RealmGroupSetting; defaultGroup: SystemGroupName; refused: SystemGroupName[]; owner?: true }> = [
  { name: 'can_add_custom_emoji_group', defaultGroup: 'role:members', refused: ['role:everyone', 'role:internet'] },
  { name: 'can_create_bots_group', defaultGroup: 'role:members', refused: ['role:everyone', 'role:internet'] },
  { name: 'can_create_write_only_bots_group', defaultGroup: 'role:members', refused: ['role:everyone', 'role:internet'] },
  { name: 'can_manage_billing_group', defaultGroup: 'role:administrators', refused: ['role:everyone', 'role:nobody', 'role:internet'], owner: true },
  { name: 'can_set_delete_message_policy_group', defaultGroup: 'role:moderators', refused: ['role:everyone', 'role:internet'] },
  { name: 'can_set_topics_policy_group', defaultGroup: 'role:moderators', refused: ['role:internet'] },
  { name: 'can_summarize_topics_group', defaultGroup: 'role:everyone', refused: ['role:internet'] },
  { name: 'create_multiuse_invite_group', defaultGroup: 'role:administrators', refused: ['role:everyone', 'role:internet'], owner: true },
  { name: 'direct_message_initiator_group', defaultGroup: 'role:everyone', refused: ['role:internet'] },
  { name: 'direct_message_permission_group', defaultGroup: 'role:everyone', refused: ['role:internet'] },
];

/** A case's symbolic channel as its id. */
const resolve = (value: unknown): unknown => (value === PRIVATE ? privateChannel.id : value === PUBLIC ? publicChannel.id : value);
const resolveData = (data: Record<string, unknown>) => Object.fromEntries(Object.entries(data).map(([k, v]) => [k, resolve(v)]));

const expectedEvent = (c: Case) =>
  c.event.op === 'update'
    ? { type: 'realm', op: 'update', property: c.name, value: resolve(c.event.value) }
    : { type: 'realm', op: 'update_dict', property: 'default', data: resolveData(c.event.data) };

const changer = (c: { owner?: true }): Person => (c.owner ? 'desdemona' : 'iago');

describe('PATCH /realm', () => {
  describe("every setting, with Zulip's defaults, echo, event and /register value", () => {
    it("/register starts with Zulip's default of every setting", async () => {
      const state = await realmState();
      const realm = await readRealm();
      for (const c of CASES) expect(state[`realm_${c.name}`], c.name).toEqual(c.name === 'name' ? realm.name : c.defaultValue);
      for (const g of NEW_GROUP_SETTINGS) expect(state[`realm_${g.name}`], g.name).toBe(sys[g.defaultGroup]);
      expect(state).toMatchObject({
        realm_mandatory_topics: false,
        settings_send_digest_emails: false,
        jitsi_server_url: null,
        server_jitsi_server_url: null,
        realm_available_video_chat_providers: { disabled: { name: 'None', id: 0 }, jitsi_meet: { name: 'Jitsi Meet', id: 1 } },
        realm_create_public_stream_policy: 1,
        realm_create_private_stream_policy: 1,
        // can_create_web_public_channel_group is role:owners, can_mention_many_users_group role:administrators.
        realm_create_web_public_stream_policy: 7,
        realm_wildcard_mention_policy: 5,
        realm_plan_type: 1,
      });
      expect(Object.keys(state.giphy_rating_options as object)).toEqual(['disabled', 'y', 'g', 'pg', 'pg-13', 'r']);
    });

    it.each(CASES)('$name: changed, echoed, announced to every active user in its form, in /register, then reset', async (c) => {
      const before = await markEvents(env);
      const { data, response, error } = await patchRealm(changer(c), { [c.name]: resolve(c.send) } as RealmBody);
      expect(response.status, JSON.stringify(error)).toBe(200);
      expect(data).toEqual({ result: 'success', msg: '', [c.name]: resolve(c.echo) });
      const events = (await eventsSince(env, before)).filter((e) => e.payload.type === 'realm');
      expect(events.map((e) => e.payload)).toEqual([expectedEvent(c)]);
      expect(events[0]!.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id).sort((a, b) => a - b));
      expect((await realmState())[`realm_${c.name}`]).toEqual(resolve(c.state ?? (c.event.op === 'update' ? c.event.value : undefined)));

      // The same value again is no change; the default (as PATCH /realm takes it) puts it back.
      const again = await markEvents(env);
      expect((await patchRealm(changer(c), { [c.name]: resolve(c.send) } as RealmBody)).data).toEqual({ result: 'success', msg: '' });
      expect(await eventPayloadsSince(env, again)).toEqual([]);
      if (c.name === 'name') return;
      const reset = c.reset ?? c.defaultValue;
      const back = await patchRealm(changer(c), { [c.name]: reset } as RealmBody);
      expect(back.response.status, JSON.stringify(back.error)).toBe(200);
      expect((await realmState())[`realm_${c.name}`]).toEqual(c.name === 'digest_emails_enabled' ? false : c.defaultValue);
    });

    it('jitsi_server_url set back to "default" is echoed and announced as null', async () => {
      await patchRealm('iago', { jitsi_server_url: 'https://meet.example.org/room' });
      expect((await realmState()).jitsi_server_url).toBe('https://meet.example.org/room');
      const before = await markEvents(env);
      expect((await patchRealm('iago', { jitsi_server_url: 'default' })).data).toEqual({ result: 'success', msg: '', jitsi_server_url: null });
      expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'realm', op: 'update', property: 'jitsi_server_url', value: null }]);
      expect((await realmState()).jitsi_server_url).toBeNull();
    });

    it.each(NEW_GROUP_SETTINGS)('$name: a permission setting, announced as update_dict, refusing what Zulip refuses', async (g) => {
      const before = await markEvents(env);
      const { data, error } = await patchRealm(changer(g), { [g.name]: { new: sys['role:administrators'] === sys[g.defaultGroup] ? sys['role:moderators'] : sys['role:administrators'] } } as RealmBody);
      const value = sys['role:administrators'] === sys[g.defaultGroup] ? sys['role:moderators'] : sys['role:administrators'];
      expect(data, JSON.stringify(error)).toEqual({ result: 'success', msg: '', [g.name]: value });
      expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'realm', op: 'update_dict', property: 'default', data: { [g.name]: value } }]);
      expect((await realmState())[`realm_${g.name}`]).toBe(value);
      for (const group of g.refused) {
        expectJsonError(await patchRealm(changer(g), { [g.name]: { new: sys[group] } } as RealmBody), 400, `'${g.name}' setting cannot be set to '${group}' group.`, 'BAD_REQUEST');
      }
      await patchRealm(changer(g), { [g.name]: { new: sys[g.defaultGroup] } } as RealmBody);
      expect((await realmState())[`realm_${g.name}`]).toBe(sys[g.defaultGroup]);
    });

    it('can_create_web_public_channel_group takes moderators, administrators, owners or nobody only; can_manage_all_groups not nobody', async () => {
      for (const group of ['role:members', 'role:fullmembers'] as const) {
        expectJsonError(
          await patchRealm('iago', { can_create_web_public_channel_group: { new: sys[group] } }),
          400,
          `'can_create_web_public_channel_group' setting cannot be set to '${group}' group.`,
          'BAD_REQUEST',
        );
      }
      expectJsonError(await patchRealm('desdemona', { can_manage_all_groups: { new: sys['role:nobody'] } }), 400, "'can_manage_all_groups' setting cannot be set to 'role:nobody' group.", 'BAD_REQUEST');
      expectJsonError(await patchRealm('iago', { can_add_subscribers_group: { new: sys['role:everyone'] } }), 400, "'can_add_subscribers_group' setting cannot be set to 'role:everyone' group.", 'BAD_REQUEST');
    });

    it('several settings in one request: every change is made, echoed and announced', async () => {
      const before = await markEvents(env);
      const { data } = await patchRealm('iago', { giphy_rating: 1, org_type: 10, allow_message_editing: false, can_summarize_topics_group: { new: sys['role:members'] } });
      expect(data).toEqual({ result: 'success', msg: '', giphy_rating: 1, org_type: 10, allow_message_editing: false, can_summarize_topics_group: sys['role:members'] });
      const events = await eventPayloadsSince(env, before);
      expect(events).toHaveLength(4);
      expect(events).toEqual(
        expect.arrayContaining([
          { type: 'realm', op: 'update', property: 'giphy_rating', value: 1 },
          { type: 'realm', op: 'update', property: 'org_type', value: 10 },
          { type: 'realm', op: 'update_dict', property: 'default', data: { allow_message_editing: false } },
          { type: 'realm', op: 'update_dict', property: 'default', data: { can_summarize_topics_group: sys['role:members'] } },
        ]),
      );
      await patchRealm('iago', { giphy_rating: 2, org_type: 0, allow_message_editing: true, can_summarize_topics_group: { new: sys['role:everyone'] } });
    });

    it('two permission settings in one request are announced by one update_dict each, as Zulip sends them', async () => {
      const before = await markEvents(env);
      await patchRealm('iago', { can_create_bots_group: { new: sys['role:moderators'] }, can_add_custom_emoji_group: { new: sys['role:administrators'] } });
      const events = await eventPayloadsSince(env, before);
      expect(events).toHaveLength(2);
      expect(events).toEqual(
        expect.arrayContaining([
          { type: 'realm', op: 'update_dict', property: 'default', data: { can_create_bots_group: sys['role:moderators'] } },
          { type: 'realm', op: 'update_dict', property: 'default', data: { can_add_custom_emoji_group: sys['role:administrators'] } },
        ]),
      );
      await patchRealm('iago', { can_create_bots_group: { new: sys['role:members'] }, can_add_custom_emoji_group: { new: sys['role:members'] } });
    });
  });

  describe('who may change what', () => {
    // Bodies are made in the test (the system groups' ids are known once the server runs).
    const OWNER_ONLY: Array<[string, () => RealmBody]> = [
      ...CASES.filter((c) => c.owner).map((c): [string, () => RealmBody] => [c.name, () => ({ [c.name]: resolve(c.send) }) as RealmBody]),
      ...NEW_GROUP_SETTINGS.filter((g) => g.owner).map((g): [string, () => RealmBody] => [g.name, () => ({ [g.name]: { new: sys['role:owners'] } }) as RealmBody]),
      ['can_create_groups', () => ({ can_create_groups: { new: sys['role:administrators'] } })],
      ['can_invite_users_group', () => ({ can_invite_users_group: { new: sys['role:administrators'] } })],
      ['can_manage_all_groups', () => ({ can_manage_all_groups: { new: sys['role:owners'] } })],
      ['authentication_methods', () => ({ authentication_methods: { Email: true } })],
      ['string_id', () => ({ string_id: 'acme' })],
    ];

    it.each(OWNER_ONLY)('%s needs an organization owner: an administrator is refused and nothing changes', async (_name, body) => {
      const realm = await readRealm();
      const before = await markEvents(env);
      // With an administrator's setting in the same request, which must not change either.
      expectJsonError(await patchRealm('iago', { ...body(), giphy_rating: 5 }), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
      expect(await readRealm()).toEqual(realm);
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });

    it.each(['shiva', 'hamlet', 'polonius'] as const)('%s (not an administrator) may change no setting at all', async (person) => {
      const realm = await readRealm();
      for (const c of CASES) {
        expectJsonError(await patchRealm(person, { [c.name]: resolve(c.send) } as RealmBody), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
      }
      expectJsonError(await patchRealm(person, { can_summarize_topics_group: { new: sys['role:members'] } }), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
      expect(await readRealm()).toEqual(realm);
    });

    it('owners may change authentication_methods (only Email, which stays on) but not string_id', async () => {
      expect((await patchRealm('desdemona', { authentication_methods: { Email: true } })).data).toEqual({ result: 'success', msg: '' });
      expectJsonError(await patchRealm('desdemona', { authentication_methods: { Email: false } }), 400, 'At least one authentication method must be enabled.', 'BAD_REQUEST');
      expectJsonError(
        await patchRealm('desdemona', { authentication_methods: { GitHub: true, Email: true } }),
        400,
        "Invalid authentication method: GitHub. Valid methods are: ['Email']",
        'BAD_REQUEST',
      );
      expectJsonError(await patchRealm('desdemona', { string_id: 'acme' }), 400, 'Must be a demo organization.', 'BAD_REQUEST');
    });
  });

  describe('bad values: Zulip\'s errors, and nothing half-applied', () => {
    /** Each bad request is sent with a valid name change too; neither may stick. */
    const BAD: Array<{ what: string; as?: Person; form: Record<string, string> | (() => Record<string, string>); msg: string; code?: string }> = [
      { what: 'a boolean that is not one', form: { send_welcome_emails: '1' }, msg: 'send_welcome_emails is not a boolean' },
      { what: 'a boolean that is not JSON', form: { inline_image_preview: 'yes' }, msg: 'inline_image_preview is not valid JSON' },
      { what: 'an unknown language', form: { default_language: 'xx' }, msg: "Invalid language 'xx'" },
      { what: 'a name over 40 characters', form: { name: 'n'.repeat(41) }, msg: 'name is too long (limit: 40 characters)' },
      { what: 'a description over 1,000 characters', form: { description: 'd'.repeat(1001) }, msg: 'description is too long (limit: 1000 characters)' },
      { what: 'a welcome text over 8,000 characters', form: { welcome_message_custom_text: 'w'.repeat(8001) }, msg: 'welcome_message_custom_text is too long (limit: 8000 characters)' },
      { what: 'a weekday out of 0…6', form: { digest_weekday: '7' }, msg: 'Invalid digest_weekday' },
      { what: 'an integer setting sent as a string', form: { digest_weekday: '"monday"' }, msg: 'digest_weekday is not an integer' },
      { what: 'an unknown GIPHY rating', form: { giphy_rating: '6' }, msg: 'Invalid giphy_rating 6' },
      { what: 'a video provider Parley does not offer (Zoom)', form: { video_chat_provider: '3' }, msg: 'Invalid video_chat_provider 3' },
      { what: 'an unknown organization type', form: { org_type: '5' }, msg: 'Invalid org_type' },
      { what: 'a negative waiting period', as: 'desdemona', form: { waiting_period_threshold: '-1' }, msg: 'waiting_period_threshold is too small' },
      { what: 'a zero retention', as: 'desdemona', form: { message_retention_days: '0' }, msg: "Bad value for 'message_retention_days': 0", code: 'REQUEST_VARIABLE_INVALID' },
      { what: 'a retention of "forever"', as: 'desdemona', form: { message_retention_days: '"forever"' }, msg: "Bad value for 'message_retention_days': forever", code: 'REQUEST_VARIABLE_INVALID' },
      { what: 'a negative time limit', form: { message_content_delete_limit_seconds: '-5' }, msg: "Bad value for 'message_content_delete_limit_seconds': -5", code: 'REQUEST_VARIABLE_INVALID' },
      { what: 'an unknown topics policy (channels may inherit; the organization may not)', form: { topics_policy: 'inherit' }, msg: 'Invalid topics_policy' },
      { what: 'an unknown edit history policy', form: { message_edit_history_visibility_policy: 'some' }, msg: 'Invalid message_edit_history_visibility_policy' },
      { what: 'a Jitsi URL that is not a URL', form: { jitsi_server_url: '"not a url"' }, msg: 'jitsi_server_url is not an allowed_type' },
      { what: 'a Jitsi URL over 200 characters', form: { jitsi_server_url: JSON.stringify(`https://jitsi.example.com/${'x'.repeat(200)}`) }, msg: 'jitsi_server_url is not an allowed_type' },
      { what: 'a Jitsi URL that is not JSON', form: { jitsi_server_url: 'https://jitsi.example.com' }, msg: 'jitsi_server_url is not valid JSON' },
      { what: 'an unknown channel', form: { new_stream_announcements_stream_id: '999999' }, msg: 'Invalid channel ID' },
      { what: 'a group that does not exist', form: { can_create_bots_group: JSON.stringify({ new: 999999 }) }, msg: 'Invalid user group' },
      {
        what: 'a stale old value',
        form: () => ({ can_summarize_topics_group: JSON.stringify({ new: sys['role:members'], old: sys['role:nobody'] }) }),
        msg: "'old' value does not match the expected value.",
        code: 'EXPECTATION_MISMATCH',
      },
    ];

    it.each(BAD)('$what', async (bad) => {
      const realm = await readRealm();
      const before = await markEvents(env);
      const res = await rawPatch(bad.as ?? 'iago', { name: 'Must not stick', giphy_rating: '0', ...(typeof bad.form === 'function' ? bad.form() : bad.form) });
      expectJsonError(res, 400, bad.msg, bad.code ?? 'BAD_REQUEST');
      expect(await readRealm()).toEqual(realm);
      expect(await eventPayloadsSince(env, before)).toEqual([]);
    });

    it('a public channel as the moderation request channel is refused; a private one (or -1) is taken', async () => {
      expectJsonError(await patchRealm('iago', { moderation_request_channel_id: publicChannel.id, giphy_rating: 0 }), 400, 'Moderation request channel must be private.', 'BAD_REQUEST');
      expect((await readRealm()).giphyRating).toBe(2);
      expect((await patchRealm('iago', { moderation_request_channel_id: privateChannel.id })).data).toEqual({ result: 'success', msg: '', moderation_request_channel_id: privateChannel.id });
      expect((await patchRealm('iago', { moderation_request_channel_id: -1 })).data).toEqual({ result: 'success', msg: '', moderation_request_channel_id: -1 });
      expect((await realmState()).realm_moderation_request_channel_id).toBe(-1);
    });

    it('a private channel the administrator is not subscribed to is taken (administrators see every channel)', async () => {
      const { data } = await env.client('hamlet').POST('/users/me/subscriptions', { body: { subscriptions: [{ name: 'hamlet only' }], invite_only: true } });
      expect(data?.result).toBe('success');
      const hidden = await env.running.deps.db.channel.findFirstOrThrow({ where: { realmId: env.realmId, name: 'hamlet only' } });
      // Administrators see every private channel's metadata (Zulip's rule), so the channel is taken.
      expect((await patchRealm('iago', { signup_announcements_stream_id: hidden.id })).response.status).toBe(200);
      await patchRealm('iago', { signup_announcements_stream_id: -1 });
    });
  });

  describe('waiting_period_threshold and role:fullmembers', () => {
    it('a waiting period moves recent members out of role:fullmembers; they are back when it ends or is lifted', async () => {
      const db = env.running.deps.db;
      const newcomer = await createAccount(env, { label: 'newcomer', fullName: 'New Comer' });
      const veteran = await createUser(env, { label: 'veteran', fullName: 'Old Hand' });
      await db.user.update({ where: { id: veteran.id }, data: { dateJoined: new Date(Date.now() - 10 * 86_400_000) } });
      expect(await directMembers(env, sys['role:fullmembers'])).toContain(newcomer.id);

      // A full-member permission to watch: creating user groups.
      await patchRealm('desdemona', { can_create_groups: { new: sys['role:fullmembers'] } });
      const createGroupAs = (auth: string) =>
        env.raw('/user_groups/create', { method: 'POST', headers: { Authorization: auth }, body: new URLSearchParams({ name: `g ${Math.random()}`, description: '', members: '[]' }) });
      expect((await createGroupAs(newcomer.auth)).status).toBe(200);

      const before = await markEvents(env);
      expect((await patchRealm('desdemona', { waiting_period_threshold: 3 })).data).toEqual({ result: 'success', msg: '', waiting_period_threshold: 3 });
      const events = await eventPayloadsSince(env, before);
      expect(events[0]).toEqual({ type: 'realm', op: 'update', property: 'waiting_period_threshold', value: 3 });
      const removal = events.find((e) => e.type === 'user_group');
      expect(removal).toMatchObject({ type: 'user_group', op: 'remove_members', group_id: sys['role:fullmembers'] });
      expect(removal.user_ids).toContain(newcomer.id);
      expect(removal.user_ids).not.toContain(veteran.id);
      expect(removal.user_ids).toEqual([...removal.user_ids].sort((a: number, b: number) => a - b));
      expect(events).toHaveLength(2);
      const full = await directMembers(env, sys['role:fullmembers']);
      expect(full).toContain(veteran.id);
      expect(full).not.toContain(newcomer.id);
      // Still a member: only the full-member permission is gone.
      expect(await directMembers(env, sys['role:members'])).toContain(newcomer.id);
      expectJsonError(await createGroupAs(newcomer.auth), 400, 'Insufficient permission', 'BAD_REQUEST');

      // An account made during the waiting period starts as a member only.
      const late = await createUser(env, { label: 'late', fullName: 'Late Comer' });
      expect(await directMembers(env, sys['role:members'])).toContain(late.id);
      expect(await directMembers(env, sys['role:fullmembers'])).not.toContain(late.id);

      // Three days later (joined four days ago), the periodic job promotes the newcomer: through the job queue.
      await db.user.update({ where: { id: newcomer.id }, data: { dateJoined: new Date(Date.now() - 4 * 86_400_000) } });
      const promotion = await markEvents(env);
      await db.$executeRaw`UPDATE pgboss.job SET start_after = now() WHERE name = 'promote-full-members' AND state = 'created'`;
      await waitFor(async () => (await directMembers(env, sys['role:fullmembers'])).includes(newcomer.id), { what: 'the promotion job' });
      const promoted = (await eventPayloadsSince(env, promotion)).filter((e) => e.type === 'user_group');
      expect(promoted).toEqual([{ type: 'user_group', op: 'add_members', group_id: sys['role:fullmembers'], user_ids: [newcomer.id] }]);
      expect((await createGroupAs(newcomer.auth)).status).toBe(200);
      // The job scheduled its next run (one waiting, as every process keeps it).
      const waiting = await db.$queryRaw<Array<{ n: number }>>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'promote-full-members' AND state = 'created'`;
      expect(waiting[0]!.n).toBe(1);

      // Lifting the waiting period makes everyone a full member again.
      const lift = await markEvents(env);
      await patchRealm('desdemona', { waiting_period_threshold: 0 });
      const added = (await eventPayloadsSince(env, lift)).find((e) => e.type === 'user_group');
      expect(added).toMatchObject({ type: 'user_group', op: 'add_members', group_id: sys['role:fullmembers'] });
      expect(added.user_ids).toContain(late.id);
      expect(await directMembers(env, sys['role:fullmembers'])).toEqual(expect.arrayContaining([late.id, env.users.hamlet.id, newcomer.id]));
      await patchRealm('desdemona', { can_create_groups: { new: sys['role:members'] } });
    });

    it('a member promoted during a waiting period is a full member only once it is over; demoted back, too', async () => {
      const db = env.running.deps.db;
      const user = await createUser(env, { label: 'promoted', fullName: 'Promoted Person', role: 300 });
      await patchRealm('desdemona', { waiting_period_threshold: 5 });
      expect((await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: user.id } }, body: { role: 400 } })).response.status).toBe(200);
      expect(await directMembers(env, sys['role:members'])).toContain(user.id);
      expect(await directMembers(env, sys['role:fullmembers'])).not.toContain(user.id);
      await db.user.update({ where: { id: user.id }, data: { dateJoined: new Date(Date.now() - 6 * 86_400_000) } });
      await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: user.id } }, body: { role: 300 } });
      await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: user.id } }, body: { role: 400 } });
      expect(await directMembers(env, sys['role:fullmembers'])).toContain(user.id);
      await patchRealm('desdemona', { waiting_period_threshold: 0 });
    });
  });

  describe('default_language reaches new users', () => {
    it('an account created afterwards (POST /users) takes the organization\'s language', async () => {
      await patchRealm('iago', { default_language: 'fr' });
      const account = await createAccount(env, { label: 'francophone', fullName: 'Fran Cophone' });
      const state = (await registerQueue(account.client, { fetch_event_types: ['user_settings'] })) as Record<string, any>;
      expect(state.user_settings.default_language).toBe('fr');
      await patchRealm('iago', { default_language: 'en' });
      const later = await createAccount(env, { label: 'anglophone', fullName: 'Ang Lophone' });
      expect(((await registerQueue(later.client, { fetch_event_types: ['user_settings'] })) as Record<string, any>).user_settings.default_language).toBe('en');
    });
  });
});
