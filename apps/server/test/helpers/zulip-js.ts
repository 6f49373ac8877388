// The real zulip-js npm package (CommonJS, without type declarations), for tests that drive Parley as
// that client does.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** zulip-js's entry point: a client from `{ username, apiKey | password, realm }` or `{ zuliprc }`. */
export const zulipJs: (config: Record<string, unknown>) => Promise<any> = require('zulip-js');
