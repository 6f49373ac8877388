import type { HandlerTable } from '../http/handler.ts';

/** Channel and subscription operations (filled in by the channels work). */
export const channelHandlers: HandlerTable = {};
