// THE route table: every operation of spec/openapi.yaml (by operationId) with its handler. The type
// makes it complete: an operation added to the spec does not compile until it is served here.
import type { OperationName } from '@parley/api-types';
import type { HandlerContext, RouteTable } from './http/handler.ts';
import { fetchApiKey } from './handlers/authentication.ts';
import { getServerSettings } from './handlers/server.ts';
import { deleteRealmIcon, deleteRealmLogo, updateRealm, updateRealmUserSettingsDefaults, uploadRealmIcon, uploadRealmLogo } from './handlers/realm.ts';
import {
  createCustomProfileField,
  deleteCustomProfileField,
  getCustomProfileFields,
  removeProfileData,
  reorderCustomProfileFields,
  updateCustomProfileField,
  updateProfileData,
} from './handlers/profile-fields.ts';
import { createUser, deactivateOwnUser, deactivateUser, getOwnUser, getUser, getUsers, reactivateUser, updateUser } from './handlers/users.ts';
import {
  createUserGroup,
  deactivateUserGroup,
  getIsUserGroupMember,
  getUserGroupMembers,
  getUserGroups,
  getUserGroupSubgroups,
  updateUserGroup,
  updateUserGroupMembers,
  updateUserGroupSubgroups,
} from './handlers/user-groups.ts';
import { deleteQueue, getEvents, registerQueue } from './handlers/event-queues.ts';
import { setTypingStatus } from './handlers/typing.ts';
import { addReaction, removeReaction } from './handlers/reactions.ts';
import { addApnsToken, addFcmToken, removeApnsToken, removeFcmToken, testNotify } from './handlers/push.ts';
import { createScheduledMessage, deleteScheduledMessage, getScheduledMessages, updateScheduledMessage } from './handlers/scheduled-messages.ts';
import { createReminder, deleteReminder, getReminders } from './handlers/reminders.ts';
import { muteTopic, updateUserTopic } from './handlers/user-topics.ts';
import { createDrafts, deleteDraft, editDraft, getDrafts } from './handlers/drafts.ts';
import { createInviteLink, getInvites, resendEmailInvite, revokeEmailInvite, revokeInviteLink, sendInvites } from './handlers/invitations.ts';
import { markAllAsRead, markStreamAsRead, markTopicAsRead, updateMessageFlags, updateMessageFlagsForNarrow } from './handlers/message-flags.ts';
import { checkMessagesMatchNarrow, getMessage, getMessageHistory, getMessages, updateMessage, getReadReceipts, getStreamTopics, renderMessage, sendMessage, setTypingStatusForMessageEdit } from './handlers/messages.ts';
import { archiveStream, getStreamById, getStreamEmailAddress, getStreamId, getStreams, getSubscribers, getSubscriptionStatus, getSubscriptions, subscribe, unsubscribe, updateStream, updateSubscriptions, updateSubscriptionSettings } from './handlers/channels.ts';
import { getUserStatus, updateStatus, updateStatusForUser } from './handlers/user-status.ts';
import { updateDisplaySettings, updateNotificationSettings, updateSettings } from './handlers/user-settings.ts';
import { deleteMessage, deleteTopic } from './handlers/messages.ts';
import { getFileTemporaryUrl, uploadFile } from './handlers/uploads.ts';
import { deleteAvatar, setAvatar } from './handlers/avatars.ts';
import { deactivateCustomEmoji, getCustomEmoji, uploadCustomEmoji } from './handlers/realm-emoji.ts';
import { getAttachments, removeAttachment } from './handlers/attachments.ts';
import { muteUser, unmuteUser } from './handlers/muted-users.ts';
import { addAlertWords, getAlertWords, removeAlertWords } from './handlers/alert-words.ts';
import {
  addDefaultStream,
  createDefaultStreamGroup,
  removeDefaultStream,
  removeDefaultStreamGroup,
  updateDefaultStreamGroupInfo,
  updateDefaultStreamGroupStreams,
} from './handlers/default-channels.ts';
import { createSavedSnippet, deleteSavedSnippet, editSavedSnippet, getSavedSnippets } from './handlers/saved-snippets.ts';
import { getPresence, getUserPresence, updatePresence } from './handlers/presence.ts';
import { addLinkifier, getLinkifiers, removeLinkifier, reorderLinkifiers, updateLinkifier } from './handlers/linkifiers.ts';
import { addCodePlayground, removeCodePlayground } from './handlers/playgrounds.ts';
import { createBot, deactivateBot, getBots, regenerateBotApiKey, updateBot } from './handlers/bots.ts';
import { getBotStorage, removeBotStorage, updateBotStorage } from './handlers/bot-storage.ts';
import { callIncomingWebhook, callIncomingWebhookGet } from './handlers/integrations.ts';
import { deleteRealmExport, exportRealm, getRealmExportConsents, getRealmExports } from './handlers/exports.ts';

