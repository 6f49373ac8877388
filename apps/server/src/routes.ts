// THE route table: every operation of spec/openapi.yaml (by operationId) with its handler, or
// NOT_SERVED for the ones Parley does not serve yet (answered 404 NOT_IMPLEMENTED). The type makes it
// complete: an operation added to the spec does not compile until it is listed here.
import type { OperationName } from '@parley/api-types';
import { NOT_SERVED, type HandlerContext, type RouteTable } from './http/handler.ts';
import { fetchApiKey } from './handlers/authentication.ts';
import { getServerSettings } from './handlers/server.ts';
import { updateRealm } from './handlers/realm.ts';
import { createCustomProfileField, getCustomProfileFields } from './handlers/profile-fields.ts';
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
import { archiveStream, getStreamById, getStreamId, getStreams, getSubscribers, getSubscriptions, subscribe, unsubscribe, updateStream } from './handlers/channels.ts';

export const routes: RouteTable = {
  // authentication and server
  'fetch-api-key': fetchApiKey,
  'get-server-settings': getServerSettings,
  'update-realm': updateRealm,
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
  'get-subscriptions': getSubscriptions,
  subscribe,
  unsubscribe,
  'update-stream': updateStream,
  'archive-stream': archiveStream,
  // not served yet
  'add-apns-token': NOT_SERVED,
  'remove-apns-token': NOT_SERVED,
  'test-notify': NOT_SERVED,
  'create-drafts': NOT_SERVED,
  'get-drafts': NOT_SERVED,
  'edit-draft': NOT_SERVED,
  'delete-draft': NOT_SERVED,
  'create-scheduled-message': NOT_SERVED,
  'get-scheduled-messages': NOT_SERVED,
  'update-scheduled-message': NOT_SERVED,
  'delete-scheduled-message': NOT_SERVED,
  'mark-all-as-read': NOT_SERVED,
  'mark-topic-as-read': NOT_SERVED,
  'send-invites': NOT_SERVED,
  'set-typing-status': NOT_SERVED,
  'update-settings': NOT_SERVED,
  'register-queue': NOT_SERVED,
  'get-events': NOT_SERVED,
  'delete-queue': NOT_SERVED,
};

/** The operations listed NOT_SERVED. */
export const NOT_YET_SERVED: readonly OperationName[] = (Object.keys(routes) as OperationName[]).filter((op) => routes[op] === NOT_SERVED).sort();

/** A handler as the dispatcher calls it: parameters were validated against this operation's spec. */
export type AnyHandler = (ctx: HandlerContext<OperationName>) => Promise<Record<string, unknown>>;

/** The handler of an operation, or null when it is not served (or not an operation of the spec). */
export function handlerOf(operationId: string): AnyHandler | null {
  if (!Object.hasOwn(routes, operationId)) return null;
  const entry = routes[operationId as OperationName];
  return entry === NOT_SERVED ? null : (entry as unknown as AnyHandler);
}
