// `pnpm start`: runs Parley. Without DATABASE_URL an embedded PostgreSQL keeps its data under
// $PARLEY_DATA_DIR/postgres (default ./.parley); it stops cleanly on SIGINT/SIGTERM.
import { loadConfig } from './config.ts';
import { createDeps, listen, openDatabase } from './server.ts';
import { bootstrapIfEmpty, writeZuliprc } from './bootstrap.ts';

const startedAt = performance.now();
const config = loadConfig();
const database = await openDatabase(config, (line) => console.log(`[parley] ${line}`));
const deps = await createDeps(config, database.url);
const boot = await bootstrapIfEmpty(deps);
// The zuliprc exists before the server answers, so whoever waits for "listening" can use it at once.
const zuliprc = boot.created && boot.ownerEmail && boot.apiKey ? writeZuliprc(config.dataDir, boot.ownerEmail, boot.apiKey, config.publicUrl) : null;
const running = await listen(deps, config.host, config.port);
console.log(`[parley] listening on ${running.url} (ready in ${Math.round(performance.now() - startedAt)} ms)`);
console.log(`[parley] API docs: ${running.url}/api/docs   spec: ${running.url}/api/openapi.yaml`);
if (zuliprc) {
  console.log(`[parley] created organization "${config.realmName}" with owner ${boot.ownerEmail}`);
  console.log(`[parley]   password: ${boot.ownerPassword}   (shown once; set PARLEY_OWNER_PASSWORD to choose it)`);
  console.log(`[parley]   zuliprc:  ${zuliprc}   e.g. zulip-send --config-file ${zuliprc} ...`);
}

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`[parley] ${signal}: shutting down`);
  await running.close();
  await database.stop();
  process.exit(0);
}
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));
