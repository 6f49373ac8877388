// Bot accounts (Zulip's add_bot_backend, patch_bot_backend, deactivate_bot_backend and
// regenerate_bot_api_key): each operation checks everything first, in Zulip's order, then changes
// everything in one transaction with its events (realm_user for everyone, realm_bot for the bot's
// owner and the administrators; see access/bots.ts). Reactivation goes through POST
// /users/{user_id}/reactivate (actions/users.ts), as in Zulip.
import type { AppDeps } from '../deps.ts';
import type { AfterCommit } from '../events/bus.ts';
import type { Db } from '../data/db.ts';
import type { StoredEvent } from '../data/events.repo.ts';
import type { Channel, Realm, User } from '../data/models.ts';
import { inTransaction } from '../data/transactions.ts';
import { isUniqueViolation } from '../data/database-errors.ts';
import {
  activeUserNamed,
  botDefaultsOf,
  configsOfBots,
  insertBotService,
  lockBotCreation,
  saveBotProfile,
  servicesOfBots,
  setBotConfig,
  setBotOwner,
  updateBotService,
  type BotDefaults,
} from '../data/bots.repo.ts';
import { findUserByDeliveryEmail, findUserById, lockRealm, updateUser, upsertApiKey } from '../data/users.repo.ts';
import { emailVisibilityOf } from '../data/users-admin.repo.ts';
import { findRealmById } from '../data/realms.repo.ts';
import { accessBotById, checkCanCreateBot, checkCanOwnBot, checkKnownBotType, checkValidBotType } from '../access/bots.ts';
import { accessChannelByName } from '../access/channels.ts';
import { loadPermissionSubject, type PermissionSubject } from '../access/group-settings.ts';
import { checkCanChangeRole, requireMemberOrAdmin, Role } from '../access/roles.ts';
import { discardCreatedBotAvatar, storeCreatedBotAvatar, type BotAvatarImages } from './bot-avatars.ts';
import { AVATAR_SOURCE_UPLOADED } from '../lib/avatar.ts';
import { hostnameOf, publicEmailOf, reloadActor } from '../access/users.ts';
import { JsonableError } from '../errors.ts';
import { BotType, botShortNameAndEmail, checkBotConfigSize, checkUrlParameter, checkValidInterfaceType, ServiceInterface } from '../lib/bots.ts';
import { validateFullName } from '../lib/validation.ts';
import { generateApiKey } from '../security/secrets.ts';
import { applyRoleChange, deactivate, insertUser } from './users.ts';
import { botOwnerChangeEvents, createdBotEvent, realmBotUpdate } from './bot-events.ts';

type AnyEvent = StoredEvent | { realmWide: true; payload: Record<string, unknown> };

export interface NewBot {
  fullName: string;
  shortName: string;
  botType: number;
  /** Outgoing webhook bots: where Parley posts (JSON-decoded; '' when absent, as Zulip). */
  payloadUrl?: string;
  serviceName?: string;
  configData?: Record<string, string>;
  interfaceType?: number;
  defaultSendingStream?: string;
  defaultEventsRegisterStream?: string;
  defaultAllPublicStreams?: boolean;
  /** The avatar the bot starts with (a multipart body's image: actions/bot-avatars.ts); its gravatar otherwise. */
  avatar?: BotAvatarImages | null;
}

export interface CreatedBot {
  bot: User;
  apiKey: string;
  defaults: BotDefaults;
}

/** Zulip's check_short_name, the name checks and the address, in Zulip's order (before any transaction). */
function checkBotNames(realm: Realm, input: { fullName: string; shortName: string }): { shortName: string; fullName: string; email: string } {
  if (input.shortName.trim() === '') throw new JsonableError('Bad name or username');
  const fullName = validateFullName(input.fullName);
  const { shortName, email } = botShortNameAndEmail(input.shortName, hostnameOf(realm.url));
  return { shortName, fullName, email };
}

/**
 * The default channel a request names: a channel the subject can post to; for PATCH, `''` for none
 * (`allowNone`; on creation Zulip looks the empty name up, and finds no channel).
 */
