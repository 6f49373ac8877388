// The database of bench/messages.bench.ts, made the way bench/lib/seed.ts makes perf.bench's: an
// embedded PostgreSQL (ephemeral, fsync off) holding one organization of 5,001 users:
//
//   the owner (the server's own first-start bootstrap) + `member@parley.bench` (the server's own
//   prepareNewUser/insertUser; it sends the typing notifications and messages and reads history)
//   + 4,999 members written with SQL as insertUser writes them (`user`, `user_settings`, membership of
//   role:fullmembers), the first CROWD − 1 of them with an API key made with the server's cipher.
//
// Channels, all public, created in one call of the server's subscribe action by the owner, whose
// subscriptions are then replaced with SQL (`subscription (user_id, channel_id, active, color)`):
//
//   crowd          CROWD (1,000) subscribers: the member and the 999 members with keys
//   ten            10 subscribers: the member and 9 members with keys
//   history 1…5    the member; with `historyMessages` messages (1,000,000) inserted with SQL by
//                  addHistory, round robin over the 5 channels and HISTORY_TOPICS (20) topics per channel
import { randomBytes } from 'node:crypto';
import type { EmbeddedDatabase } from '../../packages/db/src/embedded.ts';
import { loadConfig } from '../../apps/server/src/config.ts';
import { createDeps } from '../../apps/server/src/server.ts';
import { insertUser, prepareNewUser } from '../../apps/server/src/actions/users.ts';
import { inTransaction } from '../../apps/server/src/data/transactions.ts';
import { systemGroupIds } from '../../apps/server/src/data/system-groups.repo.ts';
import { createApiKeyCipher } from '../../apps/server/src/security/secrets.ts';
import { bootstrapBenchOrganization, createPublicChannels, insertBulkMembers, pg, startBenchPostgres, type PgPool } from './bench-db.ts';

export { pg, type PgPool, type PgQueryable } from './bench-db.ts';

/** Subscribers of the crowd channel, and queues of the delivery measurement. */
export const CROWD = 1000;
/** Users of the organization (owner + member + bulk). */
export const USERS = 5001;
export const HISTORY_CHANNELS = 5;
export const HISTORY_TOPICS = 20;

export interface Person {
  id: number;
  email: string;
  apiKey: string;
}

export interface MessagesFixture {
  databaseUrl: string;
  secretKey: string;
  realmId: number;
  realmUrl: string;
  users: number;
  owner: Person;
  /** Sends, types and reads; subscribed to every channel below. */
  member: Person;
  /** The CROWD subscribers of `crowdChannelId`, the member first; all have API keys. */
  crowd: Person[];
  crowdChannelId: number;
  tenChannelId: number;
  historyChannelIds: number[];
  historyTopics: string[];
}

export async function createMessagesDatabase(dir: string, log: (line: string) => void): Promise<{ database: EmbeddedDatabase; fixture: MessagesFixture; pgDataDir: string }> {
  const { database, databaseUrl, pgDataDir } = await startBenchPostgres(dir);
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

    // The bulk, as bench/lib/seed.ts writes it.
    const bulk = USERS - 2;
    log(`inserting ${bulk.toLocaleString('en')} members, ${CROWD - 1} of them with API keys …`);
    const cipher = createApiKeyCipher(Buffer.from(secretKey, 'hex'));
    const keyed: Person[] = await insertBulkMembers(sql, cipher, realm.id, (await systemGroupIds(deps.db, realm.id))['role:fullmembers'], bulk, CROWD - 1);

    const historyNames = Array.from({ length: HISTORY_CHANNELS }, (_, i) => `history ${i + 1}`);
    const names = ['crowd', 'ten', ...historyNames];
    await createPublicChannels(deps, realm, ownerRow, names);
    const channelIds = (await sql.query<{ id: number; name: string }>('SELECT id, name FROM channel WHERE realm_id = $1 AND name = ANY($2::text[])', [realm.id, names])).rows;
    const idOf = (name: string) => channelIds.find((c) => c.name === name)!.id;
    const crowdChannelId = idOf('crowd');
    const tenChannelId = idOf('ten');
    const historyChannelIds = historyNames.map(idOf);
    const crowd = [member, ...keyed];
    const subscribe = (channelId: number, userIds: number[]) =>
      sql.query(`INSERT INTO subscription (user_id, channel_id, active, color) SELECT unnest($1::int[]), $2, true, '#76ce90'`, [userIds, channelId]);
    await sql.query('DELETE FROM subscription WHERE channel_id = ANY($1::int[])', [channelIds.map((c) => c.id)]);
    await subscribe(crowdChannelId, crowd.map((p) => p.id));
    await subscribe(tenChannelId, crowd.slice(0, 10).map((p) => p.id));
    for (const id of historyChannelIds) await subscribe(id, [member.id]);

    await sql.query('TRUNCATE event');
    await sql.query('VACUUM ANALYZE');
    const users = Number((await sql.query<{ n: string }>('SELECT count(*) AS n FROM "user" WHERE realm_id = $1', [realm.id])).rows[0]!.n);
    return {
      database,
      pgDataDir,
      fixture: {
        databaseUrl,
        secretKey,
        realmId: realm.id,
        realmUrl: realm.url,
        users,
        owner,
        member,
        crowd,
        crowdChannelId,
        tenChannelId,
        historyChannelIds,
        historyTopics: Array.from({ length: HISTORY_TOPICS }, (_, i) => `history topic ${String(i + 1).padStart(2, '0')}`),
      },
    };
  } finally {
    await sql.end();
    await deps.db.$disconnect();
  }
}

