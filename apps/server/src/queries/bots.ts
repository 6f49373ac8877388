// Read models of bots: the bot object of the `realm_bots` state and of realm_bot `add` events, and the
// list of GET /bots. Both carry API keys: they go only to a bot's owner and the administrators (see
// access/bots.ts).
import type { Schema } from '@parley/api-types';
import type { Db, RawSql } from '../data/db.ts';
import type { User } from '../data/models.ts';
import type { ApiKeyCipher } from '../security/secrets.ts';
import { activeBotsOwnedBy, apiKeyCiphertextsOf, botDefaultsOf, botsVisibleInState, configsOfBots, servicesOfBots, type BotDefaults, type BotServiceRow } from '../data/bots.repo.ts';
import { requireMemberOrAdmin } from '../access/roles.ts';
import { seesEveryBot } from '../access/bots.ts';
import { BotType } from '../lib/bots.ts';
import { avatarUrl } from '../lib/avatar.ts';

/** What formatting a bot needs besides its row. */
export interface BotDetails {
  defaults: BotDefaults;
  services: BotServiceRow[];
  config: Map<string, string> | undefined;
  apiKey: string;
}

/** The details of several bots, in a few queries. */
export async function botDetailsOf(db: RawSql, cipher: ApiKeyCipher, bots: User[]): Promise<Map<number, BotDetails>> {
  const ids = bots.map((b) => b.id);
  const [defaults, services, configs, keys] = await Promise.all([botDefaultsOf(db, ids), servicesOfBots(db, ids), configsOfBots(db, ids), apiKeyCiphertextsOf(db, ids)]);
  const out = new Map<number, BotDetails>();
  for (const id of ids) {
    const ciphertext = keys.get(id);
    out.set(id, {
      defaults: defaults.get(id)!,
      services: services.filter((s) => s.botId === id),
      config: configs.get(id),
      apiKey: ciphertext === undefined ? '' : cipher.decrypt(ciphertext),
    });
  }
  return out;
}

/** A bot's avatar URL (Zulip's avatar_url, never left to the client). */
export const botAvatarUrl = (bot: Pick<User, 'id' | 'realmId' | 'deliveryEmail' | 'avatarSource' | 'avatarVersion'>) => avatarUrl(bot);

/** Zulip's service dicts of a bot: an outgoing webhook bot's services, an embedded bot's configuration. */
export function botServiceDicts(bot: Pick<User, 'botType'>, details: Pick<BotDetails, 'services' | 'config'>): Schema<'Bot'>['services'] {
  if (bot.botType === BotType.OUTGOING_WEBHOOK) return details.services.map((s) => ({ base_url: s.baseUrl, interface: s.interface, token: s.token }));
  if (bot.botType === BotType.EMBEDDED && details.config && details.services[0]) {
    return [{ config_data: Object.fromEntries(details.config), service_name: details.services[0].name }];
  }
  return [];
}

/**
 * The bot object (Zulip's created_bot_event / get_owned_bot_dicts). `owner_id` is always present in
 * the state; in `add` events it is left out for bots without an owner (`forEvent`).
 */
export function formatBot(bot: User, details: BotDetails, options: { forEvent: boolean }): Schema<'Bot'> {
  const out: Schema<'Bot'> = {
    email: bot.email,
    user_id: bot.id,
    full_name: bot.fullName,
    bot_type: bot.botType ?? BotType.GENERIC,
    is_active: bot.isActive,
    api_key: details.apiKey,
    default_sending_stream: details.defaults.defaultSendingStream?.name ?? null,
    default_events_register_stream: details.defaults.defaultEventsRegisterStream?.name ?? null,
    default_all_public_streams: details.defaults.defaultAllPublicStreams,
    avatar_url: botAvatarUrl(bot),
    services: botServiceDicts(bot, details),
  };
  if (bot.botOwnerId !== null || !options.forEvent) out.owner_id = bot.botOwnerId;
  return out;
}

/**
 * The `realm_bots` state of /register (Zulip's get_owned_bot_dicts): the bots the user owns,
 * deactivated ones included; every bot of the organization for administrators.
 */
export async function realmBotsState(db: RawSql, cipher: ApiKeyCipher, user: User): Promise<Schema<'Bot'>[]> {
  const bots = await botsVisibleInState(db, user.realmId, seesEveryBot(user) ? { all: true } : { ownerId: user.id });
  const details = await botDetailsOf(db, cipher, bots);
  return bots.map((bot) => formatBot(bot, details.get(bot.id)!, { forEvent: false }));
}

type ListedBot = { username: string; full_name: string; api_key: string; avatar_url: string; default_sending_stream: string | null; default_events_register_stream: string | null; default_all_public_streams: boolean };

/** GET /bots: the caller's own active bots, oldest first (administrators too get only theirs). */
export async function listOwnBots(db: Db, cipher: ApiKeyCipher, user: User): Promise<ListedBot[]> {
  requireMemberOrAdmin(user);
  const bots = await activeBotsOwnedBy(db, user.realmId, user.id);
  const details = await botDetailsOf(db, cipher, bots);
  return bots.map((bot) => {
    const d = details.get(bot.id)!;
    return {
      username: bot.email,
      full_name: bot.fullName,
      api_key: d.apiKey,
      avatar_url: botAvatarUrl(bot),
      default_sending_stream: d.defaults.defaultSendingStream?.name ?? null,
      default_events_register_stream: d.defaults.defaultEventsRegisterStream?.name ?? null,
      default_all_public_streams: d.defaults.defaultAllPublicStreams,
    };
  });
}
