// One embedded PostgreSQL per test run. A template database is migrated and seeded once with an
// organization and its people; every test file then gets its own copy (CREATE DATABASE … TEMPLATE).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '@parley/db/embedded';
import { loadConfig } from '../../src/config.ts';
import { createDeps } from '../../src/server.ts';
import { bootstrapIfEmpty } from '../../src/bootstrap.ts';
import { insertUser, prepareNewUser } from '../../src/actions/users.ts';
import { inTransaction } from '../../src/data/transactions.ts';
import { findFirstRealm } from '../../src/data/realms.repo.ts';
import { PEOPLE, TEST_PASSWORD, TEST_SECRET, type Person, type TemplateInfo } from './fixtures.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    parleyTemplate: TemplateInfo;
  }
}

export default async function setup(project: TestProject) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-test-'));
  const db = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), ephemeral: true });
  const admin = new pg.Client({ connectionString: db.adminUrl });
  await admin.connect();
  await admin.query('CREATE DATABASE parley_template');
  await admin.end();

  const realmUrl = 'http://parley.test';
  const config = { ...loadConfig({}), secretKey: TEST_SECRET, dataDir: dir, publicUrl: realmUrl, ownerEmail: 'owner@parley.test', logLevel: 'error' };
  const deps = await createDeps(config, db.urlFor('parley_template'), { poolSize: 2 });
  await bootstrapIfEmpty(deps, { PARLEY_OWNER_PASSWORD: TEST_PASSWORD });
  const realm = (await findFirstRealm(deps.db))!;
  const users = {} as TemplateInfo['users'];
  for (const [name, person] of Object.entries(PEOPLE) as [Person, (typeof PEOPLE)[Person]][]) {
    const prepared = await prepareNewUser({ email: person.email, fullName: person.fullName, password: TEST_PASSWORD, role: person.role });
    const created = await inTransaction(deps.db, (tx) => insertUser(tx, deps, realm, prepared));
    users[name] = { id: created.user.id, email: person.email, apiKey: created.apiKey };
  }
  // The job queue's schema is made once here, so that each copy of the template starts it at once.
  await deps.jobs.start();
  await deps.jobs.stop();
  await deps.rateLimiter?.close();
  await deps.db.$disconnect();
  // Copies of the template need it unused: end any connection still open on it (pg-boss closes its
  // pool in the background after stop()).
  const closer = new pg.Client({ connectionString: db.adminUrl });
  await closer.connect();
  for (let attempt = 0; attempt < 50; attempt++) {
    const { rows } = await closer.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'parley_template' AND pid <> pg_backend_pid()",
    );
    if (rows.length === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await closer.end();

  project.provide('parleyTemplate', { adminUrl: db.adminUrl, templateDatabase: 'parley_template', users, realmUrl });
  return async () => {
    await db.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
