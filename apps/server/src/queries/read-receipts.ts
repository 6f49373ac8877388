// GET /messages/{message_id}/read_receipts (Zulip's read_receipts view): who has read a message the
// requester can read. Only reads: the caller has caught up the requester's deferred rows (access to a
// protected history comes from their row).
import type { SuccessData } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { readReceiptUserIds } from '../data/read-receipts.repo.ts';
import { JsonableError } from '../errors.ts';
import { readableMessage } from './messages.ts';

export async function readReceipts(db: Db, realm: Realm, viewer: User, messageId: number): Promise<SuccessData<'get-read-receipts'>> {
  // Messages of archived channels count: they can still be read (Zulip's feature level 360).
  const found = await readableMessage(db, realm, viewer, messageId);
  if (!found) throw new JsonableError('Invalid message(s)');
  if (!realm.enableReadReceipts) throw new JsonableError('Read receipts are disabled in this organization.');
  // Users who muted the requester, and users the requester muted, are left out (data/read-receipts.repo.ts).
  return { user_ids: await readReceiptUserIds(db, found.message.id, found.message.sender_id, viewer.id) };
}
