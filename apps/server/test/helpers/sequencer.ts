// The order test files start in. Vitest starts files it has no timings for (every CI run: a clean
// clone has no cache) largest first, which let a few small but long files (the fuzz, the embedded
// PostgreSQL's life cycle) start last and run on one worker while the other sat idle. The long poles
// below, measured in CI, start first; every other file keeps vitest's own order after them.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Files that take 15 s or more in CI (2026-11-27), longest first. */
const LONG_POLES = [
  'test/e2e/embedded-lifecycle.test.ts',
  'test/fuzz/fuzz.test.ts',
  'test/api/push/push.test.ts',
  'test/api/system/security-invariant.test.ts',
  'test/api/messages/get-messages.test.ts',
  'test/e2e/scheduled-delivery-crash.test.ts',
  'test/api/user-groups/user-groups-concurrency.test.ts',
  'test/api/typing/typing-listener.test.ts',
  'test/api/system/overload.test.ts',
  'test/api/system/email-outbox.test.ts',
  'test/api/scheduled-messages/scheduled-messages.test.ts',
];

const rank = (spec: TestSpecification): number => {
  const at = LONG_POLES.findIndex((file) => spec.moduleId.endsWith(file));
  return at === -1 ? LONG_POLES.length : at;
};

export default class LongPolesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    return ordered.map((spec, i) => ({ spec, i })).sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i).map(({ spec }) => spec);
  }
}
