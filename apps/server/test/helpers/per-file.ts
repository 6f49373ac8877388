// Runs before each test file. Files share their worker process (vitest.config.ts, isolate: false),
// each on its own copy of the template database: caches keyed by organization id start empty.
import { forgetDatabaseCaches } from '../../src/lib/process-caches.ts';

forgetDatabaseCaches();
