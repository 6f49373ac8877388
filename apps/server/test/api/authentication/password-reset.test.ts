// The password-reset link (GET/POST /accounts/password/reset/<key>, http/password-reset.ts; mailed to
// imported accounts): a link is bound to the account's state, as Zulip's (Django's) reset tokens are.
// It dies when the account is deactivated (for good: reactivating the account does not revive it), when
// the password changes by other means, and when the address changes.
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { passwordResetKey, PASSWORD_RESET_PATH } from '../../../src/actions/password-reset.ts';
import { expectJsonError, useTestServer } from '../../helpers/test-server.ts';
import { TEST_PASSWORD } from '../../helpers/fixtures.ts';
import { createAccount, deactivateUser, uniqueEmail } from '../../helpers/people.ts';

const env = useTestServer();
const EXPIRED = 'The password reset link has expired or has already been used.';
const NEW_PASSWORD = 'a freshly chosen passphrase 73';

/** A reset link of the account as it is now (as the import's e-mail would carry). */
async function linkFor(userId: number): Promise<string> {
  const row = await env.running.deps.db.user.findUniqueOrThrow({ where: { id: userId } });
  return `${env.url}${PASSWORD_RESET_PATH}/${passwordResetKey(env.running.deps, env.realmId, row)}`;
}

const open = async (link: string) => {
  const res = await fetch(link);
  return { status: res.status, text: await res.text() };
};
const submit = async (link: string, password = NEW_PASSWORD) => {
  const res = await fetch(link, { method: 'POST', body: new URLSearchParams({ new_password: password }) });
  return { status: res.status, text: await res.text() };
};
const login = (username: string, password: string) => env.raw('/fetch_api_key', { method: 'POST', body: new URLSearchParams({ username, password }) });

/** The link no longer works: neither its form nor setting a password; the old password still logs in. */
async function expectDead(link: string, email: string) {
  const form = await open(link);
  expect(form.status).toBe(404);
  expect(form.text).toContain(EXPIRED);
  const set = await submit(link);
  expect(set.status).toBe(404);
  expect(set.text).toContain(EXPIRED);
  expectJsonError(await login(email, NEW_PASSWORD), 401, 'Your username or password is incorrect', 'AUTHENTICATION_FAILED');
}

describe('Password-reset links (/accounts/password/reset/<key>)', () => {
  it('a link made before a deactivation does not work after the reactivation; one made after does', async () => {
    const account = await createAccount(env, { label: 'reset-deactivated', fullName: 'Reset Deactivated' });
    const link = await linkFor(account.id);
    expect((await open(link)).status).toBe(200);

    await deactivateUser(env, account.id);
    expect((await open(link)).status).toBe(404);
    const { response } = await env.client('iago').POST('/users/{user_id}/reactivate', { params: { path: { user_id: account.id } } });
    expect(response.status).toBe(200);

    await expectDead(link, account.email);
    expect((await login(account.email, TEST_PASSWORD)).status).toBe(200);

    const fresh = await linkFor(account.id);
    expect((await submit(fresh)).status).toBe(200);
    expect((await login(account.email, NEW_PASSWORD)).status).toBe(200);
  });

  it('a link stops working when the password is changed through PATCH /settings', async () => {
    const account = await createAccount(env, { label: 'reset-password', fullName: 'Reset Password' });
    const link = await linkFor(account.id);
    const other = 'another passphrase, chosen 58';
    const res = await env.raw('/settings', { method: 'PATCH', body: new URLSearchParams({ old_password: TEST_PASSWORD, new_password: other }), headers: { Authorization: account.auth } });
    expect(res.status).toBe(200);
    await expectDead(link, account.email);
    expect((await login(account.email, other)).status).toBe(200);
  });

  describe('when an owner changes the address (PATCH /users/{user_id} new_email)', () => {
    beforeAll(async () => {
      await env.running.deps.db.user.update({ where: { id: env.users.desdemona.id }, data: { canChangeUserEmails: true } });
      await env.running.deps.listener.barrier(); // written behind Parley's back: let cached identities follow
    });
    afterAll(async () => {
      await env.running.deps.db.user.update({ where: { id: env.users.desdemona.id }, data: { canChangeUserEmails: false } });
      await env.running.deps.listener.barrier();
    });

    it('a link made before stops working', async () => {
      const account = await createAccount(env, { label: 'reset-address', fullName: 'Reset Address' });
      const link = await linkFor(account.id);
      const newEmail = uniqueEmail('reset-renamed');
      const { response } = await env.client('desdemona').PATCH('/users/{user_id}', { params: { path: { user_id: account.id } }, body: { new_email: newEmail } });
      expect(response.status).toBe(200);
      await expectDead(link, newEmail);
      expect((await login(newEmail, TEST_PASSWORD)).status).toBe(200);
    });
  });
});
