// The benchmark database: an embedded PostgreSQL (ephemeral, fsync off) holding two organizations,
//   big:   the owner (created by the server's own first-start bootstrap) + 5,000 members  = 5,001 users
//   small: an owner + 50 members                                                       =    51 users
// and, in each, SUBSCRIBE_CHANNELS public channels: one made by Parley's own subscribe action, the
// others cloned from it with SQL (see makeChannels).
//
// The few users that requests come from are created through the server's insert path
// (prepareNewUser/insertUser: settings, system-group membership, encrypted API key, events). The bulk
// of the members is written with SQL matching the Prisma schema and doing what insertUser does: a
// `user` row, a `user_settings` row (column defaults), direct membership of role:fullmembers (the
// system group of role 400) and, for the members that send requests, an `api_key` row made with the
// server's cipher (createApiKeyCipher over the same PARLEY_SECRET_KEY the server process gets).
import { randomBytes } from 'node:crypto';
import type { EmbeddedDatabase } from '../../packages/db/src/embedded.ts';
import { loadConfig } from '../../apps/server/src/config.ts';
import { createDeps } from '../../apps/server/src/server.ts';
import { insertUser, prepareNewUser } from '../../apps/server/src/actions/users.ts';
import { createRealmInTransaction } from '../../apps/server/src/actions/realm.ts';
import { inTransaction } from '../../apps/server/src/data/transactions.ts';
import { findUserById } from '../../apps/server/src/data/users.repo.ts';
import { systemGroupIds } from '../../apps/server/src/data/system-groups.repo.ts';
import { createApiKeyCipher } from '../../apps/server/src/security/secrets.ts';
import { bootstrapBenchOrganization, createPublicChannels, insertBulkMembers, pg, startBenchPostgres } from './bench-db.ts';

export { pg, type PgPool, type PgQueryable } from './bench-db.ts';

/** Members of each organization that send the subscribe requests (they have API keys). */
export const ACTORS = 50;
/** Public channels per organization that the actors subscribe to (ACTORS × this = distinct pairs per run). */
export const SUBSCRIBE_CHANNELS = 400;

export interface Person {
  id: number;
  email: string;
  apiKey: string;
  realmId: number;
  role: number;
}

export interface OrgFixture {
  id: number;
  url: string;
  users: number;
  owner: Person;
  /** Members with API keys that send subscribe requests. */
  actors: Person[];
  /** SUBSCRIBE_CHANNELS public channels, ids and names in the same order. */
  channelIds: number[];
  channelNames: string[];
}

export interface Fixture {
  databaseUrl: string;
  secretKey: string;
  big: OrgFixture;
  small: OrgFixture;
  /** A member of the big organization (GET /users/me, GET /users). */
  member: Person;
  /** Public channel of the big organization whose description PATCH changes (by the owner). */
  patchChannelId: number;
}

