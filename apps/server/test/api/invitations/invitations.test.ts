// Invitations (seed operation 10, with GET /invites, revoke, resend and reusable links) and the sign-up
// pages they lead to: every check of POST /invites in Zulip's order, INVITATION_FAILED with partial
// success, role rules, channels and groups, expiry, the organization's invite permission, the daily
// limit, the invitation e-mail in the outbox (no SMTP in tests: e-mails are kept there), the
// invites_changed events, and the whole sign-up over HTTP down to logging in with the new account.
import { beforeAll, describe, expect, it } from 'vitest';
import { createParleyClient } from '@parley/client';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import type { Person } from '../../helpers/fixtures.ts';
import { createChannel } from '../../helpers/channels.ts';
import { createGroup, deactivateGroup, useSystemGroupIds } from '../../helpers/groups.ts';
import { eventsSince, markEvents } from '../../helpers/events.ts';
import { createUser, deactivateUser, uniqueEmail } from '../../helpers/people.ts';
import { waitFor } from '../../helpers/wait.ts';

const env = useTestServer();
const sys = useSystemGroupIds(env);
let publicChannel: { id: number; name: string };
let privateChannel: { id: number; name: string };
let hiddenChannel: { id: number; name: string };
let archivedChannel: { id: number; name: string };
let defaultChannel: { id: number; name: string };
let iagoGroup: number;
let openGroup: number;

beforeAll(async () => {
  publicChannel = await createChannel(env, 'iago', { name: 'invite public' }, ['iago', 'hamlet', 'cordelia']);
  privateChannel = await createChannel(env, 'iago', { name: 'invite private', invite_only: true }, ['iago', 'hamlet']);
  hiddenChannel = await createChannel(env, 'iago', { name: 'invite hidden', invite_only: true }, ['iago']);
  archivedChannel = await createChannel(env, 'iago', { name: 'invite archived' }, ['iago', 'hamlet']);
  const archived = await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: archivedChannel.id } } });
  if (archived.error) throw new Error(`setup: ${JSON.stringify(archived.error)}`);
  defaultChannel = await createChannel(env, 'iago', { name: 'invite default', is_default_stream: true }, ['iago']);
  // A group only its managers (administrators) may add members to, and one everybody may.
  iagoGroup = await createGroup(env, 'iago');
  openGroup = await createGroup(env, 'iago', { can_add_members_group: sys['role:members'] });
});

// ---------------------------------------------------------------------------------------------
// helpers

const db = () => env.running.deps.db;
const uid = (p: Person) => env.users[p].id;

type InviteBody = {
  invitee_emails: string;
  stream_ids: number[];
  group_ids?: number[];
  invite_as?: 100 | 200 | 300 | 400 | 600;
  invite_expires_in_minutes?: number | null;
  include_realm_default_subscriptions?: boolean;
  notify_referrer_on_join?: boolean;
  welcome_message_custom_text?: string;
};

const invite = (as: Person, body: InviteBody) => env.client(as).POST('/invites', { body });

async function inviteOk(as: Person, body: InviteBody): Promise<void> {
  const { error } = await invite(as, body);
  if (error) throw new Error(`send-invites failed: ${JSON.stringify(error)}`);
}

/** The newest invitation row of the address. */
const invitationOf = (email: string) => db().invitation.findFirstOrThrow({ where: { email }, orderBy: { id: 'desc' } });
/** The newest outbox e-mail to the address. */
const emailTo = (to: string) => db().emailOutbox.findFirstOrThrow({ where: { to }, orderBy: { id: 'desc' } });
const emailCount = (to: string) => db().emailOutbox.count({ where: { to } });

/** The path of the first sign-up link in an e-mail's text (links carry the organization's URL). */
function linkPath(text: string, kind: 'do_confirm' | 'join' = 'do_confirm'): string {
  const m = new RegExp(`https?://[^\\s/]+(/accounts/${kind}/[0-9a-f]{40})`).exec(text);
  if (!m) throw new Error(`no ${kind} link in: ${text}`);
  return m[1]!;
}

async function page(path: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; html: string }> {
  const res = await fetch(`${env.url}${path}`, { redirect: 'manual', ...init });
  return { status: res.status, headers: res.headers, html: await res.text() };
}

const postForm = (path: string, fields: Record<string, string>) =>
  page(path, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });

/** Invites `email` as `as` and returns the path of the link of the e-mail it was sent. */
async function invitedLink(as: Person, email: string, extra: Partial<InviteBody> = {}): Promise<string> {
  await inviteOk(as, { invitee_emails: email, stream_ids: [], ...extra });
  return linkPath((await emailTo(email)).text);
}

async function listInvites(as: Person) {
  const { data, error } = await env.client(as).GET('/invites');
  if (!data) throw new Error(`get-invites failed: ${JSON.stringify(error)}`);
  return data.invites;
}

/** The ids of the organization's active administrators and owners (ascending). */
async function adminIds(): Promise<number[]> {
  const rows = await db().user.findMany({ where: { realmId: env.realmId, isActive: true, role: { in: [100, 200] } }, orderBy: { id: 'asc' } });
  return rows.map((u) => u.id);
}

/** Waits until this process heard the invalidations of changes made behind the API's back (cached identities). */
const settle = () => env.running.deps.listener.barrier();

const sortedIds = (ids: number[]) => [...new Set(ids)].sort((a, b) => a - b);

async function setRealmGroupSetting(name: 'can_invite_users_group' | 'can_add_subscribers_group', groupId: number): Promise<void> {
  const { error } = await env.client('desdemona').PATCH('/realm', { body: { [name]: { new: groupId } } as never });
  if (error) throw new Error(`setup: PATCH /realm failed: ${JSON.stringify(error)}`);
}

/** Waits until the job of the e-mail has run (no SMTP in tests: the e-mail is then kept). */
async function waitKept(id: number): Promise<void> {
  await waitFor(async () => (await db().emailOutbox.findUniqueOrThrow({ where: { id } })).kept, { what: `the job of e-mail ${id}` });
}

// ---------------------------------------------------------------------------------------------
// POST /invites: checks, in Zulip's order

