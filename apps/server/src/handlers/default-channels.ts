// Default channels and default channel groups: thin handlers mapping parameters to the actions
// (actions/default-channels.ts), which check the caller's right and the channels.
import type { Handler } from '../http/handler.ts';
import {
  doAddDefaultChannel,
  doCreateDefaultChannelGroup,
  doRemoveDefaultChannel,
  doRemoveDefaultChannelGroup,
  doUpdateDefaultChannelGroupChannels,
  doUpdateDefaultChannelGroupInfo,
} from '../actions/default-channels.ts';

export const addDefaultStream: Handler<'add-default-stream'> = async ({ params, realm, user, deps }) => {
  await doAddDefaultChannel(deps, realm, user, params.stream_id);
  return {};
};

export const removeDefaultStream: Handler<'remove-default-stream'> = async ({ params, realm, user, deps }) => {
  await doRemoveDefaultChannel(deps, realm, user, params.stream_id);
  return {};
};

export const createDefaultStreamGroup: Handler<'create-default-stream-group'> = async ({ params, realm, user, deps }) => {
  await doCreateDefaultChannelGroup(deps, realm, user, { name: params.group_name, description: params.description, channelNames: params.stream_names });
  return {};
};

export const updateDefaultStreamGroupInfo: Handler<'update-default-stream-group-info'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateDefaultChannelGroupInfo(deps, realm, user, path.group_id, {
    ...(params.new_group_name !== undefined ? { name: params.new_group_name } : {}),
    ...(params.new_description !== undefined ? { description: params.new_description } : {}),
  });
  return {};
};

export const updateDefaultStreamGroupStreams: Handler<'update-default-stream-group-streams'> = async ({ params, path, realm, user, deps }) => {
  await doUpdateDefaultChannelGroupChannels(deps, realm, user, path.group_id, params.op, params.stream_names);
  return {};
};

export const removeDefaultStreamGroup: Handler<'remove-default-stream-group'> = async ({ path, realm, user, deps }) => {
  await doRemoveDefaultChannelGroup(deps, realm, user, path.group_id);
  return {};
};
