// End to end in a real browser (headless Chromium through playwright-core), with e-mail through a real
// SMTP server on loopback: an invitation is read from the SMTP server, its link opened, the sign-up form
// filled; an e-mail change is confirmed from the link of its e-mail; the API docs render.
// Needs Debian's chromium (`apt-get install -y chromium`; PARLEY_CHROMIUM overrides the path). Without
// it these tests are skipped, and the run says so.
import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { startSmtp, type TestSmtpServer } from '../helpers/smtp.ts';
import { createChannel } from '../helpers/channels.ts';
import { createGroup, directMembers } from '../helpers/groups.ts';
import { createUser, uniqueEmail } from '../helpers/people.ts';
import { basicAuth, fetchApiKey } from '../helpers/auth.ts';
import { TEST_PASSWORD } from '../helpers/fixtures.ts';

const CHROMIUM = process.env.PARLEY_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) {
  console.warn(`browser tests skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set PARLEY_CHROMIUM)`);
}

let env: TestServer;
let smtp: TestSmtpServer;
let browser: Browser;

beforeAll(async () => {
  if (!haveChromium) return;
  env = await startTestServer();
  smtp = await startSmtp();
  env.running.deps.config.smtpUrl = smtp.url('smtp');
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
  });
});
afterAll(async () => {
  if (!haveChromium) return;
  await browser?.close();
  if (env) env.running.deps.config.smtpUrl = null;
  await smtp?.close();
  await env?.close();
});

/** The link of an e-mail (its text part), pointed at the test server (e-mails use the organization's URL). */
function linkIn(text: string, path: RegExp): string {
  const match = new RegExp(`https?://[^\\s/]+(${path.source})`).exec(text);
  expect(match, text).not.toBeNull();
  return `${env.url}${match![1]}`;
}

async function withPage<T>(run: (page: Page) => Promise<T>): Promise<T> {
  const context = await browser.newContext({ acceptDownloads: true });
  try {
    return await run(await context.newPage());
  } finally {
    await context.close();
  }
}

