// The real zulip-js npm package (CommonJS, without type declarations), for tests that drive Parley as
// that client does.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

// Loading zulip-js replaces the global FormData with the form-data package's (its dependency
// isomorphic-form-data assigns it); zulip-js keeps its own reference, and everything else in this
// process (test files share it) keeps Node's own.
const nodeFormData = globalThis.FormData;
/** zulip-js's entry point: a client from `{ username, apiKey | password, realm }` or `{ zuliprc }`. */
export const zulipJs: (config: Record<string, unknown>) => Promise<any> = require('zulip-js');
globalThis.FormData = nodeFormData;
