// The settings new users start with (issue 25, part 2): PATCH /realm/user_settings_defaults for every
// setting Zulip's RealmUserDefault takes, its `realm_user_settings_defaults` event and state, Zulip's
// validation (lists, sounds, batching periods, types) with nothing half-applied, who may change them,
// the settings it does not take, and the defaults reaching accounts created afterwards through every
// path (POST /users, the sign-up page of an invitation, the manage command) but not existing ones.
import { execFile } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createParleyClient, type paths } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { TEST_SECRET, type Person } from '../../helpers/fixtures.ts';
import { eventsSince, eventPayloadsSince, markEvents } from '../../helpers/events.ts';
import { activeUsers, createAccount, uniqueEmail } from '../../helpers/people.ts';
import { apiKeyOf, fetchApiKey } from '../../helpers/auth.ts';
import { registerQueue } from '../../helpers/queues.ts';

type DefaultsBody = NonNullable<paths['/realm/user_settings_defaults']['patch']['requestBody']>['content']['application/x-www-form-urlencoded'];

const env = useTestServer();
const here = path.dirname(fileURLToPath(import.meta.url));

const patchDefaults = (as: Person, body: DefaultsBody) => env.client(as).PATCH('/realm/user_settings_defaults', { body });
const rawPatch = (as: Person, form: Record<string, string>) => env.raw('/realm/user_settings_defaults', { method: 'PATCH', as, body: new URLSearchParams(form) });
const defaultsState = async (as: Person = 'hamlet') =>
  ((await registerQueue(env.client(as), { fetch_event_types: ['realm_user_settings_defaults'] })) as Record<string, any>).realm_user_settings_defaults as Record<string, unknown>;

/** Every setting the endpoint takes: Zulip's default for new users of a new organization, and another value. */
const SETTINGS: Array<[keyof DefaultsBody & string, unknown, unknown]> = [
  ['twenty_four_hour_time', false, true],
  ['web_mark_read_on_scroll_policy', 1, 2],
  ['web_channel_default_view', 1, 4],
  ['starred_message_counts', true, false],
  ['receives_typing_notifications', true, false],
  ['web_suggest_update_timezone', true, false],
  ['fluid_layout_width', false, true],
  ['high_contrast_mode', false, true],
  ['web_font_size_px', 16, 14],
  ['web_line_height_percent', 140, 122],
  ['color_scheme', 1, 2],
  ['enable_drafts_synchronization', true, false],
  ['translate_emoticons', false, true],
  ['display_emoji_reaction_users', true, false],
  ['web_home_view', 'inbox', 'recent_topics'],
  ['web_escape_navigates_to_home_view', true, false],
  ['left_side_userlist', false, true],
  ['emojiset', 'google', 'text'],
  ['demote_inactive_streams', 1, 3],
  ['user_list_style', 2, 1],
  ['web_animate_image_previews', 'on_hover', 'never'],
  ['web_stream_unreads_count_display_policy', 2, 3],
  ['hide_ai_features', false, true],
  ['web_left_sidebar_show_channel_folders', true, false],
  ['web_left_sidebar_unreads_count_summary', true, false],
  ['enable_stream_desktop_notifications', false, true],
  ['enable_stream_email_notifications', false, true],
  ['enable_stream_push_notifications', false, true],
  ['enable_stream_audible_notifications', false, true],
  ['notification_sound', 'zulip', 'ding'],
  ['enable_desktop_notifications', true, false],
  ['enable_sounds', true, false],
  ['email_notifications_batching_period_seconds', 120, 3600],
  ['enable_offline_email_notifications', true, false],
  ['enable_offline_push_notifications', true, false],
  ['enable_online_push_notifications', true, false],
  ['enable_followed_topic_desktop_notifications', true, false],
  ['enable_followed_topic_email_notifications', true, false],
  ['enable_followed_topic_push_notifications', true, false],
  ['enable_followed_topic_audible_notifications', true, false],
  ['enable_digest_emails', true, false],
  ['message_content_in_email_notifications', true, false],
  ['pm_content_in_desktop_notifications', true, false],
  ['wildcard_mentions_notify', true, false],
  ['enable_followed_topic_wildcard_mentions_notify', true, false],
  ['desktop_icon_count_display', 1, 4],
  ['realm_name_in_email_notifications_policy', 1, 3],
  ['automatically_follow_topics_policy', 3, 4],
  ['automatically_unmute_topics_in_muted_streams_policy', 2, 4],
  ['automatically_follow_topics_where_mentioned', true, false],
  ['resolved_topic_notice_auto_read_policy', 'except_followed', 'never'],
  ['presence_enabled', true, false],
  ['enter_sends', false, true],
  ['send_private_typing_notifications', true, false],
  ['send_stream_typing_notifications', true, false],
  ['send_read_receipts', true, false],
  ['email_address_visibility', 1, 3],
  ['web_navigate_to_sent_message', true, false],
];