export async function createBenchDatabase(dir: string, log: (line: string) => void): Promise<{ database: EmbeddedDatabase; fixture: Fixture; pgDataDir: string }> {
  const { database, databaseUrl, pgDataDir } = await startBenchPostgres(dir);
  const secretKey = randomBytes(32).toString('hex');
  const bigUrl = 'http://parley.bench';
  const config = { ...loadConfig({}), secretKey, dataDir: dir, publicUrl: bigUrl, ownerEmail: 'owner@parley.bench', validateResponses: false, rateLimit: null };

  // Migrations and the first organization, exactly as the server's first start makes them.
  const deps = await createDeps(config, databaseUrl, { poolSize: 10 });
  const sql = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  try {
    const { realm: bigRealm, ownerRow: bigOwnerRow, ownerApiKey } = await bootstrapBenchOrganization(deps, sql);
    const bigOwner: Person = { id: bigOwnerRow.id, email: bigOwnerRow.deliveryEmail, apiKey: ownerApiKey, realmId: bigRealm.id, role: 100 };

    const realUser = async (realm: typeof bigRealm, email: string, fullName: string, role: number): Promise<Person> => {
      const prepared = await prepareNewUser({ email, fullName, password: null, role });
      const { user, apiKey } = await inTransaction(deps.db, (tx) => insertUser(tx, deps, realm, prepared));
      return { id: user.id, email, apiKey, realmId: realm.id, role };
    };
    const member = await realUser(bigRealm, 'member@parley.bench', 'Bench Member', 400);

    const smallRealm = await inTransaction(deps.db, (tx) => createRealmInTransaction(tx, { name: 'Small', url: 'http://small.parley.bench' }));
    const smallOwner = await realUser(smallRealm, 'owner@small.parley.bench', 'Small Owner', 100);

    const cipher = createApiKeyCipher(Buffer.from(secretKey, 'hex'));
    log('inserting 4,999 + 50 members …');
    const bulkMembers = async (realmId: number, count: number, prefix: string): Promise<Person[]> =>
      (await insertBulkMembers(sql, cipher, realmId, (await systemGroupIds(deps.db, realmId))['role:fullmembers'], count, ACTORS, prefix)).map((p) => ({ ...p, realmId, role: 400 }));
    const bigActors = await bulkMembers(bigRealm.id, 4999, '');
    const smallActors = await bulkMembers(smallRealm.id, 50, 'small.');

    // Channels: one created by each owner through the subscribe action (the owner subscribed, its
    // administrators an anonymous group of the creator, the rest system groups), then cloned with SQL
    // column by column, each clone with its own copy of the anonymous group and of the owner's
    // subscription, as the action would have made them (the action costs ~40 ms a channel here).
    const makeChannels = async (realm: typeof bigRealm, ownerId: number, templateName: string, names: string[]) => {
      const owner = (await findUserById(deps.db, realm.id, ownerId))!;
      await createPublicChannels(deps, realm, owner, [templateName]);
      const template = (await sql.query<{ id: number; can_administer_channel_group_id: number }>('SELECT id, can_administer_channel_group_id FROM channel WHERE realm_id = $1 AND name = $2', [realm.id, templateName])).rows[0]!;
      const columns = async (table: string, except: string[]) =>
        (await sql.query<{ c: string }>(`SELECT column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, [table])).rows
          .map((r) => r.c)
          .filter((c) => !except.includes(c))
          .map((c) => `"${c}"`)
          .join(', ');
      const groupCols = await columns('user_group', ['id']);
      const groups = (await sql.query<{ id: number }>(`INSERT INTO user_group (${groupCols}) SELECT ${groupCols} FROM user_group, generate_series(1, $2) WHERE id = $1 RETURNING id`, [template.can_administer_channel_group_id, names.length])).rows.map((r) => r.id);
      await sql.query('INSERT INTO user_group_member (group_id, user_id) SELECT g, m.user_id FROM user_group_member m, unnest($2::int[]) AS g WHERE m.group_id = $1', [template.can_administer_channel_group_id, groups]);
      await sql.query('INSERT INTO user_group_subgroup (supergroup_id, subgroup_id) SELECT g, s.subgroup_id FROM user_group_subgroup s, unnest($2::int[]) AS g WHERE s.supergroup_id = $1', [template.can_administer_channel_group_id, groups]);
      const channelCols = await columns('channel', ['id', 'name', 'can_administer_channel_group_id']);
      const rows = (await sql.query<{ id: number; name: string }>(
        `INSERT INTO channel (name, can_administer_channel_group_id, ${channelCols})
         SELECT x.n, x.g, ${channelCols.split(', ').map((c) => `t.${c}`).join(', ')} FROM channel t, unnest($2::text[], $3::int[]) AS x(n, g) WHERE t.id = $1
         RETURNING id, name`,
        [template.id, names, groups],
      )).rows;
      const byName = new Map(rows.map((r) => [r.name, r.id]));
      const ids = names.map((n) => byName.get(n)!);
      const subCols = await columns('subscription', ['channel_id']);
      await sql.query(`INSERT INTO subscription (channel_id, ${subCols}) SELECT c, ${subCols} FROM subscription, unnest($2::int[]) AS c WHERE channel_id = $1`, [template.id, ids]);
      return { templateId: template.id, ids };
    };
    log(`creating ${SUBSCRIBE_CHANNELS} channels in each organization …`);
    const names = Array.from({ length: SUBSCRIBE_CHANNELS }, (_, i) => `sub ${String(i).padStart(3, '0')}`);
    const big = await makeChannels(bigRealm, bigOwner.id, 'patched channel', names);
    const small = await makeChannels(smallRealm, smallOwner.id, 'template channel', names);
    const bigChannels = big.ids;
    const smallChannels = small.ids;
    const patchChannelId = big.templateId;

    // Seeding's own events are not part of any measurement.
    await sql.query('TRUNCATE event');
    await sql.query('VACUUM ANALYZE');
    const count = async (realmId: number) => Number((await sql.query<{ n: string }>('SELECT count(*) AS n FROM "user" WHERE realm_id = $1', [realmId])).rows[0]!.n);
    const fixture: Fixture = {
      databaseUrl,
      secretKey,
      big: { id: bigRealm.id, url: bigRealm.url, users: await count(bigRealm.id), owner: bigOwner, actors: bigActors, channelIds: bigChannels, channelNames: names },
      small: { id: smallRealm.id, url: smallRealm.url, users: await count(smallRealm.id), owner: smallOwner, actors: smallActors, channelIds: smallChannels, channelNames: names },
      member,
      patchChannelId,
    };
    return { database, fixture, pgDataDir };
  } finally {
    await sql.end();
    await deps.db.$disconnect();
  }
}