describe('POST /invites refusals', () => {
  it('guests and the organization invite permission come first', async () => {
    expectJsonError(await invite('polonius', { invitee_emails: uniqueEmail('g'), stream_ids: [] }), 400, 'Not allowed for guest users', 'BAD_REQUEST');
    await setRealmGroupSetting('can_invite_users_group', sys['role:administrators']);
    try {
      // Before the role, the addresses, the channels: nothing else is looked at.
      expectJsonError(await invite('hamlet', { invitee_emails: '', stream_ids: [999_999], invite_as: 100 }), 400, 'Insufficient permission', 'BAD_REQUEST');
      expectJsonError(await invite('shiva', { invitee_emails: uniqueEmail('p'), stream_ids: [] }), 400, 'Insufficient permission', 'BAD_REQUEST');
      await inviteOk('iago', { invitee_emails: uniqueEmail('admin-only'), stream_ids: [] });
    } finally {
      await setRealmGroupSetting('can_invite_users_group', sys['role:members']);
    }
    await inviteOk('hamlet', { invitee_emails: uniqueEmail('members-again'), stream_ids: [] });
  });

  it('roles: equal or stricter than the inviter', async () => {
    const owner = (as: Person) => invite(as, { invitee_emails: uniqueEmail('r'), stream_ids: [], invite_as: 100 });
    expectJsonError(await owner('iago'), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expectJsonError(await owner('hamlet'), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('r'), stream_ids: [], invite_as: 200 }), 400, 'Must be an organization administrator', 'BAD_REQUEST');
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('r'), stream_ids: [], invite_as: 300 }), 400, 'Must be an organization administrator', 'BAD_REQUEST');
    expectJsonError(await invite('shiva', { invitee_emails: uniqueEmail('r'), stream_ids: [], invite_as: 200 }), 400, 'Must be an organization administrator', 'BAD_REQUEST');
    // Allowed: the same role or a stricter one.
    for (const [as, role] of [['desdemona', 100], ['iago', 200], ['iago', 300], ['shiva', 300], ['hamlet', 400], ['hamlet', 600]] as const) {
      const email = uniqueEmail(`role${role}`);
      await inviteOk(as, { invitee_emails: email, stream_ids: [], invite_as: role });
      expect((await invitationOf(email)).invitedAs).toBe(role);
    }
    const bad = await env.raw('/invites', {
      method: 'POST',
      as: 'iago',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ invitee_emails: uniqueEmail('r'), stream_ids: '[]', invite_as: '500' }).toString(),
    });
    expectJsonError(bad, 400, 'Invalid invite_as: Value error, Not in the list of possible values', 'BAD_REQUEST');
  });

  it('addresses: at least one is required; stream_ids is required', async () => {
    expectJsonError(await invite('hamlet', { invitee_emails: '', stream_ids: [] }), 400, 'You must specify at least one email address.', 'BAD_REQUEST');
    expectJsonError(await invite('hamlet', { invitee_emails: ' , \n ', stream_ids: [] }), 400, 'You must specify at least one email address.', 'BAD_REQUEST');
    const missing = await env.raw('/invites', {
      method: 'POST',
      as: 'hamlet',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ invitee_emails: uniqueEmail('m') }).toString(),
    });
    expectJsonError(missing, 400, "Missing 'stream_ids' argument", 'REQUEST_VARIABLE_MISSING');
    // The role is checked before the addresses.
    expectJsonError(await invite('hamlet', { invitee_emails: '', stream_ids: [], invite_as: 200 }), 400, 'Must be an organization administrator');
  });

  it('channels: unknown, hidden and archived ones are invalid; others need permission to add subscribers unless default', async () => {
    for (const id of [999_999, hiddenChannel.id, archivedChannel.id]) {
      expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('c'), stream_ids: [publicChannel.id, id] }), 400, `Invalid channel ID ${id}. No invites were sent.`, 'BAD_REQUEST');
    }
    // The addresses are checked before the channels.
    expectJsonError(await invite('hamlet', { invitee_emails: '', stream_ids: [999_999] }), 400, 'You must specify at least one email address.');
    await setRealmGroupSetting('can_add_subscribers_group', sys['role:administrators']);
    try {
      expectJsonError(
        await invite('hamlet', { invitee_emails: uniqueEmail('c'), stream_ids: [publicChannel.id] }),
        400,
        'You do not have permission to subscribe other users to channels.',
        'BAD_REQUEST',
      );
      // Default channels, and no channel at all, are always allowed.
      await inviteOk('hamlet', { invitee_emails: uniqueEmail('c'), stream_ids: [defaultChannel.id] });
      await inviteOk('hamlet', { invitee_emails: uniqueEmail('c'), stream_ids: [], include_realm_default_subscriptions: true });
      await inviteOk('iago', { invitee_emails: uniqueEmail('c'), stream_ids: [publicChannel.id] });
    } finally {
      await setRealmGroupSetting('can_add_subscribers_group', sys['role:members']);
    }
    const email = uniqueEmail('c');
    await inviteOk('hamlet', { invitee_emails: email, stream_ids: [publicChannel.id, privateChannel.id, publicChannel.id] });
    expect((await invitationOf(email)).channelIds.sort()).toEqual([publicChannel.id, privateChannel.id].sort());
  });

  it('groups: as for adding members; channels are checked first', async () => {
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('g'), stream_ids: [], group_ids: [999_999] }), 400, 'Invalid user group', 'BAD_REQUEST');
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('g'), stream_ids: [], group_ids: [sys['role:members']] }), 400, 'Insufficient permission');
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('g'), stream_ids: [], group_ids: [iagoGroup] }), 400, 'Insufficient permission');
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('g'), stream_ids: [999_999], group_ids: [999_999] }), 400, 'Invalid channel ID 999999. No invites were sent.');
    const gone = await createGroup(env, 'iago', { can_add_members_group: sys['role:members'] });
    await deactivateGroup(env, gone);
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('g'), stream_ids: [], group_ids: [gone] }), 400, 'User group is deactivated.');
    const email = uniqueEmail('g');
    await inviteOk('hamlet', { invitee_emails: email, stream_ids: [], group_ids: [openGroup] });
    await inviteOk('iago', { invitee_emails: uniqueEmail('g'), stream_ids: [], group_ids: [iagoGroup, openGroup] });
    expect((await invitationOf(email)).groupIds).toEqual([openGroup]);
  });

  it('welcome text: administrators only, at most 8000 characters, checked after the groups', async () => {
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('w'), stream_ids: [], welcome_message_custom_text: 'Hi' }), 400, 'Must be an organization administrator', 'BAD_REQUEST');
    expectJsonError(await invite('hamlet', { invitee_emails: uniqueEmail('w'), stream_ids: [], group_ids: [iagoGroup], welcome_message_custom_text: 'Hi' }), 400, 'Insufficient permission');
    expectJsonError(
      await invite('iago', { invitee_emails: uniqueEmail('w'), stream_ids: [], welcome_message_custom_text: 'x'.repeat(8001) }),
      400,
      'welcome_message_custom_text is too long (limit: 8000 characters)',
    );
    const email = uniqueEmail('w');
    await inviteOk('iago', { invitee_emails: email, stream_ids: [], welcome_message_custom_text: 'Welcome to **the castle**' });
    expect((await invitationOf(email)).welcomeMessageCustomText).toBe('Welcome to **the castle**');
  });
});