/** Settings of Zulip's RealmUserDefault in /register that the endpoint does not take, at their defaults. */
const NOT_TAKEN: Array<[string, unknown]> = [
  ['default_language', 'en'],
  ['enable_login_emails', true],
  ['enable_marketing_emails', true],
  ['allow_private_data_export', false],
];

/** A few non-default defaults, and the check that a new user's settings carry them. */
const CHOSEN: DefaultsBody = { enter_sends: true, color_scheme: 3, emojiset: 'text', notification_sound: 'ding', resolved_topic_notice_auto_read_policy: 'never', email_address_visibility: 3 };

async function userSettingsOf(client: ReturnType<typeof createParleyClient>): Promise<Record<string, unknown>> {
  return ((await registerQueue(client, { fetch_event_types: ['user_settings'] })) as Record<string, any>).user_settings;
}

async function resetDefaults(): Promise<void> {
  const { error } = await patchDefaults('iago', Object.fromEntries(SETTINGS.map(([name, dflt]) => [name, dflt])) as DefaultsBody);
  if (error) throw new Error(`resetting the defaults failed: ${JSON.stringify(error)}`);
}

describe('PATCH /realm/user_settings_defaults', () => {
  afterAll(resetDefaults);

  describe('the state', () => {
    it("starts at Zulip's defaults, with the settings it does not take and the choices clients offer", async () => {
      const state = await defaultsState();
      for (const [name, dflt] of [...SETTINGS, ...NOT_TAKEN]) expect(state[name], name).toEqual(dflt);
      expect(state.timezone).toBeUndefined();
      expect(state.emojiset_choices).toEqual([
        { key: 'google', text: 'Google' },
        { key: 'twitter', text: 'Twitter' },
        { key: 'text', text: 'Plain text' },
        { key: 'google-blob', text: 'Google blobs' },
      ]);
      expect(state.available_notification_sounds).toContain('zulip');
      expect(Object.keys(state).sort()).toEqual([...SETTINGS.map(([n]) => n), ...NOT_TAKEN.map(([n]) => n), 'available_notification_sounds', 'emojiset_choices'].sort());
    });
  });

  describe('every setting', () => {
    it.each(SETTINGS)('%s: changed, announced to every active user, in /register, then back', async (name, dflt, other) => {
      const before = await markEvents(env);
      const { data, error } = await patchDefaults('iago', { [name]: other } as DefaultsBody);
      expect(data, JSON.stringify(error)).toEqual({ result: 'success', msg: '' });
      const events = await eventsSince(env, before);
      expect(events.map((e) => e.payload)).toEqual([{ type: 'realm_user_settings_defaults', op: 'update', property: name, value: other }]);
      expect(events[0]!.userIds).toEqual((await activeUsers(env, env.realmId)).map((u) => u.id).sort((a, b) => a - b));
      expect((await defaultsState())[name]).toEqual(other);
      // The same value again is no change.
      const again = await markEvents(env);
      expect((await patchDefaults('iago', { [name]: other } as DefaultsBody)).data).toEqual({ result: 'success', msg: '' });
      expect(await eventPayloadsSince(env, again)).toEqual([]);
      await patchDefaults('iago', { [name]: dflt } as DefaultsBody);
      expect((await defaultsState())[name]).toEqual(dflt);
    });

    it("Zulip's documentation example (left_side_userlist, emojiset), as the Python client sends it", async () => {
      const before = await markEvents(env);
      const res = await rawPatch('iago', { left_side_userlist: 'true', emojiset: 'google' });
      expect(res).toMatchObject({ status: 200, body: { result: 'success', msg: '' } });
      expect(await eventPayloadsSince(env, before)).toEqual([{ type: 'realm_user_settings_defaults', op: 'update', property: 'left_side_userlist', value: true }]);
      await patchDefaults('iago', { left_side_userlist: false });
    });

    it('the personal-only settings are not taken: listed in ignored_parameters_unsupported, nothing changes', async () => {
      const before = await markEvents(env);
      const res = await rawPatch('iago', { default_language: 'de', timezone: 'Europe/Paris', enable_login_emails: 'false', enable_marketing_emails: 'false', allow_private_data_export: 'true', dense_mode: 'true' });
      expect(res.status).toBe(200);
      expect(res.body.ignored_parameters_unsupported.sort()).toEqual(['allow_private_data_export', 'default_language', 'dense_mode', 'enable_login_emails', 'enable_marketing_emails', 'timezone']);
      expect(await eventPayloadsSince(env, before)).toEqual([]);
      const state = await defaultsState();
      for (const [name, dflt] of NOT_TAKEN) expect(state[name]).toEqual(dflt);
    });
  });

  describe('who may change them', () => {
    it.each(['shiva', 'hamlet', 'polonius'] as const)('%s (not an administrator) is refused, and nothing changes', async (person) => {
      const before = await markEvents(env);
      expectJsonError(await patchDefaults(person, { enter_sends: true }), 400, 'Must be an organization administrator', 'UNAUTHORIZED_PRINCIPAL');
      expect(await eventPayloadsSince(env, before)).toEqual([]);
      expect((await defaultsState()).enter_sends).toBe(false);
    });

    it('an owner may, as an administrator may', async () => {
      expect((await patchDefaults('desdemona', { starred_message_counts: false })).data).toEqual({ result: 'success', msg: '' });
      await patchDefaults('desdemona', { starred_message_counts: true });
    });
  });

  describe("bad values: Zulip's errors, and nothing half-applied", () => {
    const BAD: Array<[string, Record<string, string>, string]> = [
      ['a value outside a list', { color_scheme: '7' }, 'Invalid color_scheme: Value error, Not in the list of possible values'],
      ['an unknown emoji set', { emojiset: 'apple' }, 'Invalid emojiset: Value error, Not in the list of possible values'],
      ['an unknown home view', { web_home_view: 'stream' }, 'Invalid web_home_view: Value error, Not in the list of possible values'],
      ['an unknown resolved-topic policy', { resolved_topic_notice_auto_read_policy: 'sometimes' }, 'Invalid resolved_topic_notice_auto_read_policy'],
      ['an unknown email visibility', { email_address_visibility: '6' }, 'Invalid email_address_visibility: Value error, Not in the list of possible values'],
      ['a sound Zulip does not ship', { notification_sound: 'trumpet' }, "Invalid notification sound 'trumpet'"],
      ['a batching period over a week', { email_notifications_batching_period_seconds: '604801' }, 'Invalid email batching period: 604801 seconds'],
      ['a batching period of zero', { email_notifications_batching_period_seconds: '0' }, 'Invalid email batching period: 0 seconds'],
      ['a boolean that is not one', { enter_sends: '1' }, 'enter_sends is not a boolean'],
      ['an integer that is not one', { web_font_size_px: '"16"' }, 'web_font_size_px is not an integer'],
    ];

    it.each(BAD)('%s', async (_what, form, msg) => {
      const before = await markEvents(env);
      // With a valid change in the same request, which must not happen either.
      expectJsonError(await rawPatch('iago', { twenty_four_hour_time: 'true', ...form }), 400, msg, 'BAD_REQUEST');
      expect(await eventPayloadsSince(env, before)).toEqual([]);
      expect((await defaultsState()).twenty_four_hour_time).toBe(false);
    });
  });

  describe('new accounts start with the defaults; existing ones keep their settings', () => {
    it('POST /users', async () => {
      const before = await createAccount(env, { label: 'before-defaults', fullName: 'Before Defaults' });
      await patchDefaults('iago', CHOSEN);
      const mark = await markEvents(env);
      const after = await createAccount(env, { label: 'after-defaults', fullName: 'After Defaults' });
      expect(await userSettingsOf(after.client)).toMatchObject(CHOSEN);
      expect(await userSettingsOf(before.client)).toMatchObject({ enter_sends: false, color_scheme: 1, emojiset: 'google', email_address_visibility: 1 });
      // Administrators-only e-mail visibility from the start: others are introduced to a hidden address.
      const added = (await eventPayloadsSince(env, mark)).find((e) => e.type === 'realm_user' && e.op === 'add');
      expect(added.person.email).toBe(`user${after.id}@${new URL(env.running.deps.config.publicUrl).hostname}`);
      const members = await env.client('hamlet').GET('/users/{user_id}', { params: { path: { user_id: after.id } } });
      expect(members.data?.user).toMatchObject({ email: `user${after.id}@${new URL(env.running.deps.config.publicUrl).hostname}` });
      expect(members.data?.user.delivery_email ?? null).toBeNull();
      await resetDefaults();
    });

    it('the sign-up page of an invitation (with the browser\'s language, as Zulip takes it)', async () => {
      await patchDefaults('iago', CHOSEN);
      const email = uniqueEmail('invited-defaults');
      expect((await env.client('iago').POST('/invites', { body: { invitee_emails: email, stream_ids: [] } })).error).toBeUndefined();
      const mail = await env.running.deps.db.emailOutbox.findFirstOrThrow({ where: { to: email }, orderBy: { id: 'desc' } });
      const link = /https?:\/\/[^\s/]+(\/accounts\/do_confirm\/[0-9a-f]{40})/.exec(mail.text)![1]!;
      const res = await fetch(`${env.url}${link}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Accept-Language': 'xx-YY, pt-BR;q=0.9, de;q=0.8' },
        body: new URLSearchParams({ full_name: 'Invited Defaults', password: 'correct horse battery staple' }).toString(),
      });
      expect(res.status).toBe(200);
      // The invitee's key comes from logging in (fetch_api_key), as their clients get it.
      const client = createParleyClient({ site: env.url, email, apiKey: await fetchApiKey(env, email, 'correct horse battery staple') });
      // pt-br is the browser's first language Zulip has translations for.
      expect(await userSettingsOf(client)).toMatchObject({ ...CHOSEN, default_language: 'pt-br' });
      await resetDefaults();
    });

    it('the manage command (create-user), with the organization\'s language', async () => {
      await patchDefaults('iago', CHOSEN);
      await env.client('iago').PATCH('/realm', { body: { default_language: 'es' } });
      const email = uniqueEmail('managed-defaults');
      await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(here, '../../../src/manage.ts'), 'create-user', '--email', email, '--full-name', 'Managed Defaults', '--realm', String(env.realmId)], {
        cwd: path.join(here, '../../..'),
        env: { ...process.env, DATABASE_URL: env.databaseUrl, PARLEY_SECRET_KEY: TEST_SECRET, PARLEY_DATA_DIR: os.tmpdir(), PARLEY_LOG_LEVEL: 'silent' },
      });
      const user = await env.running.deps.db.user.findFirstOrThrow({ where: { realmId: env.realmId, deliveryEmail: email } });
      const client = createParleyClient({ site: env.url, email, apiKey: await apiKeyOf(env, user.id) });
      expect(await userSettingsOf(client)).toMatchObject({ ...CHOSEN, default_language: 'es' });
      await env.client('iago').PATCH('/realm', { body: { default_language: 'en' } });
      await resetDefaults();
    });
  });
});
