// What the benches' seeds share (bench/lib/seed.ts, bench/lib/messages-seed.ts and others): the first
// organization as the server's first start makes it, members written with SQL the way insertUser
// writes them, public channels made by the subscribe action; and, from bench-pg.ts (which loads none
// of the server), node-postgres and an embedded PostgreSQL with an empty `parley_bench` database.
import type { PgQueryable } from './bench-pg.ts';
import type { createDeps } from '../../apps/server/src/server.ts';
import { bootstrapIfEmpty } from '../../apps/server/src/bootstrap.ts';
import { doSubscribe } from '../../apps/server/src/actions/subscriptions.ts';
import { CachedTableWriteRecord } from '../../apps/server/src/data/cached-tables.ts';
import { findFirstRealm } from '../../apps/server/src/data/realms.repo.ts';
import { findUserById } from '../../apps/server/src/data/users.repo.ts';
import { generateApiKey, type createApiKeyCipher } from '../../apps/server/src/security/secrets.ts';

export { pg, startBenchPostgres, type PgPool, type PgQueryable } from './bench-pg.ts';

type Deps = Awaited<ReturnType<typeof createDeps>>;

/** The first organization and its owner, made by the server's own first-start bootstrap (migrations applied by createDeps). */
export async function bootstrapBenchOrganization(deps: Deps, sql: PgQueryable) {
  const boot = await bootstrapIfEmpty(deps, { PARLEY_OWNER_PASSWORD: 'bench owner password' });
  const realm = (await findFirstRealm(deps.db))!;
  const ownerId = (await sql.query<{ id: number }>(`SELECT id FROM "user" WHERE realm_id = $1 AND role = 100`, [realm.id])).rows[0]!.id;
  const ownerRow = (await findUserById(deps.db, realm.id, ownerId))!;
  return { realm, ownerRow, ownerApiKey: boot.apiKey! };
}

const FIRST = ['Amelia', 'Bashir', 'Chiara', 'Dmitri', 'Esther', 'Farid', 'Greta', 'Hiroshi', 'Ines', 'Jonas', 'Kavya', 'Luca', 'Mariam', 'Nikolai', 'Olu', 'Priya', 'Quentin', 'Rosa', 'Sven', 'Tanvi', 'Umar', 'Vera', 'Wen', 'Ximena', 'Yusuf', 'Zofia'];
const LAST = ['Okafor', 'Lindqvist', 'Moreau', 'Nakamura', 'Castillo', 'Haddad', 'Kowalski', 'Andersen', 'Rossi', 'Fernandes', 'Oyelaran', 'Petrov', 'Schneider', 'Tanaka', 'Walsh', 'Zhou', 'Abebe', 'Brennan', 'Costa', 'Duarte'];
const ZONES = ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'UTC', 'America/Sao_Paulo', 'Africa/Lagos', 'Asia/Tokyo', ''];

/** The i-th bulk member's name, e-mail (prefixed with `prefix`) and time zone. */
export function benchPerson(i: number, prefix = '') {
  const first = FIRST[i % FIRST.length]!;
  const last = LAST[Math.floor(i / FIRST.length) % LAST.length]!;
  return { email: `${prefix}${first}.${last}.${i}@example.org`.toLowerCase(), fullName: `${first} ${last}`, timezone: ZONES[i % ZONES.length]! };
}

/**
 * Inserts `count` members (role 400, benchPerson 0…count−1) into `realmId` the way insertUser would (`user`,
 * `user_settings` with the column defaults, direct membership of role:fullmembers) and gives the first
 * `withKeys` an API key made with the server's cipher. Returns the members with keys, in id order.
 */
export async function insertBulkMembers(
  sql: PgQueryable,
  cipher: ReturnType<typeof createApiKeyCipher>,
  realmId: number,
  fullMembersGroupId: number,
  count: number,
  withKeys: number,
  prefix = '',
): Promise<Array<{ id: number; email: string; apiKey: string }>> {
  const people = Array.from({ length: count }, (_, i) => benchPerson(i, prefix));
  const { rows } = await sql.query<{ id: number }>(
    `INSERT INTO "user" (realm_id, email, delivery_email, full_name, role, timezone)
     SELECT $1, e, e, n, 400, tz FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS t(e, n, tz, o) ORDER BY o
     RETURNING id`,
    [realmId, people.map((p) => p.email), people.map((p) => p.fullName), people.map((p) => p.timezone)],
  );
  const ids = rows.map((r) => r.id).sort((a, b) => a - b);
  await sql.query('INSERT INTO user_settings (user_id) SELECT unnest($1::int[])', [ids]);
  await sql.query('INSERT INTO user_group_member (group_id, user_id) SELECT $1, unnest($2::int[])', [fullMembersGroupId, ids]);
  const keyed = ids.slice(0, withKeys).map((id, i) => ({ id, email: people[i]!.email, apiKey: generateApiKey() }));
  await sql.query('INSERT INTO api_key (user_id, lookup_hash, ciphertext) SELECT * FROM unnest($1::int[], $2::text[], $3::text[])', [
    keyed.map((p) => p.id),
    keyed.map((p) => cipher.lookupHash(p.apiKey)),
    keyed.map((p) => cipher.encrypt(p.apiKey)),
  ]);
  return keyed;
}

/** Public channels `names`, created by `owner` through the server's subscribe action (the owner subscribed, no notices). */
export async function createPublicChannels(deps: Deps, realm: Parameters<typeof doSubscribe>[1], owner: Parameters<typeof doSubscribe>[2], names: string[]): Promise<void> {
  await doSubscribe(deps, realm, owner, {
    channels: names.map((name) => ({ name })),
    authorizationErrorsFatal: true,
    inviteOnly: false,
    isWebPublic: false,
    isDefault: false,
    messageRetentionDays: 'realm_default',
    groupSettings: {},
    sendNewSubscriptionMessages: false,
  }, new CachedTableWriteRecord());
}
