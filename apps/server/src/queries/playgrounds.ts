// Read side of code playgrounds: /register's realm_playgrounds.
import type { RawSql } from '../data/db.ts';
import { playgroundsOfRealm, type PlaygroundRow } from '../data/playgrounds.repo.ts';

export async function playgroundsList(db: RawSql, realmId: number): Promise<PlaygroundRow[]> {
  return playgroundsOfRealm(db, realmId);
}
