// Types generated from spec/openapi.yaml by openapi-typescript (src/generated is never edited by hand).
import type { components, operations, paths } from './generated/openapi.d.ts';

export type { components, operations, paths };

/** A named schema of the spec, e.g. Schema<'User'>. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];
export type OperationName = keyof operations;

type FormBody<Op> = Op extends { requestBody?: infer RB }
  ? NonNullable<RB> extends { content: { 'application/x-www-form-urlencoded': infer B } }
    ? B
    : {}
  : {};
type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? ([NonNullable<Q>] extends [never] ? {} : NonNullable<Q>) : {};
type PathOf<Op> = Op extends { parameters: { path?: infer P } } ? ([NonNullable<P>] extends [never] ? {} : NonNullable<P>) : {};

/** Decoded request parameters of an operation: query and form fields merged, as the server sees them. */
export type RequestParams<K extends OperationName> = FormBody<operations[K]> & QueryOf<operations[K]>;
export type PathParams<K extends OperationName> = PathOf<operations[K]>;

type JsonOf<R> = R extends { content: { 'application/json': infer J } } ? J : never;
type SuccessResponse<K extends OperationName> = operations[K] extends { responses: { 200: infer R } } ? JsonOf<R> : never;
/** The data fields of an operation's success response (without result, msg, ignored_parameters_unsupported). */
export type SuccessData<K extends OperationName> = Omit<SuccessResponse<K>, 'result' | 'msg' | 'ignored_parameters_unsupported'>;

/** An event as `GET /events` delivers it (any type), with its queue position `id`. */
export type EventPayload = components['schemas']['Event'];
/** The `type` values of events. */
export type EventType = EventPayload['type'];
type EventsOfType<T extends EventType> = Extract<EventPayload, { type: T }>;
type OpsOf<E> = E extends { op: infer O } ? O : never;
type WithOp<E, O> = E extends { op: infer P } ? (O extends P ? E : never) : never;
/**
 * The events of one type, or of one type and op: `Event<'user_group'>`, `Event<'user_group', 'add_members'>`
 * (`Event<'typing', 'start'>` keeps both typing shapes).
 */
export type Event<T extends EventType, O extends OpsOf<EventsOfType<T>> = never> = [O] extends [never] ? EventsOfType<T> : WithOp<EventsOfType<T>, O>;
/** An event's payload as the server stores it, before delivery gives it its queue position `id`. */
export type EventData<T extends EventType, O extends OpsOf<EventsOfType<T>> = never> = Event<T, O> extends infer E ? (E extends unknown ? Omit<E, 'id'> : never) : never;