describe.skipIf(!haveChromium)('in headless Chromium', () => {
  it('an invitation e-mail leads to a sign-up page; the new account has the invited role, channels and groups', async () => {
    const invitee = uniqueEmail('browser-invitee');
    const channel = await createChannel(env, 'iago');
    const group = await createGroup(env, 'iago');
    const invited = await env.client('iago').POST('/invites', {
      body: { invitee_emails: invitee, stream_ids: [channel.id], group_ids: [group], invite_as: 300, notify_referrer_on_join: true, include_realm_default_subscriptions: true },
    });
    expect(invited.error).toBeUndefined();

    const mail = await smtp.waitForEmailTo(invitee);
    expect(mail.subject).toBe('Iago invited you to join Parley');
    const link = linkIn(mail.text ?? '', /\/accounts\/do_confirm\/[0-9a-f]{40}/);
    expect(mail.html).toContain(new URL(link).pathname);

    const fullName = 'Browser Invitee';
    await withPage(async (page) => {
      await page.goto(link);
      expect(await page.locator('h1').textContent()).toBe('Join Parley');
      expect(await page.locator('#email').inputValue()).toBe(invitee);
      expect(await page.locator('#email').getAttribute('readonly')).not.toBeNull();

      // A weak password: the form again, with the reason and the name as typed; no account yet.
      await page.fill('#full_name', fullName);
      await page.fill('#password', 'password');
      await page.click('button[type=submit]');
      await page.waitForSelector('.error');
      expect(await page.locator('.error').textContent()).toMatch(/password is too weak/i);
      expect(await page.locator('#full_name').inputValue()).toBe(fullName);
      expect(await env.running.deps.db.user.count({ where: { deliveryEmail: invitee } })).toBe(0);

      await page.fill('#password', TEST_PASSWORD);
      await page.click('button[type=submit]');
      await page.waitForSelector('text=Your account is ready');
      expect(await page.content()).toContain(invitee);

      // The page offers a zuliprc with the API key, for the password.
      await page.fill('#password', TEST_PASSWORD);
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('button[type=submit]')]);
      expect(download.suggestedFilename()).toBe('zuliprc');
      const zuliprc = readFileSync((await download.path())!, 'utf8');
      expect(zuliprc).toContain(`email=${invitee}`);
      expect(zuliprc).toMatch(/^key=[A-Za-z0-9]{32}$/m);

      // The link is used now: a clear page, no second account.
      await page.goto(link);
      expect(await page.locator('h1').textContent()).toBe('Invitation already used');
    });

    // The new user fetches an API key with the password and is listed with the invited role.
    const key = await fetchApiKey(env, invitee);
    const auth = basicAuth(invitee, key);
    const me = await env.raw('/users/me', { headers: { Authorization: auth } });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ full_name: fullName, role: 300, is_active: true });
    const { data: listing } = await env.client('iago').GET('/users', { params: { query: { client_gravatar: false } } });
    expect(listing!.members.find((m) => m.user_id === me.body.user_id)).toMatchObject({ full_name: fullName, role: 300, delivery_email: invitee });

    // Subscribed to the invited channel and the organization's default ones; a member of the group.
    const subscriptions = await env.raw('/users/me/subscriptions', { headers: { Authorization: auth } });
    const names = (subscriptions.body.subscriptions as Array<{ stream_id: number; name: string }>).map((s) => s.stream_id);
    expect(names).toContain(channel.id);
    const registered = await env.raw('/register', { method: 'POST', as: 'iago', body: new URLSearchParams({ fetch_event_types: '["default_streams"]' }) });
    const defaults = registered.body.realm_default_streams as number[];
    expect(defaults.length).toBeGreaterThan(0);
    for (const id of defaults) expect(names).toContain(id);
    expect(await directMembers(env, group)).toContain(me.body.user_id);

    // The referrer asked to be told: a direct message from the notification bot.
    const narrow = encodeURIComponent(JSON.stringify([{ operator: 'is', operand: 'dm' }]));
    const history = await env.raw(`/messages?anchor=newest&num_before=10&num_after=0&apply_markdown=false&narrow=${narrow}`, { as: 'iago' });
    const told = (history.body.messages as Array<{ sender_full_name: string; content: string }>).find((m) => m.content.includes(`|${me.body.user_id}**`));
    expect(told).toMatchObject({ sender_full_name: 'Notification Bot', content: `@_**${fullName}|${me.body.user_id}** joined Parley through your invitation.` });
  });

  it('an e-mail change is confirmed from the link in the e-mail; the old address is told', async () => {
    const account = await createUser(env, { label: 'browser-mail-change', fullName: 'Mail Changer' });
    const auth = basicAuth(account.email, await fetchApiKey(env, account.email));
    const newEmail = uniqueEmail('browser-renamed');
    const patched = await env.raw(`/settings?email=${encodeURIComponent(newEmail)}`, { method: 'PATCH', headers: { Authorization: auth } });
    expect(patched.status).toBe(200);

    const mail = await smtp.waitForEmailTo(newEmail);
    const link = linkIn(mail.text ?? '', /\/accounts\/confirm_new_email\/[a-z0-9]{24}/);
    // Nothing changes until the link is followed.
    expect((await env.running.deps.db.user.findUniqueOrThrow({ where: { id: account.id } })).deliveryEmail).toBe(account.email);
    await withPage(async (page) => {
      // The page confirms by itself in a browser (a form POST its script submits; link scanners that
      // only GET change nothing).
      await page.goto(link);
      await page.waitForURL((url) => !url.pathname.includes('/confirm_new_email/'));
      await page.waitForLoadState('load');
      expect(await page.locator('h1').textContent()).toMatch(/changed|confirmed/i);
      expect(await page.content()).toContain(newEmail);
    });
    const me = await env.raw('/users/me', { headers: { Authorization: basicAuth(newEmail, await fetchApiKey(env, newEmail)) } });
    expect(me.body.delivery_email).toBe(newEmail);
    const notice = await smtp.waitForEmailTo(account.email, { subject: /was changed/ });
    expect(notice.text).toContain(newEmail);
  });

  it('the API docs render: Redoc shows the operations', async () => {
    await withPage(async (page) => {
      const failed: string[] = [];
      page.on('requestfailed', (r) => {
        if (['document', 'script', 'stylesheet', 'fetch', 'xhr'].includes(r.resourceType())) failed.push(r.url());
      });
      // Reading the docs tells nobody else: no script, fetch or beacon leaves for another origin (Redoc's
      // client telemetry is off: redocly.yaml `telemetry: off`, which build-docs writes into the page).
      const elsewhere: string[] = [];
      page.on('request', (r) => {
        if (['script', 'stylesheet', 'fetch', 'xhr', 'ping', 'websocket', 'eventsource'].includes(r.resourceType()) && new URL(r.url()).origin !== new URL(env.url).origin) elsewhere.push(r.url());
      });
      expect(await (await fetch(`${env.url}/api/docs`)).text()).toContain('"disableTelemetry":true');
      await page.goto(`${env.url}/api/docs`);
      await page.getByRole('heading', { name: /Parley API/ }).first().waitFor({ timeout: 30_000 });
      // The sidebar lists the operations by tag; opening a tag shows its operations.
      for (const [tag, summary] of [['users', 'Deactivate a user'], ['scheduled-messages', 'Create a scheduled message'], ['message-flags', 'Mark all messages as read'], ['messages', 'Edit or move a message']] as const) {
        await page.getByText(tag, { exact: true }).first().click();
        await page.getByText(summary, { exact: true }).first().waitFor({ state: 'visible', timeout: 30_000 });
      }
      expect(failed).toEqual([]); // the page's code comes from Parley, not a CDN (logos and icons may not load)
      expect(elsewhere).toEqual([]);
    });
  });
});