export const routes: RouteTable = {
  // organization exports
  'export-realm': exportRealm,
  'get-realm-exports': getRealmExports,
  'delete-realm-export': deleteRealmExport,
  'get-realm-export-consents': getRealmExportConsents,
  // uploaded files
  'upload-file': uploadFile,
  'set-avatar': setAvatar,
  'delete-avatar': deleteAvatar,
  'get-custom-emoji': getCustomEmoji,
  'upload-custom-emoji': uploadCustomEmoji,
  'deactivate-custom-emoji': deactivateCustomEmoji,
  'get-file-temporary-url': getFileTemporaryUrl,
  'get-attachments': getAttachments,
  'remove-attachment': removeAttachment,
  // authentication and server
  'fetch-api-key': fetchApiKey,
  'get-server-settings': getServerSettings,
  'update-realm': updateRealm,
  'update-realm-user-settings-defaults': updateRealmUserSettingsDefaults,
  'upload-realm-icon': uploadRealmIcon,
  'delete-realm-icon': deleteRealmIcon,
  'upload-realm-logo': uploadRealmLogo,
  'delete-realm-logo': deleteRealmLogo,
  // users
  'get-users': getUsers,
  'get-user': getUser,
  'get-own-user': getOwnUser,
  'create-user': createUser,
  'update-user': updateUser,
  'deactivate-user': deactivateUser,
  'reactivate-user': reactivateUser,
  'deactivate-own-user': deactivateOwnUser,
  'get-custom-profile-fields': getCustomProfileFields,
  'create-custom-profile-field': createCustomProfileField,
  'update-custom-profile-field': updateCustomProfileField,
  'delete-custom-profile-field': deleteCustomProfileField,
  'reorder-custom-profile-fields': reorderCustomProfileFields,
  'update-profile-data': updateProfileData,
  'remove-profile-data': removeProfileData,
  // user groups
  'get-user-groups': getUserGroups,
  'create-user-group': createUserGroup,
  'update-user-group': updateUserGroup,
  'update-user-group-members': updateUserGroupMembers,
  'update-user-group-subgroups': updateUserGroupSubgroups,
  'deactivate-user-group': deactivateUserGroup,
  'get-user-group-members': getUserGroupMembers,
  'get-is-user-group-member': getIsUserGroupMember,
  'get-user-group-subgroups': getUserGroupSubgroups,
  // channels and subscriptions
  'get-streams': getStreams,
  'get-stream-by-id': getStreamById,
  'get-stream-id': getStreamId,
  'get-subscribers': getSubscribers,
  'get-stream-email-address': getStreamEmailAddress,
  'get-subscriptions': getSubscriptions,
  'get-subscription-status': getSubscriptionStatus,
  subscribe,
  unsubscribe,
  'update-subscriptions': updateSubscriptions,
  'update-stream': updateStream,
  'archive-stream': archiveStream,
  // real-time events and typing
  'register-queue': registerQueue,
  'get-events': getEvents,
  'delete-queue': deleteQueue,
  'set-typing-status': setTypingStatus,
  // messages
  'send-message': sendMessage,
  // scheduled messages
  'create-scheduled-message': createScheduledMessage,
  'get-scheduled-messages': getScheduledMessages,
  'update-scheduled-message': updateScheduledMessage,
  'delete-scheduled-message': deleteScheduledMessage,
  // reminders
  'create-reminder': createReminder,
  'get-reminders': getReminders,
  'delete-reminder': deleteReminder,
  // read state
  'update-message-flags': updateMessageFlags,
  'update-message-flags-for-narrow': updateMessageFlagsForNarrow,
  'mark-all-as-read': markAllAsRead,
  'mark-stream-as-read': markStreamAsRead,
  'mark-topic-as-read': markTopicAsRead,
  // reactions
  'add-reaction': addReaction,
  'remove-reaction': removeReaction,
  // mobile push devices, drafts
  'add-apns-token': addApnsToken,
  'remove-apns-token': removeApnsToken,
  'add-fcm-token': addFcmToken,
  'remove-fcm-token': removeFcmToken,
  'test-notify': testNotify,
  'create-drafts': createDrafts,
  'get-drafts': getDrafts,
  'edit-draft': editDraft,
  'delete-draft': deleteDraft,
  // invitations
  'send-invites': sendInvites,
  'get-invites': getInvites,
  'create-invite-link': createInviteLink,
  'revoke-email-invite': revokeEmailInvite,
  'resend-email-invite': resendEmailInvite,
  'revoke-invite-link': revokeInviteLink,
  'get-messages': getMessages,
  'get-message': getMessage,
  'update-message': updateMessage,
  'get-message-history': getMessageHistory,
  'get-stream-topics': getStreamTopics,
  'delete-message': deleteMessage,
  'delete-topic': deleteTopic,
  'get-read-receipts': getReadReceipts,
  'render-message': renderMessage,
  'check-messages-match-narrow': checkMessagesMatchNarrow,
  'set-typing-status-for-message-edit': setTypingStatusForMessageEdit,
  'update-user-topic': updateUserTopic,
  'update-subscription-settings': updateSubscriptionSettings,
  'mute-topic': muteTopic,
  'update-settings': updateSettings,
  'update-display-settings': updateDisplaySettings,
  'update-notification-settings': updateNotificationSettings,
  // presence
  'update-presence': updatePresence,
  'get-presence': getPresence,
  'get-user-presence': getUserPresence,
  // user status
  'update-status': updateStatus,
  'update-status-for-user': updateStatusForUser,
  'get-user-status': getUserStatus,
  // muted users and alert words
  'mute-user': muteUser,
  'unmute-user': unmuteUser,
  'get-alert-words': getAlertWords,
  'add-alert-words': addAlertWords,
  'remove-alert-words': removeAlertWords,
  // default channels and default channel groups
  'add-default-stream': addDefaultStream,
  'remove-default-stream': removeDefaultStream,
  'create-default-stream-group': createDefaultStreamGroup,
  'update-default-stream-group-info': updateDefaultStreamGroupInfo,
  'update-default-stream-group-streams': updateDefaultStreamGroupStreams,
  'remove-default-stream-group': removeDefaultStreamGroup,
  // saved snippets
  'get-saved-snippets': getSavedSnippets,
  'create-saved-snippet': createSavedSnippet,
  'edit-saved-snippet': editSavedSnippet,
  'delete-saved-snippet': deleteSavedSnippet,
  // linkifiers and code playgrounds
  'get-linkifiers': getLinkifiers,
  'add-linkifier': addLinkifier,
  'update-linkifier': updateLinkifier,
  'remove-linkifier': removeLinkifier,
  'reorder-linkifiers': reorderLinkifiers,
  'add-code-playground': addCodePlayground,
  'remove-code-playground': removeCodePlayground,
  // bots and bot storage
  'get-bots': getBots,
  'create-bot': createBot,
  'update-bot': updateBot,
  'deactivate-bot': deactivateBot,
  'regenerate-bot-api-key': regenerateBotApiKey,
  'get-bot-storage': getBotStorage,
  'update-bot-storage': updateBotStorage,
  'remove-bot-storage': removeBotStorage,
  'call-incoming-webhook': callIncomingWebhook,
  'call-incoming-webhook-get': callIncomingWebhookGet,
};

/** A handler as the dispatcher calls it: parameters were validated against this operation's spec. */
export type AnyHandler = (ctx: HandlerContext<OperationName>) => Promise<Record<string, unknown>>;

/** The handler of an operation the pipeline resolved (http/operations.ts resolves only the spec's operations). */
export function handlerOf(operationId: string): AnyHandler {
  return routes[operationId as OperationName] as unknown as AnyHandler;
}
