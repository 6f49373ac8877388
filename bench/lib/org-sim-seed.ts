// The organization of bench/organization.bench.ts, seeded the way bench/lib/messages-seed.ts seeds
// its own: an embedded PostgreSQL (ephemeral, fsync off), the owner from the server's bootstrap, one
// member made by the server's prepareNewUser/insertUser, and the rest written with SQL as insertUser
// writes them (`user`, `user_settings`, role:fullmembers membership, an `api_key` encrypted with the
// server's cipher), every one of them with an API key (every one may come online).
//
// Channels (public, created in one call of the server's subscribe action by the owner, whose
// subscriptions are then replaced with SQL):
//   everyone      every user (the organization-wide channel)
//   team 1…K      K = users / 10 small channels of 5 to ~60 members (sizes spread evenly); every user is
//                 in at least one, on average in about three
// and HISTORY_PER_CHANNEL messages of history in every channel (bench/lib/messages-seed.ts addHistory),
// so that reads page through real rows and the message table is analyzed with rows in it.
import { randomBytes } from 'node:crypto';
import type { EmbeddedDatabase } from '../../packages/db/src/embedded.ts';
import { loadConfig } from '../../apps/server/src/config.ts';
import { createDeps } from '../../apps/server/src/server.ts';
import { insertUser, prepareNewUser } from '../../apps/server/src/actions/users.ts';
import { inTransaction } from '../../apps/server/src/data/transactions.ts';
import { systemGroupIds } from '../../apps/server/src/data/system-groups.repo.ts';
import { createApiKeyCipher } from '../../apps/server/src/security/secrets.ts';
import { bootstrapBenchOrganization, createPublicChannels, insertBulkMembers, startBenchPostgres } from './bench-db.ts';
import { addHistory, pg, type MessagesFixture, type Person } from './messages-seed.ts';
import { mulberry32 } from './prng.ts';

export const HISTORY_PER_CHANNEL = 20;

/** A simulated user: credentials and the channels they are subscribed to (the everyone channel first). */
export interface SimUser extends Person {
  channelIds: number[];
}

export interface OrgFixture {
  databaseUrl: string;
  secretKey: string;
  realmId: number;
  realmUrl: string;
  users: SimUser[];
  everyoneChannelId: number;
  /** Subscribers per channel id. */
  channelSizes: Record<number, number>;
}

/** A small deterministic PRNG (mulberry32, bench/lib/prng.ts), so that every run seeds the same organization. */
export const prng = mulberry32;

