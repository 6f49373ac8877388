// POST /typing.
import type { Handler } from '../http/handler.ts';
import { doSetTypingStatus } from '../actions/typing.ts';

export const setTypingStatus: Handler<'set-typing-status'> = async ({ params, realm, user, deps, cachedTableWrites }) => {
  const kind = params.type === 'stream' || params.type === 'channel' ? 'channel' : 'direct';
  // The action tells cachedTableWrites that it wrote none of the cached tables.
  return doSetTypingStatus(
    deps,
    realm,
    user,
    kind === 'direct' ? { kind, op: params.op, to: params.to } : { kind, op: params.op, channelId: params.stream_id, topic: params.topic },
    cachedTableWrites,
  );
};
