// A user's uploaded files as GET /attachments and `attachment` events show them (Zulip's
// Attachment.to_dict): times in milliseconds since the epoch (whole seconds times 1000, as Zulip 11
// sends them), the messages that link to each file, and the organization's used upload space.
import type { Schema } from '@parley/api-types';
import type { Db } from '../data/db.ts';
import type { User } from '../data/models.ts';
import { attachmentsOfOwner, usedUploadSpace, type AttachmentWithMessages } from '../data/attachments.repo.ts';
import { withMessagesOwnerMayRead } from '../access/uploads.ts';

const milliseconds = (d: Date) => Math.floor(d.getTime() / 1000) * 1000;

export function formatAttachment(a: AttachmentWithMessages): Schema<'Attachment'> {
  return {
    id: a.id,
    name: a.fileName,
    path_id: a.pathId,
    size: a.size,
    create_time: milliseconds(a.createTime),
    messages: a.messages.map((m) => ({ id: m.id, date_sent: milliseconds(m.dateSent) })),
  };
}

export async function listAttachments(db: Db, user: User): Promise<{ attachments: Schema<'Attachment'>[]; upload_space_used: number }> {
  const rows = await attachmentsOfOwner(db, user.id);
  const shown = await Promise.all(rows.map((row) => withMessagesOwnerMayRead(db, user, row)));
  return { attachments: shown.map(formatAttachment), upload_space_used: await usedUploadSpace(db, user.realmId) };
}
