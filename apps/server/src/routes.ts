// ONE table: operationId (from spec/openapi.yaml) → handler. Operations of the spec that Parley does
// not serve yet are listed in NOT_YET_SERVED (answered with 404 NOT_IMPLEMENTED); tests check that both
// stay in step with the spec, and the README names every operation not yet served.
import type { OperationName } from '@parley/api-types';
import { wirePlan } from '@parley/wire';
import type { HandlerTable } from './http/handler.ts';
import { channelHandlers } from './handlers/channels.ts';
import { userGroupHandlers } from './handlers/user-groups.ts';
import { fetchApiKey } from './handlers/authentication.ts';
import { getServerSettings } from './handlers/server.ts';
import { updateRealm } from './handlers/realm.ts';
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
  'update-realm': updateRealm,
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
  ...userGroupHandlers,
  ...channelHandlers,
};

/** Operations of the spec without a handler yet (derived, so it cannot drift). */
export const NOT_YET_SERVED: readonly OperationName[] = (Object.keys(wirePlan) as OperationName[]).filter((op) => !handlers[op]).sort();
