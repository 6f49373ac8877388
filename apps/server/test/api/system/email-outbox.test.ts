// The mailer (src/mail): enqueueEmail stores an e-mail and its job in the caller's transaction; the
// 'send-email' job keeps it in the outbox when no SMTP server is configured (pnpm manage outbox,
// GET /devtools/outbox) or delivers it through SMTP (STARTTLS when offered, implicit TLS with
// smtps://, authentication from the URL), recording failures and retrying without ever sending an
// e-mail twice. SMTP is a real server on loopback (smtp-server); messages are parsed with mailparser.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { useTestServer } from '../../helpers/test-server.ts';
import { startSmtp } from '../../helpers/smtp.ts';
import { TEST_SECRET } from '../../helpers/fixtures.ts';
import { uniqueEmail } from '../../helpers/people.ts';
import { inTransaction } from '../../../src/data/transactions.ts';
import { enqueueEmail, type OutgoingEmail } from '../../../src/mail/outbox.ts';
import { deliverOutboxEmail } from '../../../src/mail/jobs.ts';
import { smtpOptions } from '../../../src/mail/transport.ts';
import { loadConfig } from '../../../src/config.ts';
import { waitFor as waitForProbe } from '../../helpers/wait.ts';

/** Waits for work the job queue does after commit (e-mails are slow to retry: 40 s by default). */
const waitUntil = <T,>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 40_000) => waitForProbe(probe, { what, timeoutMs });

const here = path.dirname(fileURLToPath(import.meta.url));
const env = useTestServer();

afterAll(async () => {
  env.running.deps.config.smtpUrl = null;
});

// ---------------------------------------------------------------------------------------------
// helpers

const db = () => env.running.deps.db;
const deps = () => env.running.deps;

const message = (to: string, extra: Partial<OutgoingEmail> = {}): OutgoingEmail => ({
  to,
  subject: `Hello ${to}`,
  text: `Plain text for ${to}\nhttp://parley.test/accounts/do_confirm/${'a'.repeat(40)}`,
  html: `<p>HTML for <b>${to}</b></p>`,
  ...extra,
});

/** enqueueEmail in a transaction of its own (as an action would); returns the e-mail's id. */
const enqueue = (email: OutgoingEmail) => inTransaction(db(), (tx) => enqueueEmail(tx, deps(), email));

const outboxRow = (id: number) => db().emailOutbox.findUniqueOrThrow({ where: { id } });

/** The state of the pg-boss job of an e-mail (created, retry, active, completed, failed…). */
async function jobStates(emailId: number): Promise<string[]> {
  const rows = await db().$queryRawUnsafe<Array<{ state: string }>>(`SELECT state::text AS state FROM pgboss.job WHERE name = 'send-email' AND (data->>'emailId')::int = $1`, emailId);
  return rows.map((r) => r.state);
}

// ---------------------------------------------------------------------------------------------
// Configuration

