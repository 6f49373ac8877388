import type { Db, RawSql } from './db.ts';
import { Prisma, modelColumns } from './db.ts';
import type { RealmEmoji } from './models.ts';

/** Every emoji of the organization (deactivated ones and uploads in progress too), by id. */
export const listRealmEmoji = async (db: RawSql, realmId: number): Promise<RealmEmoji[]> =>
  db.$queryRaw<RealmEmoji[]>`SELECT ${modelColumns(Prisma.RealmEmojiScalarFieldEnum, 'e')} FROM realm_emoji e WHERE e.realm_id = ${realmId}::int ORDER BY e.id`;

export const findActiveRealmEmojiByName = (db: Db, realmId: number, name: string) => db.realmEmoji.findFirst({ where: { realmId, name, deactivated: false } });

/** A new emoji row, without its file yet (null when an active emoji, or an upload in progress, has the name: the unique index). */
export async function insertRealmEmoji(db: Db, realmId: number, authorId: number, name: string) {
  // An upload a crashed process left unfinished (an hour is far longer than any upload) frees its name.
  await db.$executeRaw`
    DELETE FROM realm_emoji WHERE realm_id = ${realmId}::int AND name = ${name}::text AND file_name IS NULL
      AND NOT deactivated AND date_created < now() - interval '1 hour'`;
  const rows = await db.$queryRaw<{ id: number }[]>`
    INSERT INTO realm_emoji (realm_id, author_id, name) VALUES (${realmId}::int, ${authorId}::int, ${name}::text)
    ON CONFLICT (realm_id, name) WHERE NOT deactivated DO NOTHING RETURNING id`;
  return rows[0]?.id ?? null;
}

export const setRealmEmojiFile = (db: Db, id: number, fileName: string, isAnimated: boolean) =>
  db.realmEmoji.update({ where: { id }, data: { fileName, isAnimated } });

export const deleteRealmEmojiRow = (db: Db, id: number) => db.realmEmoji.deleteMany({ where: { id } });

export const deactivateRealmEmoji = (db: Db, id: number) => db.realmEmoji.updateMany({ where: { id, deactivated: false }, data: { deactivated: true } });
