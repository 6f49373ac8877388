// Who may export the organization: its administrators (owners included), as Zulip's
// require_realm_admin on every /export/realm endpoint. What an export may contain is decided by its
// type (data/exports.repo.ts exportedMessageCondition, export/realm-export.ts).
import type { User } from '../data/models.ts';
import { Role, requireAdmin } from './roles.ts';

export function checkCanManageExports(user: User): void {
  requireAdmin(user);
}

/** Owners, whose accounts must stay usable in an export (Zulip's check_*_export_is_usable). */
export const isOwnerRole = (role: number) => role === Role.OWNER;