// ---------------------------------------------------------------------------------------------
// POST /invites: per-address outcomes

describe('INVITATION_FAILED and partial success', () => {
  it('existing accounts are skipped and everyone else is invited', async () => {
    const fresh = uniqueEmail('partial');
    const res = await invite('hamlet', { invitee_emails: `${env.users.othello.email.toUpperCase()}, ${fresh}`, stream_ids: [] });
    expect(res.response.status).toBe(400);
    expect(res.error).toEqual({
      result: 'error',
      code: 'INVITATION_FAILED',
      msg: "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      errors: [[env.users.othello.email.toUpperCase(), 'Already has an account.', false]],
      sent_invitations: true,
      daily_limit_reached: false,
      license_limit_reached: false,
    });
    expect(await emailCount(fresh)).toBe(1);
    expect(await db().invitation.count({ where: { email: { equals: env.users.othello.email, mode: 'insensitive' } } })).toBe(0);
  });

  it('a deactivated account is reported as such; nobody invitable means nothing sent', async () => {
    const gone = await createUser(env, { label: 'inv-gone', fullName: 'Gone Person' });
    await deactivateUser(env, gone.id);
    const mark = await markEvents(env);
    const res = await invite('hamlet', { invitee_emails: `${gone.email}\n${env.users.cordelia.email}`, stream_ids: [] });
    expect(res.error).toEqual({
      result: 'error',
      code: 'INVITATION_FAILED',
      msg: "We weren't able to invite anyone.",
      errors: [
        [gone.email, 'Account has been deactivated.', true],
        [env.users.cordelia.email, 'Already has an account.', false],
      ],
      sent_invitations: false,
      daily_limit_reached: false,
      license_limit_reached: false,
    });
    expect(await eventsSince(env, mark)).toEqual([]);
  });

  it('a malformed address stops the whole request', async () => {
    const valid = uniqueEmail('valid');
    const res = await invite('hamlet', { invitee_emails: `${valid}, not-an-address, ${env.users.othello.email}`, stream_ids: [] });
    expect(res.error).toMatchObject({
      code: 'INVITATION_FAILED',
      msg: "Some emails did not validate, so we didn't send any invitations.",
      errors: [
        ['not-an-address', 'Invalid address.', false],
        [env.users.othello.email, 'Already has an account.', false],
      ],
      sent_invitations: false,
    });
    expect(await emailCount(valid)).toBe(0);
    expect(await db().invitation.count({ where: { email: valid } })).toBe(0);
  });

  it('header injection in a name or an address is refused and sends nothing', async () => {
    const victim = uniqueEmail('victim');
    const target = uniqueEmail('target');
    for (const raw of [`Evil\r\nBcc: ${victim} <${target}>`, `<${target}\r\nBcc: ${victim}>`, `${target}\rBcc: ${victim}`]) {
      const res = await invite('hamlet', { invitee_emails: raw, stream_ids: [] });
      expect(res.error, JSON.stringify(raw)).toMatchObject({ code: 'INVITATION_FAILED', msg: "Some emails did not validate, so we didn't send any invitations.", sent_invitations: false });
    }
    expect(await emailCount(target)).toBe(0);
    expect(await emailCount(victim)).toBe(0);
  });

  it('`Name <address>` forms, commas and newlines; duplicates merged case-insensitively', async () => {
    const a = uniqueEmail('named');
    const b = uniqueEmail('plain');
    await inviteOk('hamlet', { invitee_emails: `New Person <${a}>,${a.toUpperCase()}\n  ${b}  ,`, stream_ids: [] });
    expect(await emailCount(a)).toBe(1);
    expect(await emailCount(b)).toBe(1);
    expect(await db().invitation.count({ where: { email: { in: [a, b] } } })).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------
// The invitation, its e-mail and its event

describe('a successful invitation', () => {
  it('stores the invitation with a hashed key and e-mails the link, the organization and the inviter', async () => {
    const email = uniqueEmail('mail');
    const mark = await markEvents(env);
    await inviteOk('cordelia', { invitee_emails: email, stream_ids: [publicChannel.id], invite_as: 600 });
    const row = await invitationOf(email);
    expect(row).toMatchObject({ realmId: env.realmId, referredById: uid('cordelia'), invitedAs: 600, status: 0, channelIds: [publicChannel.id], notifyReferrerOnJoin: true, isMultiuse: false });
    const mail = await emailTo(email);
    const key = linkPath(mail.text).split('/').pop()!;
    // Only a keyed hash of the key is stored.
    expect(row.confirmationKeyHash).not.toContain(key);
    expect(JSON.stringify(row)).not.toContain(key);
    expect(row.confirmationKeyHash).toBe(env.running.deps.cipher.lookupHash(key));
    expect(mail.subject).toBe("Cordelia, Lear's daughter invited you to join Parley");
    expect(mail.replyTo).toBe(env.users.cordelia.email);
    expect(mail.text).toContain(`Cordelia, Lear's daughter (${env.users.cordelia.email}) has invited you to join Parley (http://parley.test) as a guest.`);
    expect(mail.text).toContain(`http://parley.test/accounts/do_confirm/${key}`);
    expect(mail.text).toMatch(/The link expires on .* GMT\./);
    expect(mail.html).toContain('Cordelia, Lear&#39;s daughter');
    expect(mail.html).toContain(`href="http://parley.test/accounts/do_confirm/${key}"`);
    // Administrators and the inviter learn that the list changed.
    const events = await eventsSince(env, mark);
    expect(events).toEqual([{ userIds: sortedIds([...(await adminIds()), uid('cordelia')]), payload: { type: 'invites_changed' } }]);
    // The e-mail's job ran after commit; with no SMTP server the e-mail is kept in the outbox.
    await waitKept(mail.id);
    expect((await emailTo(email)).sentAt).toBeNull();
  });

  it('expiry: ten days by default, as asked, or never', async () => {
    const [dflt, hour, never] = [uniqueEmail('exp-default'), uniqueEmail('exp-hour'), uniqueEmail('exp-never')];
    await inviteOk('hamlet', { invitee_emails: dflt, stream_ids: [] });
    await inviteOk('hamlet', { invitee_emails: hour, stream_ids: [], invite_expires_in_minutes: 60 });
    await inviteOk('hamlet', { invitee_emails: never, stream_ids: [], invite_expires_in_minutes: null });
    const listed = new Map((await listInvites('hamlet')).map((i) => [i.email, i]));
    expect(listed.get(dflt)!.expiry_date! - listed.get(dflt)!.invited).toBeGreaterThanOrEqual(14_400 * 60 - 1);
    expect(listed.get(dflt)!.expiry_date! - listed.get(dflt)!.invited).toBeLessThanOrEqual(14_400 * 60 + 1);
    expect(listed.get(hour)!.expiry_date! - listed.get(hour)!.invited).toBeGreaterThanOrEqual(3599);
    expect(listed.get(hour)!.expiry_date! - listed.get(hour)!.invited).toBeLessThanOrEqual(3601);
    expect(listed.get(never)!.expiry_date).toBeNull();
    expect((await emailTo(never)).text).toContain('The link does not expire.');
    // Zulip takes any integer: a negative one makes a link that has already expired; the largest one works.
    const past = await invitedLink('hamlet', uniqueEmail('exp-negative'), { invite_expires_in_minutes: -5 });
    expect((await page(past)).status).toBe(410);
    const far = uniqueEmail('exp-far');
    await inviteOk('hamlet', { invitee_emails: far, stream_ids: [], invite_expires_in_minutes: 2_147_483_647 });
    const farEntry = (await listInvites('hamlet')).find((i) => i.email === far)!;
    expect(farEntry.expiry_date! - farEntry.invited).toBeGreaterThan(2_147_483_647 * 60 - 2);
  });

  it('the daily limit: at most 100 invitation e-mails in 24 hours, resends included', async () => {
    await db().invitationSendLog.create({ data: { realmId: env.realmId, count: 97 - (await sentToday()) } });
    try {
      expect(await sentToday()).toBe(97);
      const [a, b, c, d] = [uniqueEmail('lim-a'), uniqueEmail('lim-b'), uniqueEmail('lim-c'), uniqueEmail('lim-d')];
      const limited = {
        result: 'error',
        code: 'INVITATION_FAILED',
        msg: 'To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.',
        errors: [],
        sent_invitations: false,
        daily_limit_reached: true,
        license_limit_reached: false,
      };
      expect((await invite('iago', { invitee_emails: [a, b, c, d].join(','), stream_ids: [] })).error).toEqual(limited);
      expect(await emailCount(a)).toBe(0);
      await inviteOk('iago', { invitee_emails: [a, b].join(','), stream_ids: [] });
      const id = (await invitationOf(a)).id;
      expect((await env.client('iago').POST('/invites/{invite_id}/resend', { params: { path: { invite_id: id } } })).error).toBeUndefined();
      expect(await sentToday()).toBe(100);
      expect((await env.client('iago').POST('/invites/{invite_id}/resend', { params: { path: { invite_id: id } } })).error).toEqual(limited);
      expect((await invite('iago', { invitee_emails: c, stream_ids: [] })).error).toEqual(limited);
      expect(await emailCount(a)).toBe(2);
    } finally {
      await db().invitationSendLog.deleteMany({ where: { realmId: env.realmId } });
    }
  });

  it('when invitations are not required, members need an account older than three days', async () => {
    await db().realm.update({ where: { id: env.realmId }, data: { inviteRequired: false } });
    await settle();
    try {
      const res = await invite('hamlet', { invitee_emails: uniqueEmail('new'), stream_ids: [] });
      expect(res.error).toEqual({
        result: 'error',
        code: 'INVITATION_FAILED',
        msg: 'Your account is too new to send invites for this organization. Ask an organization admin, or a more experienced user.',
        errors: [],
        sent_invitations: false,
        daily_limit_reached: false,
        license_limit_reached: false,
      });
      await inviteOk('iago', { invitee_emails: uniqueEmail('admin-new'), stream_ids: [] });
      await db().user.update({ where: { id: uid('hamlet') }, data: { dateJoined: new Date(Date.now() - 4 * 86_400_000) } });
      await settle();
      await inviteOk('hamlet', { invitee_emails: uniqueEmail('older'), stream_ids: [] });
    } finally {
      await db().realm.update({ where: { id: env.realmId }, data: { inviteRequired: true } });
      await settle();
    }
  });
});

async function sentToday(): Promise<number> {
  const rows = await db().invitationSendLog.findMany({ where: { realmId: env.realmId, sentAt: { gt: new Date(Date.now() - 86_400_000) } } });
  return rows.reduce((n, r) => n + r.count, 0);
}

// ---------------------------------------------------------------------------------------------
// Managing invitations: GET /invites, DELETE /invites/{id}, POST /invites/{id}/resend

describe('GET /invites', () => {
  it('everything pending for administrators, one\'s own for others, nothing for guests', async () => {
    const mine = uniqueEmail('list-hamlet');
    const theirs = uniqueEmail('list-othello');
    await inviteOk('hamlet', { invitee_emails: mine, stream_ids: [], notify_referrer_on_join: false });
    await inviteOk('othello', { invitee_emails: theirs, stream_ids: [] });
    const expired = uniqueEmail('list-expired');
    await inviteOk('hamlet', { invitee_emails: expired, stream_ids: [] });
    await db().invitation.updateMany({ where: { email: expired }, data: { expiresAt: new Date(Date.now() - 1000) } });

    const hamlets = await listInvites('hamlet');
    expect(hamlets.every((i) => i.invited_by_user_id === uid('hamlet'))).toBe(true);
    const entry = hamlets.find((i) => i.email === mine)!;
    expect(entry).toEqual({
      id: (await invitationOf(mine)).id,
      email: mine,
      invited_by_user_id: uid('hamlet'),
      invited: expect.any(Number),
      expiry_date: expect.any(Number),
      invited_as: 400,
      notify_referrer_on_join: false,
      is_multiuse: false,
    });
    expect(hamlets.some((i) => i.email === theirs || i.email === expired)).toBe(false);
    const all = await listInvites('iago');
    expect(all.some((i) => i.email === mine) && all.some((i) => i.email === theirs)).toBe(true);
    expect(all.some((i) => i.email === expired)).toBe(false);
    expectJsonError(await env.client('polonius').GET('/invites'), 400, 'Not allowed for guest users');
  });
});

describe('DELETE /invites/{invite_id}', () => {
  it('the inviter or an administrator; owners for owner invitations', async () => {
    const own = uniqueEmail('rev-own');
    await inviteOk('hamlet', { invitee_emails: own, stream_ids: [] });
    const ownId = (await invitationOf(own)).id;
    const link = linkPath((await emailTo(own)).text);
    const revoke = (as: Person, id: number) => env.client(as).DELETE('/invites/{invite_id}', { params: { path: { invite_id: id } } });

    expectJsonError(await revoke('othello', ownId), 400, 'Must be an organization administrator', 'BAD_REQUEST');
    expectJsonError(await revoke('polonius', ownId), 400, 'Not allowed for guest users');
    expectJsonError(await revoke('hamlet', 999_999), 400, 'No such invitation');
    const mark = await markEvents(env);
    expect((await revoke('hamlet', ownId)).error).toBeUndefined();
    expect(await eventsSince(env, mark)).toEqual([{ userIds: sortedIds([...(await adminIds()), uid('hamlet')]), payload: { type: 'invites_changed' } }]);
    expectJsonError(await revoke('hamlet', ownId), 400, 'No such invitation');
    expect((await listInvites('hamlet')).some((i) => i.id === ownId)).toBe(false);
    const shown = await page(link);
    expect(shown.status).toBe(410);
    expect(shown.html).toContain('Invitation revoked');

    const ownerInvite = uniqueEmail('rev-owner');
    await inviteOk('desdemona', { invitee_emails: ownerInvite, stream_ids: [], invite_as: 100 });
    const ownerId = (await invitationOf(ownerInvite)).id;
    expectJsonError(await revoke('iago', ownerId), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expect((await revoke('desdemona', ownerId)).error).toBeUndefined();
    const memberInvite = uniqueEmail('rev-admin');
    await inviteOk('othello', { invitee_emails: memberInvite, stream_ids: [] });
    expect((await revoke('iago', (await invitationOf(memberInvite)).id)).error).toBeUndefined();
    // A reusable link is not an e-mail invitation.
    const { data } = await env.client('iago').POST('/invites/multiuse', { body: {} });
    const linkId = (await db().invitation.findFirstOrThrow({ where: { isMultiuse: true }, orderBy: { id: 'desc' } })).id;
    expect(data?.invite_link).toBeDefined();
    expectJsonError(await revoke('iago', linkId), 400, 'No such invitation');
  });
});

describe('POST /invites/{invite_id}/resend', () => {
  it('a new link (the old one stops working), same expiry, same permissions', async () => {
    const email = uniqueEmail('resend');
    await inviteOk('hamlet', { invitee_emails: email, stream_ids: [], invite_expires_in_minutes: 90 });
    const before = await invitationOf(email);
    const oldLink = linkPath((await emailTo(email)).text);
    const resend = (as: Person, id: number) => env.client(as).POST('/invites/{invite_id}/resend', { params: { path: { invite_id: id } } });
    expectJsonError(await resend('othello', before.id), 400, 'Must be an organization administrator');
    expectJsonError(await resend('hamlet', 999_999), 400, 'No such invitation');
    const mark = await markEvents(env);
    expect((await resend('iago', before.id)).error).toBeUndefined();
    expect(await eventsSince(env, mark)).toEqual([]);
    expect(await emailCount(email)).toBe(2);
    const resent = await emailTo(email);
    // The e-mail names the inviter, not whoever resent it.
    expect(resent.subject).toBe('King Hamlet invited you to join Parley');
    const newLink = linkPath(resent.text);
    expect(newLink).not.toBe(oldLink);
    expect((await invitationOf(email)).expiresAt).toEqual(before.expiresAt);
    expect((await page(oldLink)).status).toBe(404);
    expect((await page(newLink)).status).toBe(200);
    // Expired, revoked or used invitations are not resent.
    await db().invitation.update({ where: { id: before.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expectJsonError(await resend('hamlet', before.id), 400, 'No such invitation');
    expect(await emailCount(email)).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------
// Reusable links: POST /invites/multiuse, signing up through one, DELETE /invites/multiuse/{id}

describe('POST /invites/multiuse', () => {
  it('create_multiuse_invite_group (administrators), then the rules of POST /invites', async () => {
    const create = (as: Person, body: Record<string, unknown> = {}) => env.client(as).POST('/invites/multiuse', { body: body as never });
    expectJsonError(await create('hamlet'), 400, 'Insufficient permission', 'BAD_REQUEST');
    expectJsonError(await create('polonius'), 400, 'Not allowed for guest users');
    expectJsonError(await create('iago', { invite_as: 100 }), 400, 'Must be an organization owner', 'UNAUTHORIZED_PRINCIPAL');
    expectJsonError(await create('iago', { stream_ids: [999_999] }), 400, 'Invalid channel ID 999999. No invites were sent.');
    expectJsonError(await create('iago', { group_ids: [sys['role:members']] }), 400, 'Insufficient permission');
    const mark = await markEvents(env);
    const { data, error } = await create('iago', { invite_as: 600, stream_ids: [publicChannel.id], invite_expires_in_minutes: null });
    expect(error).toBeUndefined();
    expect(data!.invite_link).toMatch(/^http:\/\/parley\.test\/accounts\/join\/[0-9a-f]{40}$/);
    expect(await eventsSince(env, mark)).toEqual([{ userIds: await adminIds(), payload: { type: 'invites_changed' } }]);
    const row = await db().invitation.findFirstOrThrow({ where: { isMultiuse: true }, orderBy: { id: 'desc' } });
    expect(row).toMatchObject({ email: null, invitedAs: 600, expiresAt: null, channelIds: [publicChannel.id] });
    expect(row.keyCiphertext).not.toContain(data!.invite_link.split('/').pop());
    const listed = (await listInvites('iago')).find((i) => i.id === row.id && i.is_multiuse);
    expect(listed).toEqual({ id: row.id, invited_by_user_id: uid('iago'), invited: expect.any(Number), expiry_date: null, invited_as: 600, link_url: data!.invite_link, is_multiuse: true });
    // Not listed for members (not theirs).
    expect((await listInvites('hamlet')).some((i) => i.is_multiuse)).toBe(false);
  });
});

describe('reusable invitation links', () => {
  it('sign-up through a link: the address is confirmed by e-mail, then the account gets the link\'s role and channels', async () => {
    const { data } = await env.client('iago').POST('/invites/multiuse', { body: { invite_as: 300, stream_ids: [privateChannel.id] } });
    const joinPath = new URL(data!.invite_link).pathname;
    const form = await page(joinPath);
    expect(form.status).toBe(200);
    expect(form.html).toContain('Iago invites you to join Parley');
    expect(form.html).toContain('as moderator');

    const malformed = await postForm(joinPath, { email: 'nobody' });
    expect(malformed.status).toBe(400);
    expect(malformed.html).toContain('Please enter a valid e-mail address.');
    const taken = await postForm(joinPath, { email: env.users.hamlet.email });
    expect(taken.status).toBe(409);
    expect(taken.html).toContain('Account already exists');

    const email = uniqueEmail('joiner');
    const sent = await postForm(joinPath, { email });
    expect(sent.status).toBe(200);
    expect(sent.html).toContain(`We sent a link to ${email}`);
    const confirmation = await emailTo(email);
    expect(confirmation.subject).toBe('Confirm your e-mail address for Parley');
    const signupPath = linkPath(confirmation.text);
    // Confirmations are not invitations of their own.
    expect((await listInvites('iago')).some((i) => i.email === email)).toBe(false);

    const done = await postForm(signupPath, { full_name: 'Joiner Person', password: 'joiner password 1' });
    expect(done.status).toBe(200);
    const user = await db().user.findFirstOrThrow({ where: { deliveryEmail: email } });
    expect(user.role).toBe(300);
    const subs = await db().subscription.findMany({ where: { userId: user.id, active: true } });
    expect(subs.map((s) => s.channelId)).toEqual([privateChannel.id]);
    // The link stays usable by others.
    expect((await page(joinPath)).status).toBe(200);
  });
});

describe('DELETE /invites/multiuse/{invite_id}', () => {
  it('revokes the link and the confirmations it sent', async () => {
    const { data } = await env.client('iago').POST('/invites/multiuse', { body: {} });
    const joinPath = new URL(data!.invite_link).pathname;
    const row = await db().invitation.findFirstOrThrow({ where: { isMultiuse: true }, orderBy: { id: 'desc' } });
    const email = uniqueEmail('revoked-joiner');
    await postForm(joinPath, { email });
    const confirmPath = linkPath((await emailTo(email)).text);

    const revoke = (as: Person, id: number) => env.client(as).DELETE('/invites/multiuse/{invite_id}', { params: { path: { invite_id: id } } });
    expectJsonError(await revoke('iago', 999_999), 400, 'No such invitation');
    expectJsonError(await revoke('hamlet', row.id), 400, 'Must be an organization administrator');
    const emailInvite = uniqueEmail('not-a-link');
    await inviteOk('iago', { invitee_emails: emailInvite, stream_ids: [] });
    expectJsonError(await revoke('iago', (await invitationOf(emailInvite)).id), 400, 'No such invitation');
    const mark = await markEvents(env);
    expect((await revoke('iago', row.id)).error).toBeUndefined();
    expect(await eventsSince(env, mark)).toEqual([{ userIds: await adminIds(), payload: { type: 'invites_changed' } }]);
    expectJsonError(await revoke('iago', row.id), 400, 'Invitation has already been revoked');
    expect((await listInvites('iago')).some((i) => i.id === row.id && i.is_multiuse)).toBe(false);
    for (const path of [joinPath, confirmPath]) {
      const shown = await page(path);
      expect(shown.status, path).toBe(410);
      expect(shown.html).toContain('Invitation revoked');
    }
    expect((await postForm(confirmPath, { full_name: 'Too Late', password: 'too late password' })).status).toBe(410);
    expect(await db().user.count({ where: { deliveryEmail: email } })).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Sign-up

describe('sign-up from an e-mail invitation', () => {
  it('the whole way: e-mail, form, account with role, channels and groups, events, login, zuliprc', async () => {
    const email = uniqueEmail('newbie');
    await inviteOk('iago', { invitee_emails: email, stream_ids: [publicChannel.id, privateChannel.id], group_ids: [iagoGroup], invite_as: 200 });
    const path = linkPath((await emailTo(email)).text);

    const form = await page(path);
    expect(form.status).toBe(200);
    expect(form.headers.get('content-type')).toMatch(/^text\/html/);
    expect(form.headers.get('referrer-policy')).toBe('no-referrer');
    expect(form.headers.get('cache-control')).toBe('no-store');
    expect(form.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(form.html).toContain('Iago invited you to join Parley (http://parley.test) as organization administrator.');
    expect(form.html).toContain(`value="${email}" readonly`);
    expect(form.html).toContain(`<form method="post" action="${path}">`);

    // The API's validation of names and passwords; the form comes back with the message.
    const shortName = await postForm(path, { full_name: 'A', password: 'a good password' });
    expect(shortName.status).toBe(400);
    expect(shortName.html).toContain('Name too short!');
    const badName = await postForm(path, { full_name: 'Eve <script>alert(1)</script>"', password: 'a good password' });
    expect(badName.status).toBe(400);
    expect(badName.html).toContain('Invalid characters in name!');
    expect(badName.html).toContain('value="Eve &lt;script&gt;alert(1)&lt;/script&gt;&quot;"');
    expect(badName.html).not.toContain('<script>');
    const weak = await postForm(path, { full_name: 'New Admin', password: 'aaaaaaaa' });
    expect(weak.status).toBe(400);
    expect(weak.html).toContain('The password is too weak.');
    expect(await db().user.count({ where: { deliveryEmail: email } })).toBe(0);

    const mark = await markEvents(env);
    const done = await postForm(path, { full_name: '  New Admin  ', password: 'correct horse battery' });
    expect(done.status).toBe(200);
    expect(done.html).toContain('Your account is ready');
    expect(done.html).toContain('/api/v1/fetch_api_key');
    expect(done.html).toContain('Download zuliprc');

    const user = await db().user.findFirstOrThrow({ where: { deliveryEmail: email } });
    expect(user).toMatchObject({ fullName: 'New Admin', role: 200, isActive: true });
    const invitation = await invitationOf(email);
    expect(invitation).toMatchObject({ status: 1, createdUserId: user.id });

    // Events: the new user for everyone, the system group, the subscriptions, the group, the list change.
    const events = await eventsSince(env, mark);
    const kinds = events.map((e) => `${e.payload.type}/${e.payload.op ?? ''}`);
    expect(kinds).toContain('realm_user/add');
    expect(events.find((e) => e.payload.type === 'realm_user')!.payload.person).toMatchObject({ user_id: user.id, full_name: 'New Admin', role: 200, email });
    expect(events.find((e) => e.payload.type === 'user_group' && e.payload.group_id === sys['role:administrators'])!.payload).toEqual({
      type: 'user_group',
      op: 'add_members',
      group_id: sys['role:administrators'],
      user_ids: [user.id],
    });
    expect(events.find((e) => e.payload.type === 'user_group' && e.payload.group_id === iagoGroup)).toBeDefined();
    const own = events.find((e) => e.payload.type === 'subscription' && e.payload.op === 'add')!;
    expect(own.userIds).toEqual([user.id]);
    expect(own.payload.subscriptions.map((s: { stream_id: number }) => s.stream_id).sort()).toEqual([publicChannel.id, privateChannel.id].sort());
    const peerAdds = events.filter((e) => e.payload.type === 'subscription' && e.payload.op === 'peer_add');
    expect(peerAdds.map((e) => e.payload.stream_ids[0]).sort()).toEqual([publicChannel.id, privateChannel.id].sort());
    expect(peerAdds.find((e) => e.payload.stream_ids[0] === privateChannel.id)!.userIds).toContain(uid('hamlet'));
    expect(peerAdds.find((e) => e.payload.stream_ids[0] === privateChannel.id)!.userIds).not.toContain(uid('othello'));
    expect(events.filter((e) => e.payload.type === 'invites_changed')).toEqual([{ userIds: await adminIds(), payload: { type: 'invites_changed' } }]);

    // The inviter asked to be told (the default): a direct message from the notification bot.
    const told = events.find((e) => e.payload.type === 'message' && e.userIds.includes(uid('iago')))!.payload.message;
    // The newcomer as a silent mention (as Zulip words it), never by address.
    expect(told).toMatchObject({ type: 'private', sender_full_name: 'Notification Bot' });
    expect(told.content).toMatch(new RegExp(`^<p><span class="user-mention silent" data-user-id="${user.id}">New Admin</span> joined Parley through your invitation\\.</p>$`));
    expect(told.content).not.toContain(email);
    expect(await emailCount(env.users.iago.email)).toBe(0);

    // The new user logs in with the password and uses the API.
    const login = await env.raw('/fetch_api_key', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ username: email, password: 'correct horse battery' }).toString(),
    });
    expect(login.status).toBe(200);
    expect(login.body).toMatchObject({ email, user_id: user.id });
    const client = createParleyClient({ site: env.url, email, apiKey: login.body.api_key });
    const me = await client.GET('/users/me');
    expect(me.data).toMatchObject({ user_id: user.id, role: 200, is_admin: true });
    const listed = await env.client('hamlet').GET('/users', { params: { query: {} } });
    expect(listed.data!.members.find((m) => m.user_id === user.id)).toMatchObject({ full_name: 'New Admin', role: 200 });
    const subs = await client.GET('/users/me/subscriptions', { params: { query: {} } });
    expect(subs.data!.subscriptions.map((s) => s.stream_id).sort()).toEqual([publicChannel.id, privateChannel.id].sort());
    const members = await env.client('iago').GET('/user_groups/{user_group_id}/members', { params: { path: { user_group_id: iagoGroup }, query: {} } });
    expect(members.data!.members).toContain(user.id);

    // zuliprc for the password.
    const rc = await postForm('/accounts/zuliprc', { realm_id: String(env.realmId), email, password: 'correct horse battery' });
    expect(rc.status).toBe(200);
    expect(rc.headers.get('content-disposition')).toBe('attachment; filename="zuliprc"');
    expect(rc.html).toBe(`[api]\nemail=${email}\nkey=${login.body.api_key}\nsite=http://parley.test\n`);
    const wrong = await postForm('/accounts/zuliprc', { realm_id: String(env.realmId), email, password: 'not the password' });
    expect(wrong.status).toBe(401);
    expect(wrong.html).not.toContain(login.body.api_key);

    // The link is used now.
    for (const res of [await page(path), await postForm(path, { full_name: 'Second Try', password: 'second password' })]) {
      expect(res.status).toBe(410);
      expect(res.html).toContain('Invitation already used');
    }
    expect((await listInvites('iago')).some((i) => i.email === email)).toBe(false);
  });

  it('default channels only when asked; the inviter not told when they said so', async () => {
    const [plain, withDefaults] = [uniqueEmail('no-defaults'), uniqueEmail('defaults')];
    const plainPath = await invitedLink('hamlet', plain, { stream_ids: [publicChannel.id], notify_referrer_on_join: false });
    const defaultsPath = await invitedLink('hamlet', withDefaults, { stream_ids: [publicChannel.id], include_realm_default_subscriptions: true, notify_referrer_on_join: false });
    /** Direct messages hamlet received from the notification bot. */
    const notices = async () => {
      const fromBot = await db().message.findMany({ where: { sender: { systemBot: 'notification-bot' } }, select: { id: true } });
      return db().userMessage.count({ where: { userId: uid('hamlet'), messageId: { in: fromBot.map((m) => m.id) } } });
    };
    const toldBefore = await notices();
    expect((await postForm(plainPath, { full_name: 'Plain Person', password: 'plain password' })).status).toBe(200);
    expect((await postForm(defaultsPath, { full_name: 'Default Person', password: 'default password' })).status).toBe(200);
    const channelsOf = async (email: string) => {
      const user = await db().user.findFirstOrThrow({ where: { deliveryEmail: email } });
      return (await db().subscription.findMany({ where: { userId: user.id, active: true } })).map((s) => s.channelId).sort((a, b) => a - b);
    };
    expect(await channelsOf(plain)).toEqual([publicChannel.id]);
    const defaults = (await db().channel.findMany({ where: { realmId: env.realmId, isDefault: true, isArchived: false } })).map((c) => c.id);
    expect(defaults).toContain(defaultChannel.id);
    expect(await channelsOf(withDefaults)).toEqual(sortedIds([publicChannel.id, ...defaults]));
    expect(await notices()).toBe(toldBefore);
    // Told when they did not say so (the default).
    const toldPath = await invitedLink('hamlet', uniqueEmail('told'), { stream_ids: [publicChannel.id] });
    expect((await postForm(toldPath, { full_name: 'Told Person', password: 'told password here' })).status).toBe(200);
    expect(await notices()).toBe(toldBefore + 1);
  });

  it('a guest joins with the guest role; an archived or deleted channel is skipped', async () => {
    const channel = await createChannel(env, 'iago', { name: 'invite soon archived' }, ['iago']);
    const email = uniqueEmail('guest');
    const path = await invitedLink('iago', email, { stream_ids: [channel.id, publicChannel.id], invite_as: 600 });
    await env.client('iago').DELETE('/streams/{stream_id}', { params: { path: { stream_id: channel.id } } });
    expect((await postForm(path, { full_name: 'Guest Person', password: 'guest password' })).status).toBe(200);
    const user = await db().user.findFirstOrThrow({ where: { deliveryEmail: email } });
    expect(user.role).toBe(600);
    expect((await db().subscription.findMany({ where: { userId: user.id, active: true } })).map((s) => s.channelId)).toEqual([publicChannel.id]);
  });

  it('the address\'s other invitations are revoked by the sign-up; an account made meanwhile blocks it', async () => {
    const email = uniqueEmail('twice');
    const first = await invitedLink('hamlet', email);
    const second = await invitedLink('othello', email);
    expect((await postForm(second, { full_name: 'Twice Invited', password: 'twice password' })).status).toBe(200);
    const stale = await page(first);
    expect(stale.status).toBe(410);
    expect(stale.html).toContain('Invitation revoked');

    // The same address in other letter case is revoked too; an address that `_` would match as a
    // LIKE pattern is another person's, and their invitation stays valid.
    const underscored = uniqueEmail('tw_ce');
    const upper = await invitedLink('hamlet', underscored.toUpperCase());
    const lookalike = await invitedLink('hamlet', underscored.replace('tw_ce', 'twice'));
    expect((await postForm(await invitedLink('othello', underscored), { full_name: 'Under Score', password: 'under score password' })).status).toBe(200);
    expect((await page(upper)).status).toBe(410);
    expect((await page(lookalike)).status).toBe(200);

    const raced = uniqueEmail('raced');
    const path = await invitedLink('hamlet', raced);
    const { error } = await env.client('iago').POST('/users', { body: { email: raced, password: 'some password', full_name: 'Made By Admin' } });
    expect(error).toBeUndefined();
    const blocked = await postForm(path, { full_name: 'Too Late', password: 'too late password' });
    expect(blocked.status).toBe(409);
    expect(blocked.html).toContain('Account already exists');
  });

  it('expired, revoked (inviter deactivated) and unknown links have pages of their own', async () => {
    const email = uniqueEmail('expired');
    const path = await invitedLink('hamlet', email);
    await db().invitation.updateMany({ where: { email }, data: { expiresAt: new Date(Date.now() - 1000) } });
    for (const res of [await page(path), await postForm(path, { full_name: 'Late Person', password: 'late password' })]) {
      expect(res.status).toBe(410);
      expect(res.html).toContain('Invitation expired');
    }

    const inviter = await createUser(env, { label: 'leaving', fullName: 'Leaving Person' });
    const leavingKey = await env.running.deps.db.apiKey.findUniqueOrThrow({ where: { userId: inviter.id } });
    const client = createParleyClient({ site: env.url, email: inviter.email, apiKey: env.running.deps.cipher.decrypt(leavingKey.ciphertext) });
    const orphan = uniqueEmail('orphan');
    expect((await client.POST('/invites', { body: { invitee_emails: orphan, stream_ids: [] } })).error).toBeUndefined();
    const orphanPath = linkPath((await emailTo(orphan)).text);
    await deactivateUser(env, inviter.id);
    expect((await page(orphanPath)).status).toBe(410);
    expect((await listInvites('iago')).some((i) => i.email === orphan)).toBe(false);

    for (const bad of ['/accounts/do_confirm/nothex', `/accounts/do_confirm/${'0'.repeat(40)}`, `/accounts/join/${'1'.repeat(40)}`]) {
      const res = await page(bad);
      expect(res.status, bad).toBe(404);
      expect(res.html).toContain('Invalid link');
    }
    // A single-use key does not open a reusable link's page, nor the reverse.
    const single = await invitedLink('hamlet', uniqueEmail('kind'));
    expect((await page(single.replace('do_confirm', 'join'))).status).toBe(404);
  });

  it('the pages escape what users typed (names of inviters and organizations)', async () => {
    await db().realm.update({ where: { id: env.realmId }, data: { name: 'Parley <b>&</b>' } });
    await settle();
    try {
      const email = uniqueEmail('escape');
      const path = await invitedLink('cordelia', email);
      const shown = await page(path);
      expect(shown.html).toContain('Cordelia, Lear&#39;s daughter invited you to join Parley &lt;b&gt;&amp;&lt;/b&gt;');
      expect(shown.html).not.toContain('<b>&</b>');
      const mail = await emailTo(email);
      expect(mail.html).toContain('Parley &lt;b&gt;&amp;&lt;/b&gt;');
    } finally {
      await db().realm.update({ where: { id: env.realmId }, data: { name: 'Parley' } });
      await settle();
    }
  });

  it('two sign-ups with one link at once create one account', async () => {
    const email = uniqueEmail('race');
    const path = await invitedLink('hamlet', email);
    const results = await Promise.all([postForm(path, { full_name: 'Racer One', password: 'racer password 1' }), postForm(path, { full_name: 'Racer Two', password: 'racer password 2' })]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 410]);
    expect(await db().user.count({ where: { deliveryEmail: email } })).toBe(1);
  });
});

describe('private channels the new user could not see before', () => {
  it('get a stream creation event for the new user before the subscription', async () => {
    const email = uniqueEmail('private');
    const path = await invitedLink('iago', email, { stream_ids: [privateChannel.id] });
    const mark = await markEvents(env);
    expect((await postForm(path, { full_name: 'Private Person', password: 'private password' })).status).toBe(200);
    const user = await db().user.findFirstOrThrow({ where: { deliveryEmail: email } });
    const mine = (await eventsSince(env, mark)).filter((e) => e.userIds.length === 1 && e.userIds[0] === user.id && e.payload.type !== 'invites_changed');
    expect(mine.map((e) => `${e.payload.type}/${e.payload.op}`)).toEqual(['stream/create', 'subscription/add']);
    expect(mine[0]!.payload.streams.map((s: { stream_id: number }) => s.stream_id)).toEqual([privateChannel.id]);
    // Subscribers of the channel (hamlet) see the newcomer; members who cannot see the channel do not.
    const peer = (await eventsSince(env, mark)).find((e) => e.payload.type === 'subscription' && e.payload.op === 'peer_add')!;
    expect(peer.payload).toEqual({ type: 'subscription', op: 'peer_add', stream_ids: [privateChannel.id], user_ids: [user.id] });
    expect(peer.userIds).toContain(uid('hamlet'));
    expect(peer.userIds).not.toContain(uid('cordelia'));
    expect(peer.userIds).not.toContain(user.id);
  });
});