/**
 * Inserts `count` channel messages with SQL: message i goes to history channel i mod 5, topic ⌊i / 5⌋
 * mod 20 (so each channel's topics interleave, 10,000 messages per channel and topic for 1,000,000),
 * sent by one of 50 crowd members, ~100 characters of content rendered as one paragraph, dates one
 * second apart ending now. `readerId` gets user_message rows (flags: read) for every message of the
 * first history channel, as a subscriber who received them would; the rest is channel history the
 * reader may read as a subscriber of a public channel, without rows. ANALYZE afterwards.
 *
 * For speed (~90 s otherwise on 2 cores) the message table's secondary indexes are dropped and made
 * again with their own definitions afterwards, the rows are written by two sessions at once, and
 * those sessions skip the triggers (session_replication_role = replica; the rows refer to the
 * organization, channels and users made above), writing the rows of message_search the search
 * trigger would have written themselves. The schema is the same afterwards.
 */
export async function addHistory(pool: PgPool, fixture: MessagesFixture, count: number, readerId: number, log: (line: string) => void = () => {}): Promise<void> {
  const t0 = performance.now();
  const since = () => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
  const senders = fixture.crowd.slice(1, 51).map((p) => p.id);
  const indexes = (await pool.query<{ name: string; def: string }>(
    `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS def FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
     WHERE x.indrelid IN ('message'::regclass, 'message_search'::regclass) AND NOT x.indisprimary AND NOT x.indisunique`,
  )).rows;
  for (const index of indexes) await pool.query(`DROP INDEX "${index.name}"`);
  const PARTS = 2;
  await Promise.all(
    Array.from({ length: PARTS }, async (_, part) => {
      const client = await pool.connect();
      try {
        await client.query('SET session_replication_role = replica');
        const from = Math.floor((count * part) / PARTS);
        const to = Math.floor((count * (part + 1)) / PARTS) - 1;
        await client.query(
          `WITH written AS (
           INSERT INTO message (realm_id, sender_id, channel_id, topic, direct_user_ids, content, rendered_content, date_sent, sending_client)
           SELECT $1, ($2::int[])[1 + i % array_length($2::int[], 1)], ($3::int[])[1 + i % $5], 'history topic ' || lpad(((i / $5) % $6 + 1)::text, 2, '0'),
                  '{}', t.c, '<p>' || t.c || '</p>', now() - make_interval(secs => ($4 - i)), 'website'
           FROM generate_series($7::int, $8::int) AS i,
                LATERAL (SELECT 'History message ' || i || ': the quick brown fox jumps over the lazy dog while the bench counts every row.' AS c) t
           ORDER BY i
           RETURNING id, topic, content)
           INSERT INTO message_search (message_id, tsv) SELECT id, parley_message_search_vector(topic, content) FROM written`,
          [fixture.realmId, senders, fixture.historyChannelIds, count, fixture.historyChannelIds.length, fixture.historyTopics.length, from, to],
        );
        await client.query('RESET session_replication_role');
      } finally {
        client.release();
      }
    }),
  );
  log(`history: ${count.toLocaleString('en')} messages written after ${since()}; making the ${indexes.length} indexes again`);
  // Two at a time, the slowest (GIN on the search vector) first.
  const queue = [...indexes].sort((a, b) => Number(b.def.includes('message_search')) - Number(a.def.includes('message_search')));
  await Promise.all(
    Array.from({ length: PARTS }, async () => {
      const client = await pool.connect();
      try {
        await client.query(`SET maintenance_work_mem = '256MB'`);
        for (let index = queue.shift(); index; index = queue.shift()) await client.query(index.def);
      } finally {
        client.release();
      }
    }),
  );
  log(`history: indexes made after ${since()}`);
  await pool.query(`INSERT INTO user_message (user_id, message_id, flags) SELECT $1, id, 1 FROM message WHERE channel_id = $2`, [readerId, fixture.historyChannelIds[0]]);
  // Every user's rows are written up to here (Parley would have written the reader's as above; the
  // history lists no deferred recipient).
  await pool.query(
    `INSERT INTO user_message_caught_up (user_id, message_id) SELECT u.id, (SELECT max(id) FROM message) FROM "user" u WHERE u.realm_id = $1
     ON CONFLICT (user_id) DO UPDATE SET message_id = EXCLUDED.message_id`,
    [fixture.realmId],
  );
  await pool.query('VACUUM ANALYZE message');
  await pool.query('ANALYZE');
  log(`history: reader's rows, VACUUM ANALYZE done after ${since()}`);
}
