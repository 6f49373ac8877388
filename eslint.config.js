// One lint setup for the whole repository. Besides the recommended rules it enforces the layering of
// the server (see README, "Architecture") with no-restricted-imports.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const restrict = (patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });
// In a flat config a later entry REPLACES an earlier one's options for the same rule, so every block
// below repeats the Prisma restriction that applies to it.
const NO_PRISMA = { group: ['@parley/db', '@parley/db/*', '**/generated/prisma/**'], message: 'Only apps/server/src/data/ may import Prisma (@parley/db).' };

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/generated/**', '.parley/**', '**/.turbo/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', URLSearchParams: 'readonly', fetch: 'readonly', Request: 'readonly', Response: 'readonly', Headers: 'readonly', FormData: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', performance: 'readonly', structuredClone: 'readonly', globalThis: 'readonly', NodeJS: 'readonly' } },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-empty-object-type': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-empty': ['error', { allowEmptyCatch: true }],
    },
  },
  // Prisma only in the data layer.
  {
    files: ['apps/server/src/**/*.ts'],
    // The composition root (main, manage, server) wires the database in; nothing else may.
    ignores: ['apps/server/src/data/**', 'apps/server/src/main.ts', 'apps/server/src/cluster/primary.ts', 'apps/server/src/manage.ts', 'apps/server/src/server.ts', 'apps/server/src/import/command-deps.ts'],
    rules: restrict([NO_PRISMA]),
  },
  // Handlers stay thin: they map parameters to a read model (queries/) or an action (actions/). No
  // Express, no envelope building, no data layer and no permission checks of their own: permissions are
  // checked by the action (on the rows it locks) or by the read model, so every caller (a handler, a
  // background job, /register) gets the same checks.
  {
    files: ['apps/server/src/handlers/**/*.ts'],
    rules: restrict([
      NO_PRISMA,
      { group: ['express'], message: 'Handlers get a HandlerContext; they do not touch Express.' },
      { group: ['../http/respond.ts'], message: 'Handlers return data; the envelope is built in http/respond.ts.' },
      { group: ['../data/*', '../data/**'], message: 'Handlers do not read the data layer: use a read model in queries/ or an action in actions/.' },
      { group: ['../access/*', '../access/**'], message: 'Permission checks run in the action (on locked rows) or the read model, not in handlers.' },
    ]),
  },
  // Read models (queries/) are shared by handlers and /register: they read and check access, never write
  // through actions, and never depend on HTTP.
  {
    files: ['apps/server/src/queries/**/*.ts'],
    rules: restrict([
      NO_PRISMA,
      { group: ['express', '../http/*'], message: 'Read models do not depend on HTTP.' },
      { group: ['../actions/*', '../actions/**'], message: 'Read models do not call actions; actions may use read models.' },
    ]),
  },
  // Domain actions and permission checks never read the request, nor touch Prisma.
  {
    files: ['apps/server/src/actions/**/*.ts', 'apps/server/src/access/**/*.ts'],
    rules: restrict([NO_PRISMA, { group: ['express', '../http/*'], message: 'Actions and access checks do not depend on HTTP.' }]),
  },
  // Every permission decision lives in access/, named for what it decides: outside it, no comparison of
  // a role (with a Role constant, a number, or by order), no raw role predicate (isGuest, isAdmin…),
  // no switch on a role, and no event audience built from roles. Nor, anywhere in the server, a Prisma
  // case-insensitive filter (an ILIKE, where `_` and `%` are wildcards).
  {
    files: ['apps/server/src/**/*.ts'],
    ignores: ['apps/server/src/access/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...[
          'BinaryExpression:has(> MemberExpression[object.name="Role"])',
          'BinaryExpression[operator=/^[<>]=?$/]:has(> MemberExpression[property.name="role"])',
          'BinaryExpression:has(> MemberExpression[property.name="role"]):has(> Literal[raw=/^[0-9]+$/])',
          'BinaryExpression[operator=/^[<>]=?$/]:has(> Identifier[name="role"])',
          'BinaryExpression:has(> Identifier[name="role"]):has(> Literal[raw=/^[0-9]+$/])',
          'CallExpression[callee.name=/^(isGuest|isAdmin|isOwner|isModerator)$/]',
          'SwitchStatement[discriminant.property.name="role"]',
          'CallExpression[callee.property.name="includes"]:has(> MemberExpression[property.name="role"])',
          'Property[key.name=/^role(Not)?In$/]',
        ].map((selector) => ({ selector, message: 'Role and guest decisions belong in apps/server/src/access/ (a function named for what it decides).' })),
        {
          selector: 'Property[key.name="mode"][value.value="insensitive"]',
          message: "Prisma's case-insensitive filters are ILIKE: `_` and `%` in the value match any character (an address like `_amlet@…` found hamlet). Compare lower(column) = lower(value) in SQL.",
        },
      ],
    },
  },
  // Repositories do not depend on HTTP either.
  {
    files: ['apps/server/src/data/**/*.ts'],
    rules: restrict([{ group: ['express', '../http/*'], message: 'Repositories do not depend on HTTP.' }]),
  },
);
