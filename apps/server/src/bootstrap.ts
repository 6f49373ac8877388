// First start against an empty database: create the organization and its owner, print how to reach
// them, and write a zuliprc so that real Zulip clients work at once. Several processes starting
// together are serialised by an advisory lock; only one creates the organization.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AppDeps } from './deps.ts';
import { inTransaction } from './data/transactions.ts';
import { countRealms } from './data/realms.repo.ts';
import { takeBootstrapLock } from './data/bootstrap.repo.ts';
import { createRealmInTransaction } from './actions/realm.ts';
import { insertUser, prepareNewUser } from './actions/users.ts';
import { insertChannel } from './actions/channels.ts';
import { subscribeToDefaultChannels } from './actions/subscriptions.ts';

/** The channel a new organization starts with (default for new users; the owner is subscribed). */
export const FIRST_CHANNEL_NAME = 'general';
import { Role } from './access/roles.ts';

export interface BootstrapResult {
  created: boolean;
  realmId?: number;
  ownerEmail?: string;
  ownerPassword?: string;
  apiKey?: string;
}

export async function bootstrapIfEmpty(deps: AppDeps, env: NodeJS.ProcessEnv = process.env): Promise<BootstrapResult> {
  if ((await countRealms(deps.db)) > 0) return { created: false }; // the usual start: nothing to hash
  const password = env.PARLEY_OWNER_PASSWORD || randomBytes(12).toString('base64url');
  const owner = await prepareNewUser({ email: deps.config.ownerEmail, fullName: 'Organization Owner', password, role: Role.OWNER });
  return inTransaction(deps.db, async (tx) => {
    await takeBootstrapLock(tx);
    if ((await countRealms(tx)) > 0) return { created: false };
    const realm = await createRealmInTransaction(tx, { name: deps.config.realmName, url: deps.config.publicUrl });
    const { user, apiKey } = await insertUser(tx, deps, realm, owner);
    // Zulip's first channel: a default channel everyone joins, so that a fresh server can carry a message.
    const { events } = await insertChannel(tx, realm, user, {
      name: FIRST_CHANNEL_NAME,
      description: 'Everyone is added to this channel by default. Welcome! :octopus:',
      inviteOnly: false,
      isWebPublic: false,
      historyPublicToSubscribers: undefined,
      messageRetentionDays: null,
      topicsPolicy: 'inherit',
      folderId: null,
      isDefault: true,
      groupSettings: {},
    });
    await deps.events.enqueue(tx, realm.id, [...events, ...(await subscribeToDefaultChannels(tx, realm, user))]);
    return { created: true, realmId: realm.id, ownerEmail: owner.email, ownerPassword: password, apiKey };
  });
}

export function writeZuliprc(dataDir: string, email: string, apiKey: string, site: string): string {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'zuliprc');
  writeFileSync(file, `[api]\nemail=${email}\nkey=${apiKey}\nsite=${site}\n`, { mode: 0o600 });
  return file;
}
