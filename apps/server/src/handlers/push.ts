// Mobile push: device tokens (iOS, Android) and the test notification. Thin: the actions check the
// caller (no bots) and the tokens.
import type { Handler } from '../http/handler.ts';
import { doAddPushDevice, doRemovePushDevice, doSendTestNotification } from '../actions/push.ts';

export const addApnsToken: Handler<'add-apns-token'> = async ({ params, user, deps }) => {
  await doAddPushDevice(deps, user, 'apns', params.token, params.appid);
  return {};
};

export const removeApnsToken: Handler<'remove-apns-token'> = async ({ params, user, deps }) => {
  await doRemovePushDevice(deps, user, 'apns', params.token);
  return {};
};

export const addFcmToken: Handler<'add-fcm-token'> = async ({ params, user, deps }) => {
  await doAddPushDevice(deps, user, 'fcm', params.token, null);
  return {};
};

export const removeFcmToken: Handler<'remove-fcm-token'> = async ({ params, user, deps }) => {
  await doRemovePushDevice(deps, user, 'fcm', params.token);
  return {};
};

export const testNotify: Handler<'test-notify'> = async ({ params, realm, user, deps }) => {
  await doSendTestNotification(deps, realm, user, params?.token);
  return {};
};
