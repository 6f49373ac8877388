import type { Db } from './db.ts';

export const findRealmById = (db: Db, id: number) => db.realm.findUnique({ where: { id } });
export const findFirstRealm = (db: Db) => db.realm.findFirst({ orderBy: { id: 'asc' } });
export const listRealms = (db: Db) => db.realm.findMany({ orderBy: { id: 'asc' } });
export const countRealms = (db: Db) => db.realm.count();