async function defaultChannel(tx: Db, realm: Realm, subject: PermissionSubject, name: string | undefined, allowNone: boolean): Promise<Channel | null | undefined> {
  if (name === undefined) return undefined;
  if (name === '' && allowNone) return null;
  return accessChannelByName(tx, realm, subject, name);
}

/**
 * POST /bots (and `manage create-bot`, with `actor` the owner): a bot of `actor`'s, created with its
 * API key, default channels and service; announced to everyone (realm_user) and to its owner and the
 * administrators (realm_bot, with the key).
 */
export async function doCreateBot(deps: AppDeps, realm: Realm, actor: User, input: NewBot, options: { byOperator?: boolean } = {}): Promise<CreatedBot> {
  // The server's operator (manage create-bot) gives a bot to any active human, whatever the organization's permissions.
  if (options.byOperator) checkCanOwnBot(actor);
  else requireMemberOrAdmin(actor);
  const interfaceType = input.interfaceType ?? ServiceInterface.GENERIC;
  const payloadUrl = input.payloadUrl === undefined ? '' : checkUrlParameter('payload_url', input.payloadUrl);
  const { shortName, fullName, email } = checkBotNames(realm, input);
  const serviceName = input.botType === BotType.INCOMING_WEBHOOK ? input.serviceName : input.serviceName || shortName;
  if (input.botType === BotType.EMBEDDED) throw new JsonableError('Embedded bots are not enabled.');
  const config = new Map(Object.entries(input.configData ?? {}));
  if (input.botType === BotType.INCOMING_WEBHOOK && serviceName) config.set('integration_id', serviceName);
  let avatarStoredFor: User | null = null;
  return inTransaction(deps.db, async (tx, afterCommit) => {
    await lockBotCreation(tx, realm.id);
    if (await findUserByDeliveryEmail(tx, realm.id, email)) throw new JsonableError('Email is already in use.');
    if (await activeUserNamed(tx, realm.id, fullName)) throw new JsonableError('Name is already in use.');
    const current = (await findRealmById(tx, realm.id)) ?? realm;
    const owner = await reloadActor(tx, realm, actor);
    const subject = await loadPermissionSubject(tx, owner);
    if (options.byOperator) checkKnownBotType(input.botType);
    else {
      checkCanCreateBot(subject, current, input.botType);
      checkValidBotType(subject, current, input.botType);
    }
    checkValidInterfaceType(interfaceType);
    const sending = await defaultChannel(tx, realm, subject, input.defaultSendingStream, false);
    const register = await defaultChannel(tx, realm, subject, input.defaultEventsRegisterStream, false);
    const keepsConfig = input.botType === BotType.INCOMING_WEBHOOK;
    if (keepsConfig) checkBotConfigSize(config);

    const { user: bot, apiKey } = await insertUser(tx, deps, realm, {
      email,
      fullName,
      passwordHash: null,
      role: Role.MEMBER,
      bot: { botType: input.botType, ownerId: owner.id },
      ...(input.avatar ? { avatarSource: AVATAR_SOURCE_UPLOADED } : {}),
    });
    if (input.avatar) await storeCreatedBotAvatar(deps, (avatarStoredFor = bot), input.avatar);
    await saveBotProfile(tx, {
      userId: bot.id,
      defaultSendingStreamId: sending?.id ?? null,
      defaultEventsRegisterStreamId: register?.id ?? null,
      defaultAllPublicStreams: input.defaultAllPublicStreams ?? false,
    });
    if (input.botType === BotType.OUTGOING_WEBHOOK) {
      await insertBotService(tx, { botId: bot.id, name: serviceName!, baseUrl: payloadUrl, token: generateApiKey(), interface: interfaceType });
    }
    if (keepsConfig && config.size) await setBotConfig(tx, bot.id, config);
    await deps.events.publish(tx, afterCommit, realm.id, [await createdBotEvent(tx, deps.cipher, realm.id, bot)]);
    return { bot, apiKey, defaults: (await botDefaultsOf(tx, [bot.id])).get(bot.id)! };
  }).catch(async (error) => {
    if (avatarStoredFor) await discardCreatedBotAvatar(deps, avatarStoredFor);
    if (isUniqueViolation(error)) throw new JsonableError('Email is already in use.');
    throw error;
  });
}

