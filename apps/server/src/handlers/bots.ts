// Bot accounts: thin handlers mapping decoded parameters to the read model (queries/bots.ts) or to an
// action (actions/bots.ts), which checks permissions on the rows it locks.
import type { Handler } from '../http/handler.ts';
import { botAvatarUrl, listOwnBots } from '../queries/bots.ts';
import { doCreateBot, doDeactivateBot, doRegenerateBotApiKey, doUpdateBot } from '../actions/bots.ts';
import { bodyAvatar, doSetBotAvatar } from '../actions/bot-avatars.ts';

export const getBots: Handler<'get-bots'> = async ({ user, deps }) => ({ bots: await listOwnBots(deps.db, deps.cipher, user) });

export const createBot: Handler<'create-bot'> = async ({ params, realm, user, deps, files }) => {
  const avatar = await bodyAvatar(files);
  const { bot, apiKey, defaults } = await doCreateBot(deps, realm, user, {
    avatar,
    fullName: params.full_name,
    shortName: params.short_name,
    botType: params.bot_type ?? 1,
    ...(params.payload_url !== undefined ? { payloadUrl: params.payload_url } : {}),
    ...(params.service_name !== undefined ? { serviceName: params.service_name } : {}),
    ...(params.config_data !== undefined ? { configData: params.config_data } : {}),
    ...(params.interface_type !== undefined ? { interfaceType: params.interface_type } : {}),
    ...(params.default_sending_stream !== undefined ? { defaultSendingStream: params.default_sending_stream } : {}),
    ...(params.default_events_register_stream !== undefined ? { defaultEventsRegisterStream: params.default_events_register_stream } : {}),
    ...(params.default_all_public_streams !== undefined ? { defaultAllPublicStreams: params.default_all_public_streams } : {}),
  });
  return {
    user_id: bot.id,
    api_key: apiKey,
    avatar_url: botAvatarUrl(bot),
    default_sending_stream: defaults.defaultSendingStream?.name ?? null,
    default_events_register_stream: defaults.defaultEventsRegisterStream?.name ?? null,
    default_all_public_streams: defaults.defaultAllPublicStreams,
  };
};

export const updateBot: Handler<'update-bot'> = async ({ params, path, realm, user, deps, files }) => {
  // The file is checked before anything changes; the avatar is set after the rest, as Zulip does.
  const avatar = await bodyAvatar(files);
  const updated = await doUpdateBot(deps, realm, user, path.bot_id, {
    ...(params.full_name !== undefined ? { fullName: params.full_name } : {}),
    ...(params.role !== undefined ? { role: params.role } : {}),
    ...(params.bot_owner_id !== undefined ? { botOwnerId: params.bot_owner_id } : {}),
    ...(params.config_data !== undefined ? { configData: params.config_data } : {}),
    ...(params.service_payload_url !== undefined ? { servicePayloadUrl: params.service_payload_url } : {}),
    ...(params.service_interface !== undefined ? { serviceInterface: params.service_interface } : {}),
    ...(params.default_sending_stream !== undefined ? { defaultSendingStream: params.default_sending_stream } : {}),
    ...(params.default_events_register_stream !== undefined ? { defaultEventsRegisterStream: params.default_events_register_stream } : {}),
    ...(params.default_all_public_streams !== undefined ? { defaultAllPublicStreams: params.default_all_public_streams } : {}),
  });
  const { defaults, ownerEmail } = updated;
  const bot = avatar ? await doSetBotAvatar(deps, realm, user, path.bot_id, avatar) : updated.bot;
  return {
    full_name: bot.fullName,
    avatar_url: botAvatarUrl(bot),
    service_interface: params.service_interface ?? 1,
    service_payload_url: params.service_payload_url ?? null,
    config_data: params.config_data ?? null,
    default_sending_stream: defaults.defaultSendingStream?.name ?? null,
    default_events_register_stream: defaults.defaultEventsRegisterStream?.name ?? null,
    default_all_public_streams: defaults.defaultAllPublicStreams,
    ...(ownerEmail !== null ? { bot_owner: ownerEmail } : {}),
  };
};

export const deactivateBot: Handler<'deactivate-bot'> = async ({ path, realm, user, deps }) => {
  await doDeactivateBot(deps, realm, user, path.bot_id);
  return {};
};

export const regenerateBotApiKey: Handler<'regenerate-bot-api-key'> = async ({ path, realm, user, deps }) => ({
  api_key: await doRegenerateBotApiKey(deps, realm, user, path.bot_id),
});
