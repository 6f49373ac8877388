import type { Handler } from '../http/handler.ts';
import { doUpdateRealm } from '../actions/realm.ts';
import type { GroupSettingUpdate } from '../actions/group-settings.ts';
import { groupSettingParams } from '../lib/group-settings.ts';

export const updateRealm: Handler<'update-realm'> = async ({ params, realm, user, deps }) =>
  doUpdateRealm(deps, realm, user, {
    ...(params.name !== undefined ? { name: params.name } : {}),
    ...(params.description !== undefined ? { description: params.description } : {}),
    flags: {
      enableSpectatorAccess: params.enable_spectator_access,
      emailChangesDisabled: params.email_changes_disabled,
      nameChangesDisabled: params.name_changes_disabled,
      inviteRequired: params.invite_required,
      allowMessageEditing: params.allow_message_editing,
      enableReadReceipts: params.enable_read_receipts,
    },
    timeLimits: {
      messageContentEditLimitSeconds: params.message_content_edit_limit_seconds,
      moveMessagesWithinStreamLimitSeconds: params.move_messages_within_stream_limit_seconds,
      moveMessagesBetweenStreamsLimitSeconds: params.move_messages_between_streams_limit_seconds,
      messageContentDeleteLimitSeconds: params.message_content_delete_limit_seconds,
    },
    ...(params.message_edit_history_visibility_policy !== undefined ? { editHistoryPolicy: params.message_edit_history_visibility_policy } : {}),
    settings: groupSettingParams<'realm', GroupSettingUpdate>('realm', params),
  });