export async function createOrganization(
  dir: string,
  userCount: number,
  log: (line: string) => void,
  options: { statementStats?: boolean } = {},
): Promise<{ database: EmbeddedDatabase; fixture: OrgFixture; pgDataDir: string }> {
  const { database, databaseUrl, pgDataDir } = await startBenchPostgres(dir, options);
  const secretKey = randomBytes(32).toString('hex');
  const realmUrl = 'http://parley.bench';
  const config = { ...loadConfig({}), secretKey, dataDir: dir, publicUrl: realmUrl, ownerEmail: 'owner@parley.bench', validateResponses: false, rateLimit: null };
  const deps = await createDeps(config, databaseUrl, { poolSize: 10 });
  const sql = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  try {
    const { realm, ownerRow, ownerApiKey } = await bootstrapBenchOrganization(deps, sql);
    const owner: Person = { id: ownerRow.id, email: ownerRow.deliveryEmail, apiKey: ownerApiKey };
    const prepared = await prepareNewUser({ email: 'member@parley.bench', fullName: 'Bench Member', password: null, role: 400 });
    const created = await inTransaction(deps.db, (tx) => insertUser(tx, deps, realm, prepared));
    const member: Person = { id: created.user.id, email: 'member@parley.bench', apiKey: created.apiKey };

    const bulk = Math.max(0, userCount - 2);
    log(`inserting ${bulk.toLocaleString('en')} members with API keys …`);
    const cipher = createApiKeyCipher(Buffer.from(secretKey, 'hex'));
    const fullMembers = (await systemGroupIds(deps.db, realm.id))['role:fullmembers'];
    const keyed: Person[] = await insertBulkMembers(sql, cipher, realm.id, fullMembers, bulk, bulk);
    // The owner does not take part (an administrator's queue sees more); the member and the bulk do.
    const everyone = [member, ...keyed];

    const teams = Math.max(1, Math.floor(everyone.length / 10));
    const teamNames = Array.from({ length: teams }, (_, i) => `team ${i + 1}`);
    log(`creating the everyone channel and ${teams} small channels …`);
    // Two through the subscribe action; the other small channels cloned from the first with SQL, column
    // by column, each with its own copy of its anonymous administrators group (as bench/lib/seed.ts
    // does: the action costs ~40 ms a channel, and one transaction for hundreds times out on a busy machine).
    await createPublicChannels(deps, realm, ownerRow, ['everyone', teamNames[0]!]);
    if (teams > 1) {
      const template = (await sql.query<{ id: number; can_administer_channel_group_id: number }>('SELECT id, can_administer_channel_group_id FROM channel WHERE realm_id = $1 AND name = $2', [realm.id, teamNames[0]])).rows[0]!;
      const columns = async (table: string, except: string[]) =>
        (await sql.query<{ c: string }>(`SELECT column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, [table])).rows
          .map((r) => r.c)
          .filter((c) => !except.includes(c))
          .map((c) => `"${c}"`)
          .join(', ');
      const clones = teamNames.slice(1);
      const groupCols = await columns('user_group', ['id']);
      const groups = (await sql.query<{ id: number }>(`INSERT INTO user_group (${groupCols}) SELECT ${groupCols} FROM user_group, generate_series(1, $2) WHERE id = $1 RETURNING id`, [template.can_administer_channel_group_id, clones.length])).rows.map((r) => r.id);
      await sql.query('INSERT INTO user_group_member (group_id, user_id) SELECT g, m.user_id FROM user_group_member m, unnest($2::int[]) AS g WHERE m.group_id = $1', [template.can_administer_channel_group_id, groups]);
      await sql.query('INSERT INTO user_group_subgroup (supergroup_id, subgroup_id) SELECT g, s.subgroup_id FROM user_group_subgroup s, unnest($2::int[]) AS g WHERE s.supergroup_id = $1', [template.can_administer_channel_group_id, groups]);
      const channelCols = await columns('channel', ['id', 'name', 'can_administer_channel_group_id']);
      await sql.query(
        `INSERT INTO channel (name, can_administer_channel_group_id, ${channelCols})
         SELECT x.n, x.g, ${channelCols.split(', ').map((c) => `t.${c}`).join(', ')} FROM channel t, unnest($2::text[], $3::int[]) AS x(n, g) WHERE t.id = $1`,
        [template.id, clones, groups],
      );
    }
    const channelRows = (await sql.query<{ id: number; name: string }>('SELECT id, name FROM channel WHERE realm_id = $1', [realm.id])).rows;
    const idOf = new Map(channelRows.map((c) => [c.name, c.id]));
    const everyoneChannelId = idOf.get('everyone')!;
    const teamIds = teamNames.map((n) => idOf.get(n)!);
    // Team sizes spread from 5 to ~60; members drawn at random; every user in at least one team.
    const random = prng(28);
    const members = new Map<number, Set<number>>(teamIds.map((id) => [id, new Set<number>()]));
    everyone.forEach((p, i) => members.get(teamIds[i % teams]!)!.add(p.id));
    teamIds.forEach((id, k) => {
      const size = Math.min(everyone.length, 5 + Math.floor((55 * k) / Math.max(1, teams - 1)));
      const set = members.get(id)!;
      while (set.size < size) set.add(everyone[Math.floor(random() * everyone.length)]!.id);
    });
    const channelsOf = new Map<number, number[]>(everyone.map((p) => [p.id, [everyoneChannelId]]));
    for (const [channelId, set] of members) for (const userId of set) channelsOf.get(userId)!.push(channelId);
    await sql.query('DELETE FROM subscription WHERE channel_id = ANY($1::int[])', [[everyoneChannelId, ...teamIds]]);
    const pairs = [...members].flatMap(([channelId, set]) => [...set].map((userId) => [userId, channelId] as const));
    await sql.query(`INSERT INTO subscription (user_id, channel_id, active, color) SELECT unnest($1::int[]), $2, true, '#76ce90'`, [everyone.map((p) => p.id), everyoneChannelId]);
    await sql.query(`INSERT INTO subscription (user_id, channel_id, active, color) SELECT * , true, '#76ce90' FROM unnest($1::int[], $2::int[])`, [pairs.map((p) => p[0]), pairs.map((p) => p[1])]);
    const channelSizes: Record<number, number> = { [everyoneChannelId]: everyone.length };
    for (const [channelId, set] of members) channelSizes[channelId] = set.size;
    await sql.query('TRUNCATE event');

    const allChannels = [everyoneChannelId, ...teamIds];
    const pseudo: MessagesFixture = {
      databaseUrl,
      secretKey,
      realmId: realm.id,
      realmUrl: realm.url,
      users: everyone.length + 1,
      owner,
      member,
      crowd: everyone.slice(0, 51),
      crowdChannelId: everyoneChannelId,
      tenChannelId: teamIds[0]!,
      historyChannelIds: allChannels,
      historyTopics: Array.from({ length: 5 }, (_, i) => `topic ${i + 1}`),
    };
    await addHistory(sql, pseudo, allChannels.length * HISTORY_PER_CHANNEL, member.id, log);
    return {
      database,
      pgDataDir,
      fixture: {
        databaseUrl,
        secretKey,
        realmId: realm.id,
        realmUrl: realm.url,
        users: everyone.map((p) => ({ ...p, channelIds: channelsOf.get(p.id)! })),
        everyoneChannelId,
        channelSizes,
      },
    };
  } finally {
    await sql.end();
    await deps.db.$disconnect();
  }
}
