// ONE table: operationId (from spec/openapi.yaml) → handler. Operations of the spec that Parley does
// not serve yet are listed in NOT_YET_SERVED (answered with 404 NOT_IMPLEMENTED); a test keeps the two
// lists and the spec in step, and checks the README names every operation not yet served.
import type { OperationName } from '@parley/api-types';
import type { HandlerTable } from './http/handler.ts';
import { fetchApiKey } from './handlers/authentication.ts';
import { getServerSettings } from './handlers/server.ts';
import { createCustomProfileField, getCustomProfileFields } from './handlers/profile-fields.ts';
import {
  createUser,
  deactivateOwnUser,
  deactivateUser,
  getOwnUser,
  getUser,
  getUsers,
  reactivateUser,
  updateUser,
} from './handlers/users.ts';

export const handlers: HandlerTable = {
  'fetch-api-key': fetchApiKey,
  'get-server-settings': getServerSettings,
  'get-custom-profile-fields': getCustomProfileFields,
  'create-custom-profile-field': createCustomProfileField,
  'get-users': getUsers,
  'get-user': getUser,
  'get-own-user': getOwnUser,
  'create-user': createUser,
  'update-user': updateUser,
  'deactivate-user': deactivateUser,
  'reactivate-user': reactivateUser,
  'deactivate-own-user': deactivateOwnUser,
};

export const NOT_YET_SERVED: readonly OperationName[] = [
  'add-apns-token',
  'archive-stream',
  'create-drafts',
  'create-scheduled-message',
  'create-user-group',
  'deactivate-user-group',
  'delete-draft',
  'delete-scheduled-message',
  'edit-draft',
  'get-drafts',
  'get-is-user-group-member',
  'get-scheduled-messages',
  'get-stream-by-id',
  'get-stream-id',
  'get-streams',
  'get-subscribers',
  'get-subscriptions',
  'get-user-group-members',
  'get-user-group-subgroups',
  'get-user-groups',
  'mark-all-as-read',
  'mark-topic-as-read',
  'remove-apns-token',
  'send-invites',
  'set-typing-status',
  'subscribe',
  'test-notify',
  'unsubscribe',
  'update-realm',
  'update-scheduled-message',
  'update-settings',
  'update-stream',
  'update-user-group',
  'update-user-group-members',
  'update-user-group-subgroups',
];
