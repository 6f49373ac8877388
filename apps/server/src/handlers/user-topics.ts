// Topic visibility policies: thin handlers over actions/user-topics.ts.
import type { Handler } from '../http/handler.ts';
import { doMuteTopic, doUpdateUserTopic } from '../actions/user-topics.ts';

export const updateUserTopic: Handler<'update-user-topic'> = async ({ params, realm, user, deps }) => {
  await doUpdateUserTopic(deps, realm, user, params.stream_id, params.topic, params.visibility_policy);
  return {};
};

export const muteTopic: Handler<'mute-topic'> = async ({ params, realm, user, deps }) => {
  await doMuteTopic(deps, realm, user, { streamId: params.stream_id, stream: params.stream, topic: params.topic, op: params.op });
  return {};
};
