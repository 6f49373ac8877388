// The `muted_users` state of /register: the users the user muted, with when, in the order they were
// muted (the shape of the `muted_users` event).
import type { RawSql } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { mutedUsersOf } from '../data/muted-users.repo.ts';

export const mutedUsersState = (db: RawSql, user: User): Promise<Array<{ id: number; timestamp: number }>> => mutedUsersOf(db, user.id);
