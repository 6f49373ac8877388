// Bots' own rows (migration 20261127200000_bots): default channels (bot_profile), services
// (bot_service), configuration (bot_config_data); and the bot rows of "user" the bot operations read.
import type { Db, RawSql } from './db.ts';
import { Prisma, modelColumns } from './db.ts';
import type { User } from './models.ts';

export interface BotProfileRow {
  userId: number;
  defaultSendingStreamId: number | null;
  defaultEventsRegisterStreamId: number | null;
  defaultAllPublicStreams: boolean;
}

/** A bot's default channels with their names and privacy (what formatting and event audiences need). */
export interface BotDefaults {
  defaultSendingStream: { id: number; name: string; inviteOnly: boolean } | null;
  defaultEventsRegisterStream: { id: number; name: string; inviteOnly: boolean } | null;
  defaultAllPublicStreams: boolean;
}

export interface BotServiceRow {
  id: number;
  botId: number;
  name: string;
  baseUrl: string;
  token: string;
  interface: number;
}

const NO_DEFAULTS: BotDefaults = { defaultSendingStream: null, defaultEventsRegisterStream: null, defaultAllPublicStreams: false };

/** The default channels of each bot (bots without a row: none). */
export async function botDefaultsOf(db: RawSql, botIds: number[]): Promise<Map<number, BotDefaults>> {
  const out = new Map<number, BotDefaults>(botIds.map((id) => [id, NO_DEFAULTS]));
  if (botIds.length === 0) return out;
  const rows = await db.$queryRaw<
    Array<{ user_id: number; all_public: boolean; s_id: number | null; s_name: string | null; s_private: boolean | null; e_id: number | null; e_name: string | null; e_private: boolean | null }>
  >`
    SELECT p.user_id, p.default_all_public_streams AS all_public,
           s.id AS s_id, s.name AS s_name, s.invite_only AS s_private,
           e.id AS e_id, e.name AS e_name, e.invite_only AS e_private
    FROM bot_profile p
    LEFT JOIN channel s ON s.id = p.default_sending_stream_id
    LEFT JOIN channel e ON e.id = p.default_events_register_stream_id
    WHERE p.user_id = ANY(${botIds}::int[])`;
  for (const r of rows) {
    out.set(r.user_id, {
      defaultSendingStream: r.s_id === null ? null : { id: r.s_id, name: r.s_name!, inviteOnly: r.s_private! },
      defaultEventsRegisterStream: r.e_id === null ? null : { id: r.e_id, name: r.e_name!, inviteOnly: r.e_private! },
      defaultAllPublicStreams: r.all_public,
    });
  }
  return out;
}

/** Creates or replaces a bot's default channels. */
export const saveBotProfile = (db: Db, row: BotProfileRow) =>
  db.botProfile.upsert({ where: { userId: row.userId }, create: row, update: row });

export const insertBotService = (db: Db, data: Omit<BotServiceRow, 'id'>) => db.botService.create({ data });

export const servicesOfBots = async (db: RawSql, botIds: number[]): Promise<BotServiceRow[]> =>
  botIds.length
    ? db.$queryRaw<BotServiceRow[]>`SELECT ${modelColumns(Prisma.BotServiceScalarFieldEnum, 's')} FROM bot_service s WHERE s.bot_id = ANY(${botIds}::int[]) ORDER BY s.id`
    : [];

export const updateBotService = (db: Db, id: number, data: { baseUrl: string; interface: number }) => db.botService.update({ where: { id }, data });

/** Each bot's configuration entries (bots without any are absent). */
export async function configsOfBots(db: RawSql, botIds: number[]): Promise<Map<number, Map<string, string>>> {
  const out = new Map<number, Map<string, string>>();
  if (botIds.length === 0) return out;
  const rows = await db.$queryRaw<Array<{ botId: number; key: string; value: string }>>`
    SELECT bot_id AS "botId", key, value FROM bot_config_data WHERE bot_id = ANY(${botIds}::int[]) ORDER BY key`;
  for (const row of rows) {
    let entries = out.get(row.botId);
    if (!entries) out.set(row.botId, (entries = new Map()));
    entries.set(row.key, row.value);
  }
  return out;
}

/** Adds entries to a bot's configuration, replacing the values of keys it has. */
export async function setBotConfig(db: Db, botId: number, entries: ReadonlyMap<string, string>): Promise<void> {
  for (const [key, value] of entries) {
    await db.botConfigData.upsert({ where: { botId_key: { botId, key } }, create: { botId, key, value }, update: { value } });
  }
}

/** The active bots a user owns, oldest first (GET /bots). */
export const activeBotsOwnedBy = (db: Db, realmId: number, ownerId: number): Promise<User[]> =>
  db.user.findMany({ where: { realmId, isBot: true, isActive: true, botOwnerId: ownerId }, orderBy: [{ dateJoined: 'asc' }, { id: 'asc' }] });

/** Every bot a user owns, deactivated ones included, or (`all`) every bot of the organization but the server's own. */
export const botsVisibleInState = async (db: RawSql, realmId: number, scope: { all: true } | { ownerId: number }): Promise<User[]> =>
  db.$queryRaw<User[]>`
    SELECT ${modelColumns(Prisma.UserScalarFieldEnum, 'u')} FROM "user" u
    WHERE u.realm_id = ${realmId}::int AND u.is_bot AND u.system_bot IS NULL ${'all' in scope ? Prisma.empty : Prisma.sql`AND u.bot_owner_id = ${scope.ownerId}::int`}
    ORDER BY u.id`;

/** The active human administrators and owners of an organization (Zulip's get_human_admin_users). */
export const activeHumanAdministratorIds = async (db: Db, realmId: number, administratorRoles: readonly number[]): Promise<number[]> =>
  (await db.user.findMany({ where: { realmId, isActive: true, isBot: false, role: { in: [...administratorRoles] } }, select: { id: true }, orderBy: { id: 'asc' } })).map((u) => u.id);

export const setBotOwner = (db: Db, botId: number, ownerId: number) => db.user.update({ where: { id: botId }, data: { botOwnerId: ownerId } });

/** The encrypted API keys of users, by user id. */
export async function apiKeyCiphertextsOf(db: RawSql, userIds: number[]): Promise<Map<number, string>> {
  if (userIds.length === 0) return new Map();
  const rows = await db.$queryRaw<Array<{ userId: number; ciphertext: string }>>`
    SELECT user_id AS "userId", ciphertext FROM api_key WHERE user_id = ANY(${userIds}::int[])`;
  return new Map(rows.map((r) => [r.userId, r.ciphertext]));
}

/** Does an active user of the organization have this exact name (Zulip's check_bot_name_available)? */
export const activeUserNamed = async (db: Db, realmId: number, fullName: string, exceptUserId?: number): Promise<boolean> =>
  (await db.user.count({ where: { realmId, isActive: true, fullName, ...(exceptUserId !== undefined ? { id: { not: exceptUserId } } : {}) } })) > 0;

/** Serialises the creation of bots in an organization (the address and name checks, then the insert). */
export async function lockBotCreation(db: Db, realmId: number): Promise<void> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(7265020, ${realmId}::int)`;
}
