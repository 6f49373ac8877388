// POST /users/me/presence, GET /realm/presence, GET /users/{user_id_or_email}/presence.
import type { SuccessData } from '@parley/api-types';
import type { Handler } from '../http/handler.ts';
import { doUpdatePresence } from '../actions/presence.ts';
import { presenceCopies, userPresence } from '../queries/presence.ts';

export const updatePresence: Handler<'update-presence'> = async ({ params, realm, user, deps, cachedTableWrites }) => {
  const answer = await doUpdatePresence(
    deps,
    realm,
    user,
    {
      status: params.status,
      pingOnly: params.ping_only ?? false,
      slimPresence: params.slim_presence ?? false,
      lastUpdateId: params.last_update_id,
      historyLimitDays: params.history_limit_days,
    },
    cachedTableWrites,
  );
  return answer as SuccessData<'update-presence'>;
};

/** Zulip's get_statuses_for_realm: the legacy format, 14 days, without `presence_last_update_id`. */
export const getPresence: Handler<'get-presence'> = async ({ realm, deps }) => {
  const { presences, server_timestamp } = await presenceCopies(deps.listener).read(
    deps.db,
    realm,
    { format: 'legacy', afterUpdateId: null, historyDays: null, disabled: deps.config.presenceDisabled },
    { fresh: true },
  );
  return { presences, server_timestamp } as unknown as SuccessData<'get-presence'>;
};

export const getUserPresence: Handler<'get-user-presence'> = async ({ path, params, realm, user, deps }) => {
  const answer = await userPresence(deps.db, realm, user, String(path.user_id_or_email), { slim: params.slim_presence ?? false });
  return answer as SuccessData<'get-user-presence'>;
};