describe('configuration', () => {
  it('PARLEY_SMTP_URL and PARLEY_EMAIL_FROM', () => {
    expect(loadConfig({})).toMatchObject({ smtpUrl: null, emailFrom: 'Parley <noreply@127.0.0.1>' });
    expect(loadConfig({ PARLEY_URL: 'https://chat.example.com' }).emailFrom).toBe('Parley <noreply@chat.example.com>');
    expect(loadConfig({ PARLEY_EMAIL_FROM: 'Team <team@example.com>' }).emailFrom).toBe('Team <team@example.com>');
    expect(loadConfig({ PARLEY_SMTP_URL: 'smtps://u:p@mail.example.com' }).smtpUrl).toBe('smtps://u:p@mail.example.com');
    expect(() => loadConfig({ PARLEY_SMTP_URL: 'http://mail.example.com' })).toThrow(/smtp:\/\/ or smtps:\/\//);
    expect(() => loadConfig({ PARLEY_SMTP_URL: 'mail.example.com:25' })).toThrow(/PARLEY_SMTP_URL/);
    expect(() => loadConfig({ PARLEY_EMAIL_FROM: 'a@b.c\r\nBcc: x@y.z' })).toThrow(/PARLEY_EMAIL_FROM/);
  });

  it('the transport options: ports, TLS, credentials decoded, unknown options refused', () => {
    expect(smtpOptions('smtp://mail.example.com')).toMatchObject({ host: 'mail.example.com', port: 587, secure: false, requireTLS: false, tls: { rejectUnauthorized: true } });
    expect(smtpOptions('smtp://mail.example.com')).not.toHaveProperty('auth');
    expect(smtpOptions('smtps://u%40x:p%20w@mail.example.com')).toMatchObject({ port: 465, secure: true, auth: { user: 'u@x', pass: 'p w' } });
    expect(smtpOptions('smtp://h:2525/?requireTLS=true&tls.rejectUnauthorized=false')).toMatchObject({ port: 2525, requireTLS: true, tls: { rejectUnauthorized: false } });
    expect(() => smtpOptions('smtp://h/?pool=true')).toThrow(/unknown option pool/);
  });
});

// ---------------------------------------------------------------------------------------------
// No SMTP server: the outbox

describe('without SMTP (the outbox)', () => {
  it('enqueueEmail stores the e-mail and its job in the transaction; the job keeps it', async () => {
    const to = uniqueEmail('kept');
    const id = await enqueue(message(to, { replyTo: 'iago@parley.test' }));
    expect(await outboxRow(id)).toMatchObject({ to, subject: `Hello ${to}`, replyTo: 'iago@parley.test', sentAt: null });
    await waitUntil('the e-mail to be kept', async () => (await outboxRow(id)).kept);
    expect(await outboxRow(id)).toMatchObject({ kept: true, sentAt: null, attempts: 0, lastError: null, messageId: null });
    await waitUntil('its job to complete', async () => (await jobStates(id)).includes('completed'));
  });

  it('a transaction that rolls back leaves neither e-mail nor job', async () => {
    let id = 0;
    await expect(
      inTransaction(db(), async (tx) => {
        id = await enqueueEmail(tx, deps(), message(uniqueEmail('rolled-back')));
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(id).toBeGreaterThan(0);
    expect(await db().emailOutbox.findUnique({ where: { id } })).toBeNull();
    expect(await jobStates(id)).toEqual([]);
  });

  it('refuses header injection: one plain address per field, a one-line subject', async () => {
    const before = await db().emailOutbox.count();
    for (const bad of [
      message('a@parley.test\r\nBcc: victim@example.com'),
      message('Name <a@parley.test>'),
      message('a@parley.test, b@parley.test'),
      message('a@parley.test', { subject: 'Hi\r\nBcc: victim@example.com' }),
      message('a@parley.test', { replyTo: 'r@parley.test\nBcc: victim@example.com' }),
    ]) {
      await expect(enqueue(bad)).rejects.toThrow(/enqueueEmail/);
    }
    expect(await db().emailOutbox.count()).toBe(before);
  });

  it('GET /devtools/outbox shows the e-mails, escaped, only to this machine and only without SMTP', async () => {
    const to = uniqueEmail('devtools');
    const id = await enqueue(message(to, { subject: 'Look <script>alert(1)</script>', html: '<p onclick="x()">Hi &amp; bye</p>' }));
    await waitUntil('the e-mail to be kept', async () => (await outboxRow(id)).kept);
    const res = await fetch(`${env.url}/devtools/outbox`);
    const html = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(html).toContain(to);
    expect(html).toContain('Look &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>');
    // The HTML part is shown in a sandboxed frame, as escaped srcdoc.
    expect(html).toContain('sandbox="" title="E-mail');
    expect(html).toContain('srcdoc="&lt;p onclick=&quot;x()&quot;&gt;Hi &amp;amp; bye&lt;/p&gt;"');
    expect(html).toContain('kept (no SMTP configured)');
    const proxied = await fetch(`${env.url}/devtools/outbox`, { headers: { 'X-Forwarded-For': '203.0.113.9' } });
    expect(proxied.status).toBe(404);
    expect(await proxied.text()).not.toContain(to);
    deps().config.smtpUrl = 'smtp://127.0.0.1:1';
    try {
      const configured = await fetch(`${env.url}/devtools/outbox`);
      expect(configured.status).toBe(404);
      expect(await configured.text()).not.toContain(to);
    } finally {
      deps().config.smtpUrl = null;
    }
  });

  it('pnpm manage outbox lists the outbox and shows one e-mail', async () => {
    const to = uniqueEmail('manage');
    const id = await enqueue(message(to));
    await waitUntil('the e-mail to be kept', async () => (await outboxRow(id)).kept);
    const run = (...args: string[]) =>
      promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(here, '../../../src/manage.ts'), ...args], {
        cwd: path.join(here, '../../..'),
        env: { ...process.env, DATABASE_URL: env.databaseUrl, PARLEY_SECRET_KEY: TEST_SECRET, PARLEY_LOG_LEVEL: 'silent' },
        timeout: 60_000,
      });
    const list = await run('outbox');
    const line = list.stdout.split('\n').find((l) => l.startsWith(`${id}\t`));
    expect(line).toBeDefined();
    expect(line!.split('\t')).toEqual([String(id), expect.any(String), to, 'kept (no SMTP configured)', `Hello ${to}`]);
    const one = await run('outbox', '--id', String(id));
    expect(one.stdout).toContain(`To: ${to}\nSubject: Hello ${to}\n`);
    expect(one.stdout).toContain(`Plain text for ${to}\nhttp://parley.test/accounts/do_confirm/${'a'.repeat(40)}`);
  }, 90_000);
});

// ---------------------------------------------------------------------------------------------
// SMTP delivery

describe('with SMTP', () => {
  it('STARTTLS and authentication from the URL; the message as stored, sent once', async () => {
    const smtp = await startSmtp();
    deps().config.smtpUrl = smtp.url('smtp');
    try {
      const to = uniqueEmail('starttls');
      const id = await enqueue(message(to, { replyTo: 'iago@parley.test', subject: 'Grüße, welcome' }));
      const row = await waitUntil('delivery', async () => {
        const r = await outboxRow(id);
        return r.sentAt ? r : null;
      });
      expect(row).toMatchObject({ kept: false, attempts: 1, lastError: null });
      const mine = smtp.received.filter((r) => r.mail.to && JSON.stringify(r.mail.to).includes(to));
      expect(mine).toHaveLength(1);
      const { session, mail } = mine[0]!;
      expect(session.secure).toBe(true);
      expect(session.user).toBe('parley');
      expect(session.envelope.mailFrom && session.envelope.mailFrom.address).toBe('noreply@127.0.0.1');
      expect(session.envelope.rcptTo.map((r) => r.address)).toEqual([to]);
      expect(mail.from?.value).toEqual([{ address: 'noreply@127.0.0.1', name: 'Parley' }]);
      expect(mail.subject).toBe('Grüße, welcome');
      expect(mail.text?.trim()).toBe(`Plain text for ${to}\nhttp://parley.test/accounts/do_confirm/${'a'.repeat(40)}`);
      expect(mail.html).toBe(`<p>HTML for <b>${to}</b></p>`);
      expect(mail.replyTo?.text).toBe('iago@parley.test');
      expect(mail.messageId).toBe(row.messageId);
      expect(row.messageId).toMatch(new RegExp(`^<parley-${id}-\\d+@127\\.0\\.0\\.1>$`));

      // Running the job again (a retry, a second worker) sends nothing more.
      expect(await deliverOutboxEmail(deps(), id)).toBe('already-done');
      expect(smtp.received.filter((r) => JSON.stringify(r.mail.to).includes(to))).toHaveLength(1);
    } finally {
      deps().config.smtpUrl = null;
      await smtp.close();
    }
  });

  it('smtps:// speaks TLS from the first byte', async () => {
    const smtp = await startSmtp({ secure: true });
    deps().config.smtpUrl = smtp.url('smtps');
    try {
      const to = uniqueEmail('smtps');
      const id = await enqueue(message(to));
      await waitUntil('delivery', async () => (await outboxRow(id)).sentAt);
      const mine = smtp.received.filter((r) => JSON.stringify(r.mail.to).includes(to));
      expect(mine).toHaveLength(1);
      expect(mine[0]!.session.secure).toBe(true);
    } finally {
      deps().config.smtpUrl = null;
      await smtp.close();
    }
  });

  it('a temporary refusal is recorded and retried with backoff; the e-mail arrives once', async () => {
    const to = uniqueEmail('retry');
    const smtp = await startSmtp({ refuseFirst: (rcpt) => rcpt === to });
    deps().config.smtpUrl = smtp.url('smtp');
    try {
      const id = await enqueue(message(to));
      const failed = await waitUntil('the first failure', async () => {
        const r = await outboxRow(id);
        return r.lastError ? r : null;
      });
      expect(failed.sentAt).toBeNull();
      expect(failed.attempts).toBe(1);
      expect(failed.lastError).toMatch(/451/);
      const sent = await waitUntil('the retry', async () => {
        const r = await outboxRow(id);
        return r.sentAt ? r : null;
      });
      expect(sent.attempts).toBe(2);
      await waitUntil('the job to complete', async () => (await jobStates(id)).includes('completed'));
      expect(smtp.received.filter((r) => JSON.stringify(r.mail.to).includes(to))).toHaveLength(1);
    } finally {
      deps().config.smtpUrl = null;
      await smtp.close();
    }
  });

  it('refused credentials: the error is kept, and the e-mail goes out once the configuration is fixed', async () => {
    const smtp = await startSmtp();
    const to = uniqueEmail('bad-login');
    deps().config.smtpUrl = `smtp://parley:wrong@127.0.0.1:${smtp.port}/?tls.rejectUnauthorized=false`;
    try {
      const id = await enqueue(message(to));
      const failed = await waitUntil('the failure', async () => {
        const r = await outboxRow(id);
        return r.lastError ? r : null;
      });
      expect(failed.lastError).toMatch(/Invalid username or password|auth/i);
      expect(failed.sentAt).toBeNull();
      deps().config.smtpUrl = smtp.url('smtp');
      const sent = await waitUntil('delivery after the fix', async () => {
        const r = await outboxRow(id);
        return r.sentAt ? r : null;
      });
      expect(sent.attempts).toBeGreaterThanOrEqual(2);
      expect(smtp.received.filter((r) => JSON.stringify(r.mail.to).includes(to))).toHaveLength(1);
    } finally {
      deps().config.smtpUrl = null;
      await smtp.close();
    }
  });

  it('deliveries of one e-mail at once (job and retries racing) send it once', async () => {
    const smtp = await startSmtp();
    deps().config.smtpUrl = smtp.url('smtp');
    try {
      const to = uniqueEmail('race');
      const id = await enqueue(message(to));
      const outcomes = await Promise.all([deliverOutboxEmail(deps(), id), deliverOutboxEmail(deps(), id), deliverOutboxEmail(deps(), id)]);
      await waitUntil('the job to complete', async () => (await jobStates(id)).includes('completed'));
      // The job may have been first; either way exactly one delivery happened.
      expect(outcomes.filter((o) => o === 'sent').length).toBeLessThanOrEqual(1);
      expect(outcomes.every((o) => o === 'sent' || o === 'already-done')).toBe(true);
      expect(smtp.received.filter((r) => JSON.stringify(r.mail.to).includes(to))).toHaveLength(1);
      expect((await outboxRow(id)).attempts).toBe(1);
    } finally {
      deps().config.smtpUrl = null;
      await smtp.close();
    }
  });

  it('an e-mail kept before SMTP was configured stays kept; an unknown e-mail is nothing to do', async () => {
    const to = uniqueEmail('stays-kept');
    const id = await enqueue(message(to));
    await waitUntil('the e-mail to be kept', async () => (await outboxRow(id)).kept);
    const smtp = await startSmtp();
    deps().config.smtpUrl = smtp.url('smtp');
    try {
      expect(await deliverOutboxEmail(deps(), id)).toBe('already-done');
      expect(await deliverOutboxEmail(deps(), 2_000_000_000)).toBe('missing');
      expect(smtp.received).toHaveLength(0);
    } finally {
      deps().config.smtpUrl = null;
      await smtp.close();
    }
  });
});

describe('invitations through SMTP', () => {
  it('an invitation e-mail arrives over SMTP with its link', async () => {
    const smtp = await startSmtp();
    deps().config.smtpUrl = smtp.url('smtp');
    try {
      const to = uniqueEmail('smtp-invitee');
      const { error } = await env.client('iago').POST('/invites', { body: { invitee_emails: to, stream_ids: [] } });
      expect(error).toBeUndefined();
      const received = await waitUntil('the invitation', async () => smtp.received.find((r) => JSON.stringify(r.mail.to).includes(to)));
      expect(received.mail.subject).toBe('Iago invited you to join Parley');
      expect(received.mail.replyTo?.text).toBe(env.users.iago.email);
      const link = /http:\/\/parley\.test(\/accounts\/do_confirm\/[0-9a-f]{40})/.exec(received.mail.text ?? '')?.[1];
      expect(link).toBeDefined();
      expect(received.mail.html).toContain(`href="http://parley.test${link}"`);
      const form = await fetch(`${env.url}${link}`);
      expect(form.status).toBe(200);
      expect(await form.text()).toContain(`value="${to}" readonly`);
    } finally {
      deps().config.smtpUrl = null;
      await smtp.close();
    }
  });
});
