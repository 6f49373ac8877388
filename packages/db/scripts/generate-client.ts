// Runs `prisma generate` offline. Prisma 7's CLI insists on locating a native schema engine before it
// generates, although generation itself only uses bundled WebAssembly; pointing
// PRISMA_SCHEMA_ENGINE_BINARY at any existing file satisfies that check without a download.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const result = spawnSync('prisma', ['generate', '--schema', 'prisma/schema.prisma'], {
  cwd: packageDir,
  stdio: 'inherit',
  shell: process.platform === 'win32',
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    CHECKPOINT_DISABLE: '1',
  },
});
process.exit(result.status ?? 1);