export interface BotUpdate {
  fullName?: string;
  role?: number;
  botOwnerId?: number;
  configData?: Record<string, string>;
  servicePayloadUrl?: string;
  serviceInterface?: number;
  defaultSendingStream?: string;
  defaultEventsRegisterStream?: string;
  defaultAllPublicStreams?: boolean;
}

export interface UpdatedBot {
  bot: User;
  defaults: BotDefaults;
  /** The owner's address as everyone sees it, when the bot has an owner. */
  ownerEmail: string | null;
}

/**
 * PATCH /bots/{bot_id}. Every check comes first (Zulip applies each change as it goes, so a late
 * refusal leaves the earlier ones applied; here nothing changes then), then the changes in Zulip's
 * order with Zulip's events.
 */
export async function doUpdateBot(deps: AppDeps, realm: Realm, actor: User, botId: number, update: BotUpdate): Promise<UpdatedBot> {
  requireMemberOrAdmin(actor);
  if (update.servicePayloadUrl !== undefined) checkUrlParameter('service_payload_url', update.servicePayloadUrl);
  return inTransaction(deps.db, async (tx, afterCommit) => {
    // Role changes are serialised on the organization row, as for every user (actions/users.ts).
    if (update.role !== undefined) await lockRealm(tx, realm.id);
    const caller = await reloadActor(tx, realm, actor);
    const bot = await accessBotById(tx, realm, caller, botId, { lock: true });
    const subject = await loadPermissionSubject(tx, caller);

    // Checks, in Zulip's order.
    let fullName: string | undefined;
    if (update.fullName !== undefined) {
      const name = validateFullName(update.fullName);
      if (name !== bot.fullName) {
        if (await activeUserNamed(tx, realm.id, name)) throw new JsonableError('Name is already in use.');
        fullName = name;
      }
    }
    const role = update.role !== undefined && update.role !== bot.role ? update.role : undefined;
    if (role !== undefined) checkCanChangeRole(caller, bot, role);
    let newOwner: User | undefined;
    if (update.botOwnerId !== undefined && update.botOwnerId !== bot.botOwnerId) {
      const owner = await findUserById(tx, realm.id, update.botOwnerId);
      if (!owner) throw new JsonableError('Failed to change owner, no such user');
      if (!owner.isActive) throw new JsonableError('Failed to change owner, user is deactivated');
      if (owner.isBot) throw new JsonableError("Failed to change owner, bots can't own other bots");
      newOwner = owner;
    }
    const sending = await defaultChannel(tx, realm, subject, update.defaultSendingStream, true);
    const register = await defaultChannel(tx, realm, subject, update.defaultEventsRegisterStream, true);
    const serviceInterface = update.serviceInterface ?? ServiceInterface.GENERIC;
    const [service] = update.servicePayloadUrl !== undefined ? await servicesOfBots(tx, [bot.id]) : [];
    if (update.servicePayloadUrl !== undefined) {
      checkValidInterfaceType(serviceInterface);
      // Zulip fails with a server error here; a bot without a service is told so.
      if (!service) throw new JsonableError('This bot has no outgoing webhook service.');
    }
    const config = update.configData ? new Map([...((await configsOfBots(tx, [bot.id])).get(bot.id) ?? new Map<string, string>()), ...Object.entries(update.configData)]) : null;
    if (config) checkBotConfigSize(config);

    // Changes and their events, in Zulip's order; each event computed as the bot is at that step.
    const events: AnyEvent[] = [];
    let current: User = bot;
    if (fullName !== undefined) {
      current = await updateUser(tx, bot.id, { fullName });
      events.push({ realmWide: true, payload: { type: 'realm_user', op: 'update', person: { user_id: bot.id, full_name: fullName } } });
      events.push(await realmBotUpdate(tx, realm.id, current, { user_id: bot.id, full_name: fullName }));
    }
    if (role !== undefined) {
      events.push(...(await applyRoleChange(tx, realm, current, role)).map((payload) => ({ realmWide: true as const, payload })));
      current = { ...current, role };
    }
    if (newOwner) {
      const previousOwnerId = current.botOwnerId;
      current = await setBotOwner(tx, bot.id, newOwner.id);
      events.push(...(await botOwnerChangeEvents(tx, deps.cipher, realm, current, newOwner, previousOwnerId)));
    }
    const defaults = (await botDefaultsOf(tx, [bot.id])).get(bot.id)!;
    const row = {
      userId: bot.id,
      defaultSendingStreamId: defaults.defaultSendingStream?.id ?? null,
      defaultEventsRegisterStreamId: defaults.defaultEventsRegisterStream?.id ?? null,
      defaultAllPublicStreams: defaults.defaultAllPublicStreams,
    };
    if (sending !== undefined) {
      row.defaultSendingStreamId = sending?.id ?? null;
      await saveBotProfile(tx, row);
      events.push(await realmBotUpdate(tx, realm.id, current, { user_id: bot.id, default_sending_stream: sending?.name ?? null }));
    }
    if (register !== undefined) {
      row.defaultEventsRegisterStreamId = register?.id ?? null;
      await saveBotProfile(tx, row);
      events.push(await realmBotUpdate(tx, realm.id, current, { user_id: bot.id, default_events_register_stream: register?.name ?? null }));
    }
    if (update.defaultAllPublicStreams !== undefined) {
      row.defaultAllPublicStreams = update.defaultAllPublicStreams;
      await saveBotProfile(tx, row);
      events.push(await realmBotUpdate(tx, realm.id, current, { user_id: bot.id, default_all_public_streams: update.defaultAllPublicStreams }));
    }
    if (service && update.servicePayloadUrl !== undefined && (service.baseUrl !== update.servicePayloadUrl || service.interface !== serviceInterface)) {
      const changed = await updateBotService(tx, service.id, { baseUrl: update.servicePayloadUrl, interface: serviceInterface });
      events.push(await realmBotUpdate(tx, realm.id, current, { user_id: bot.id, services: [{ base_url: changed.baseUrl, interface: changed.interface, token: changed.token }] }));
    }
    if (config && update.configData) {
      await setBotConfig(tx, bot.id, new Map(Object.entries(update.configData)));
      events.push(await realmBotUpdate(tx, realm.id, current, { user_id: bot.id, services: [{ config_data: Object.fromEntries(config) }] }));
    }
    await deps.events.publish(tx, afterCommit, realm.id, events);

    const owner = current.botOwnerId === null ? null : newOwner ?? (await findUserById(tx, realm.id, current.botOwnerId));
    const ownerEmail = owner ? publicEmailOf(realm, owner, (await emailVisibilityOf(tx, [owner.id])).get(owner.id) ?? 1) : null;
    return { bot: current, defaults: (await botDefaultsOf(tx, [bot.id])).get(bot.id)!, ownerEmail };
  });
}

