// GET /users/me/alert_words and the `alert_words` state of /register: the user's alert words as typed,
// in the order they were added.
import type { RawSql } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { alertWordsOfUser } from '../data/alert-words.repo.ts';

export const alertWordsOf = (db: RawSql, user: User): Promise<string[]> => alertWordsOfUser(db, user.id);
