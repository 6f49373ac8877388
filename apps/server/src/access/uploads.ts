// Who may read an uploaded file (Zulip's validate_attachment_request): its uploader, and whoever may
// read, now, a message that links to it (access/messages.ts hasMessageAccess, the rule every read of
// messages follows: direct messages by their participants, channel messages with content access to
// the channel, plus the reader's own row where the history is protected). Spectators read the files
// of messages in web-public channels, when the organization lets spectators in. Decided on every
// read, from the messages as they are: a message deleted, moved out of reach or edited to drop the
// link grants nothing from that moment (Zulip caches the public cases on the attachment row; Parley
// asks the messages each time). A sender may share by link only files they may read themselves.
import type { Db } from '../data/db.ts';
import type { Realm, User } from '../data/models.ts';
import { findAttachmentByPathId, linkingMessagesFor, type AttachmentRow, type AttachmentWithMessages } from '../data/attachments.repo.ts';
import { channelAccessDependsOnGroups, hasMessageAccess } from './messages.ts';
import { loadPermissionSubject, type PermissionSubject } from './group-settings.ts';

export type FileAccess = { kind: 'not-found' } | { kind: 'forbidden'; attachment: AttachmentRow } | { kind: 'allowed'; attachment: AttachmentRow };

/** The file at `pathId` of the organization, and whether `viewer` (null: a spectator) may read it. */
export async function fileAccess(db: Db, realm: Realm, viewer: User | null, pathId: string): Promise<FileAccess> {
  // No stored path holds control characters (names are sanitized): such a path names nothing.
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(pathId)) return { kind: 'not-found' };
  const attachment = await findAttachmentByPathId(db, pathId);
  if (!attachment || attachment.realmId !== realm.id) return { kind: 'not-found' };
  return (await mayReadAttachment(db, realm, viewer, attachment)) ? { kind: 'allowed', attachment } : { kind: 'forbidden', attachment };
}

/** Whether `viewer` (null: a spectator) may read the file of this attachment of `realm`. */
export async function mayReadAttachment(db: Db, realm: Realm, viewer: User | null, attachment: AttachmentRow): Promise<boolean> {
  if (attachment.realmId !== realm.id) return false;
  if (viewer !== null && viewer.id === attachment.ownerId) return true;
  if (viewer === null && !realm.enableSpectatorAccess) return false;
  const links = await linkingMessagesFor(db, attachment.id, viewer?.id ?? null);
  if (links.length === 0) return false;
  let subject: PermissionSubject | null = null;
  if (viewer !== null) {
    // Group memberships matter only for private channels the viewer is not subscribed to.
    const needGroups = links.some((l) => l.channel !== null && channelAccessDependsOnGroups(viewer, l.channel));
    subject = needGroups ? await loadPermissionSubject(db, viewer) : { user: viewer, groups: new Set() };
  }
  return links.some((l) => hasMessageAccess(subject, l));
}

/**
 * The attachment with only the linking messages its owner may read now: what GET /attachments and
 * `attachment` events show them. (Zulip lists every linking message, so a file forwarded into a
 * conversation its uploader cannot read would tell them that message's id and time.)
 */
export async function withMessagesOwnerMayRead(db: Db, owner: User, attachment: AttachmentWithMessages): Promise<AttachmentWithMessages> {
  if (attachment.messages.length === 0) return attachment;
  const links = await linkingMessagesFor(db, attachment.id, owner.id);
  const needGroups = links.some((l) => l.channel !== null && channelAccessDependsOnGroups(owner, l.channel));
  const subject: PermissionSubject = needGroups ? await loadPermissionSubject(db, owner) : { user: owner, groups: new Set() };
  const readable = new Set(links.filter((l) => hasMessageAccess(subject, l)).map((l) => l.messageId));
  return { ...attachment, messages: attachment.messages.filter((m) => readable.has(m.id)) };
}
