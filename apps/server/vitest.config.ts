import { defineConfig } from 'vitest/config';
import LongPolesFirst from './test/helpers/sequencer.ts';

// PARLEY_TEST_REPORT_DIR (set by .ci/run): also write a JSON report that CI totals.
const reportDir = process.env.PARLEY_TEST_REPORT_DIR;

export default defineConfig({
  test: {
    globalSetup: ['./test/helpers/global-setup.ts'],
    // Test files share their worker's modules (isolate: false): the server's modules load once per
    // worker instead of once per file, which saves about two fifths of the suite's CPU. Module state is
    // therefore scoped to a database (src/lib/process-caches.ts, forgotten before each file by
    // test/helpers/per-file.ts) or to a server's deps, and a closed server leaves no timer behind.
    isolate: false,
    setupFiles: ['./test/helpers/per-file.ts'],
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: LongPolesFirst },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    env: {},
    reporters: reportDir ? ['default', 'json'] : ['default'],
    ...(reportDir ? { outputFile: { json: `${reportDir}/server.json` } } : {}),
  },
});
