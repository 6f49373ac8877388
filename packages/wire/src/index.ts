export { wirePlan } from './generated/wire-plan.ts';
export type { OperationId } from './generated/wire-plan.ts';
export type { WireOperation, WireParam } from './types.ts';
export { encodeParams, findOperation } from './encode.ts';
