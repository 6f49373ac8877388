// Drafts stored on the server (table `draft`): one row per draft, with its addressee already resolved
// (`type`, and `to_ids` as clients read it back), so reading drafts needs no join.
import type { Draft } from '@parley/db';
import type { Db, RawSql } from './db.ts';
import { Prisma, modelColumns } from './db.ts';

export type DraftRow = Draft;

/** A draft as it is written: validated and resolved by the action. */
export interface DraftData {
  type: '' | 'stream' | 'private';
  toIds: number[];
  topic: string;
  content: string;
  lastEditTime: Date;
}

/** The user's enable_drafts_synchronization setting (on when the user has no settings row). */
export async function draftsSynchronizationEnabled(db: RawSql, userId: number): Promise<boolean> {
  const [row] = await db.$queryRaw<Array<{ on: boolean }>>`SELECT enable_drafts_synchronization AS on FROM user_settings WHERE user_id = ${userId}::int`;
  return row?.on ?? true;
}

/** Stores the drafts in one statement; the rows come back in the order given (ids ascending). */
export async function insertDrafts(db: Db, userId: number, drafts: DraftData[]): Promise<DraftRow[]> {
  if (drafts.length === 0) return [];
  const rows = await db.draft.createManyAndReturn({ data: drafts.map((d) => ({ userId, ...d })) });
  // Ids are drawn from the sequence in the order of the rows inserted.
  return rows.sort((a, b) => a.id - b.id);
}

/**
 * The user's drafts by time of last edit (ties by id), oldest first (`asc`) or newest first (`desc`),
 * at most `limit` of them when given.
 */
export async function listDraftsOfUser(db: RawSql, userId: number, order: 'asc' | 'desc', limit?: number): Promise<DraftRow[]> {
  const direction = Prisma.raw(order === 'asc' ? 'ASC' : 'DESC');
  return db.$queryRaw<DraftRow[]>`
    SELECT ${modelColumns(Prisma.DraftScalarFieldEnum, 'd')} FROM draft d WHERE d.user_id = ${userId}::int
    ORDER BY d.last_edit_time ${direction}, d.id ${direction} ${limit !== undefined ? Prisma.sql`LIMIT ${limit}::int` : Prisma.empty}`;
}

/** One of the user's drafts, or null when there is no such draft or it belongs to someone else. */
export function findDraftOfUser(db: Db, userId: number, draftId: number): Promise<DraftRow | null> {
  return db.draft.findFirst({ where: { id: draftId, userId } });
}

/** Replaces one of the user's drafts; null when it is gone (or not the user's). */
export async function replaceDraftOfUser(db: Db, userId: number, draftId: number, data: DraftData): Promise<DraftRow | null> {
  const [row] = await db.draft.updateManyAndReturn({ where: { id: draftId, userId }, data });
  return row ?? null;
}

/** Deletes one of the user's drafts; false when there was no such draft of the user. */
export async function deleteDraftOfUser(db: Db, userId: number, draftId: number): Promise<boolean> {
  const { count } = await db.draft.deleteMany({ where: { id: draftId, userId } });
  return count > 0;
}

/**
 * Deletes every draft of the user (turning enable_drafts_synchronization off, PATCH /settings: Zulip
 * sends no event for it). Runs in the caller's transaction; answers how many were deleted.
 */
export async function deleteAllDraftsOfUser(tx: Db, userId: number): Promise<number> {
  const { count } = await tx.draft.deleteMany({ where: { userId } });
  return count;
}
