import type { Db, RawSql } from './db.ts';
import { modelColumns } from './db.ts';

export interface SavedSnippetRow {
  id: number;
  title: string;
  content: string;
  dateCreated: Date;
}

const columns = { id: true, title: true, content: true, dateCreated: true } as const;

/** The user's saved snippets, by id. */
export const listSavedSnippetsOfUser = async (db: RawSql, userId: number): Promise<SavedSnippetRow[]> =>
  db.$queryRaw<SavedSnippetRow[]>`SELECT ${modelColumns(Object.keys(columns), 's')} FROM saved_snippet s WHERE s.user_id = ${userId}::int ORDER BY s.id`;

export const insertSavedSnippet = (db: Db, data: { realmId: number; userId: number; title: string; content: string }): Promise<SavedSnippetRow> =>
  db.savedSnippet.create({ data, select: columns });

/** Changes one of the user's snippets; null when the user has no snippet of that id. */
export async function updateSavedSnippetOfUser(db: Db, userId: number, id: number, data: { title?: string; content?: string }): Promise<SavedSnippetRow | null> {
  const { count } = await db.savedSnippet.updateMany({ where: { id, userId }, data });
  return count ? db.savedSnippet.findUnique({ where: { id }, select: columns }) : null;
}

/** Deletes one of the user's snippets; false when the user has no snippet of that id. */
export const deleteSavedSnippetOfUser = async (db: Db, userId: number, id: number): Promise<boolean> =>
  (await db.savedSnippet.deleteMany({ where: { id, userId } })).count > 0;
