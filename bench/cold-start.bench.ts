// Cold start to first response: a fresh data directory (embedded PostgreSQL initdb, migrations,
// organization bootstrap) and then a warm restart on the same data. Prints figures; not a test.
//   npx tsx bench/cold-start.bench.ts
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const serverDir = fileURLToPath(new URL('../apps/server', import.meta.url));
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-'));
const port = 9700 + Math.floor(Math.random() * 200);

async function startAndMeasure(label: string): Promise<void> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: serverDir,
    env: { ...process.env, PARLEY_DATA_DIR: dataDir, PORT: String(port), INIT_CWD: serverDir },
    stdio: 'ignore',
  });
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/server_settings`);
      if (res.ok) break;
    } catch {}
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log(`${label}: first response after ${Math.round(performance.now() - t0)} ms`);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

try {
  await startAndMeasure('cold start (initdb + migrate + bootstrap)');
  await startAndMeasure('warm restart (existing data)');
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
