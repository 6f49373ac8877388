import { defineConfig } from 'vitest/config';
import LongPolesFirst from './test/helpers/sequencer.ts';

// PARLEY_TEST_REPORT_DIR (set by .ci/run): also write a JSON report that CI totals.
const reportDir = process.env.PARLEY_TEST_REPORT_DIR;

export default defineConfig({
  test: {
    globalSetup: ['./test/helpers/global-setup.ts'],
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
