import type { HandlerTable } from '../http/handler.ts';

export const userGroupHandlers: HandlerTable = {};
