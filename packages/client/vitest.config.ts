import { defineConfig } from 'vitest/config';

// PARLEY_TEST_REPORT_DIR (set by .ci/run): also write a JSON report that CI totals.
const reportDir = process.env.PARLEY_TEST_REPORT_DIR;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    reporters: reportDir ? ['default', 'json'] : ['default'],
    ...(reportDir ? { outputFile: { json: `${reportDir}/client.json` } } : {}),
  },
});
