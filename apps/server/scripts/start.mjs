// `pnpm start`: runs the built server (apps/server/dist) in this very process, after building it if
// anything changed since the last build (see build.mjs; the check costs a few milliseconds). No turbo,
// no tsx and no second pnpm between the command and the server.
import { pathToFileURL } from 'node:url';
import { build, entryFile, isFresh } from './build.mjs';

if (!isFresh()) {
  try {
    await build({ log: (line) => console.log(`[parley] build: ${line}`) });
  } catch (error) {
    console.error(`[parley] cannot start: building the server failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
await import(pathToFileURL(entryFile).href);