/** DELETE /bots/{bot_id}: deactivated (already deactivated: nothing happens), as a user is. */
export async function doDeactivateBot(deps: AppDeps, realm: Realm, actor: User, botId: number): Promise<void> {
  requireMemberOrAdmin(actor);
  await inTransaction(deps.db, async (tx, afterCommit: AfterCommit) => {
    const bot = await accessBotById(tx, realm, actor, botId, { lock: true });
    if (!bot.isActive) return;
    await deactivate(tx, deps, realm, bot, afterCommit);
  });
}

/** POST /bots/{bot_id}/api_key/regenerate: the new key, told to the bot's owner and the administrators. */
export async function doRegenerateBotApiKey(deps: AppDeps, realm: Realm, actor: User, botId: number): Promise<string> {
  requireMemberOrAdmin(actor);
  return inTransaction(deps.db, async (tx, afterCommit) => {
    const bot = await accessBotById(tx, realm, actor, botId, { lock: true });
    const apiKey = generateApiKey();
    await upsertApiKey(tx, bot.id, deps.cipher.lookupHash(apiKey), deps.cipher.encrypt(apiKey));
    await deps.events.publish(tx, afterCommit, realm.id, [await realmBotUpdate(tx, realm.id, bot, { user_id: bot.id, api_key: apiKey })]);
    return apiKey;
  });
}
