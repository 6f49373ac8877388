export { createParleyClient, createClientFromZuliprc } from './create-client.ts';
export type { ParleyClient, ClientOptions } from './create-client.ts';
export { readZuliprc } from './zuliprc.ts';
export type { Zuliprc } from './zuliprc.ts';
export type { paths, components, operations, Schema } from '@parley/api-types';
