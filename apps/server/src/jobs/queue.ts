// THE background job queue: work that may wait or fail (scheduled delivery; later e-mail and push)
// runs after commit through pg-boss, a well-kept PostgreSQL job queue, never inside a request.
//
// Why pg-boss (10.x; 11+ needs Node 22): jobs live in the same PostgreSQL as everything else, so a job
// can be enqueued inside the transaction of the change that needs it (it exists exactly when the
// change committed); every server process works the same queue (SKIP LOCKED), and a job whose process
// died mid-way is retried once its expiry passes — what exactly-once delivery builds on (the handlers
// themselves are idempotent: they re-check under a row lock). graphile-worker was the alternative; its
// 0.16 line keeps a crashed worker's job locked for hours, which would delay a scheduled message that
// long after a kill -9.
//
// A process killed with SIGKILL leaves the jobs it had fetched (its batch) claimed ("active"). Nothing
// tells a live worker's claimed jobs from a dead one's (pg-boss 10 records no owner and no heartbeat),
// so a process starting up cannot take them over safely; they are retried once their expiry has
// passed, when pg-boss's maintenance (at most once per maintenanceIntervalSeconds in the cluster)
// finds them. The expiry is therefore per kind of job: short for scheduled delivery (a batch is one
// short transaction; one that does outlive its expiry is harmless, as the retry waits for the row
// locks and then finds its messages delivered), longer for e-mail and push, which wait on remote
// servers. A scheduled message whose job a killed process held goes out about expiry + maintenance
// interval + retry delay late: 15 + up to 5 (rarely 10) + 1 to 2 s; ~20 s in the crash test
// (test/e2e/scheduled-delivery-crash.test.ts). Maintenance also archives completed jobs: a seq scan
// of the job table every 5 s, small while the table holds only the last 12 hours of jobs.
import PgBoss from 'pg-boss';
import type { Db } from '../data/db.ts';
import type { Logger } from '../http/logging.ts';
import { countJobFailures } from '../metrics/metrics.ts';

/** Every kind of job, with its payload. */
export interface JobPayloads {
  'deliver-scheduled-message': { id: number; /** The delivery time this job was made for (ISO). */ at: string };
  /** Sends one e-mail of the outbox (mail/). */
  'send-email': { emailId: number };
  /** Sends one push notification of the push outbox (push/). */
  'send-push': { pushId: number };
  /** The daily clean-up of uploaded files no message links to (jobs/attachments.ts). */
  'delete-unclaimed-attachments': Record<string, never>;
  /** The hourly deletion of messages older than their retention period (jobs/realm.ts). */
  'message-retention': Record<string, never>;
  /** The hourly promotion of members whose waiting period ended to role:fullmembers (jobs/realm.ts). */
  'promote-full-members': Record<string, never>;
  /** Makes the thumbnails of one uploaded image and re-renders the messages linking it (jobs/thumbnails.ts). */
  thumbnail: { attachmentId: number };
  /** Posts one message to one outgoing-webhook bot's URL, attempt `attempt` (actions/outgoing-webhooks.ts). */
  'outgoing-webhook': { realmId: number; messageId: number; botId: number; attempt: number };
  /** Makes one organization export requested through POST /export/realm (jobs/exports.ts). */
  'realm-export': { exportId: number };
}
export type JobName = keyof JobPayloads;
export const JOB_NAMES: readonly JobName[] = ['deliver-scheduled-message', 'send-email', 'send-push', 'delete-unclaimed-attachments', 'message-retention', 'promote-full-members', 'thumbnail', 'outgoing-webhook', 'realm-export'];

/** What a batch handler reports: the jobs (indexes into its batch) that failed, with their errors. */
export type BatchFailures = Array<{ index: number; error: unknown }>;

export interface JobQueue {
  /** Enqueues a job inside the transaction `tx`: it runs only if `tx` commits. */
  send<K extends JobName>(tx: Db, name: K, data: JobPayloads[K], options?: { startAfter?: Date }): Promise<void>;
  /** Enqueues many jobs of one kind inside `tx` with one statement (bulk work, benchmarks). */
  sendMany<K extends JobName>(tx: Db, name: K, jobs: Array<{ data: JobPayloads[K]; startAfter?: Date }>): Promise<void>;
  /**
   * Enqueues a job of a kind that keeps one waiting job at most (`singleWaiting`), outside any
   * transaction; nothing when one is already waiting (in any process). Whether this call enqueued it.
   */
  sendIfNoneWaiting<K extends JobName>(name: K, data: JobPayloads[K], options?: { startAfter?: Date }): Promise<boolean>;
  /** Runs `handler` for each job of `name` in this process (call before start). */
  work<K extends JobName>(name: K, handler: (data: JobPayloads[K]) => Promise<void>): void;
  /**
   * Runs `handler` for the jobs of `name` a worker fetched at once (up to the kind's batchSize), for
   * handlers that do a batch's work together. It returns the jobs that failed (retried later); a
   * throw fails the whole batch.
   */
  workBatch<K extends JobName>(name: K, handler: (data: Array<JobPayloads[K]>) => Promise<BatchFailures>): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface JobKindOptions {
  /** A job still running after this long is considered lost (its process died) and retried. */
  expireInSeconds: number;
  /** Jobs a worker fetches at once. */
  batchSize: number;
  /** Jobs of a fetched batch run at once by `work` handlers (batch handlers get the batch whole). */
  concurrency: number;
  /** Workers (fetch loops) of this kind per process. */
  workers: number;
  /**
   * At most one job of this kind waits and one runs, whatever the number of processes (pg-boss's
   * `stately` queue policy, jobs keyed by the kind's name): periodic work (sendIfNoneWaiting).
   */
  singleWaiting?: boolean;
}

export interface JobQueueOptions {
  /** How often idle workers look for due jobs (pg-boss's minimum is 0.5 s). */
  pollingIntervalSeconds: number;
  /** How often expired jobs are looked for (and old ones archived), once per interval in the cluster. */
  maintenanceIntervalSeconds: number;
  retryLimit: number;
  kinds: Record<JobName, JobKindOptions>;
}

export const DEFAULT_JOB_QUEUE_OPTIONS: JobQueueOptions = {
  pollingIntervalSeconds: 0.5,
  maintenanceIntervalSeconds: 5,
  retryLimit: 10,
  kinds: {
    // Delivered a batch per transaction (jobs/handlers.ts). Stores serialise on the organization's
    // event-order lock, so two workers per process: one checks its batch while another stores. A batch
    // of 50 stays far inside the 15 s expiry (10,000 due at once: bench/scheduled-delivery.bench.ts).
    'deliver-scheduled-message': { expireInSeconds: 15, batchSize: 50, concurrency: 1, workers: 2 },
    'send-email': { expireInSeconds: 60, batchSize: 10, concurrency: 1, workers: 1 },
    'send-push': { expireInSeconds: 60, batchSize: 10, concurrency: 1, workers: 1 },
    // A sweep of storage may take a while on a large bucket.
    'delete-unclaimed-attachments': { expireInSeconds: 3600, batchSize: 1, concurrency: 1, workers: 1, singleWaiting: true },
    // Deletes in short transactions of its own; a pass over a large backlog may take a while.
    'message-retention': { expireInSeconds: 3600, batchSize: 1, concurrency: 1, workers: 1, singleWaiting: true },
    'promote-full-members': { expireInSeconds: 300, batchSize: 1, concurrency: 1, workers: 1, singleWaiting: true },
    // One image decoded at a time per process (sharp on libuv's pool): bounded memory and CPU.
    thumbnail: { expireInSeconds: 120, batchSize: 5, concurrency: 1, workers: 1 },
    // Each waits on a remote server (up to its timeout, 10 s by default): several at once.
    'outgoing-webhook': { expireInSeconds: 60, batchSize: 5, concurrency: 5, workers: 1 },
    // Streams a whole organization into storage: long; one at a time per process.
    'realm-export': { expireInSeconds: 6 * 3600, batchSize: 1, concurrency: 1, workers: 1 },
  },
};

/** pg-boss runs its own statements through the transaction of the caller (Prisma's raw SQL). */
function transactionExecutor(tx: Db) {
  return {
    async executeSql(text: string, values: unknown[]) {
      const rows = await tx.$queryRawUnsafe<unknown[]>(text, ...values);
      return { rows: rows as unknown[] };
    },
  };
}

/** Runs `run` for every item, at most `limit` at once; the failures, by index. */
async function runAll<T>(items: T[], limit: number, run: (item: T) => Promise<void>): Promise<BatchFailures> {
  const failures: BatchFailures = [];
  let next = 0;
  const lane = async () => {
    for (let index = next++; index < items.length; index = next++) {
      try {
        await run(items[index]!);
      } catch (error) {
        failures.push({ index, error });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  return failures;
}

export function createJobQueue(databaseUrl: string, logger: Logger, options: JobQueueOptions = DEFAULT_JOB_QUEUE_OPTIONS): JobQueue {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    max: 3,
    application_name: 'parley-jobs',
    // Every process supervises (maintenance, expiry); pg-boss coordinates them with advisory locks.
    supervise: true,
    maintenanceIntervalSeconds: options.maintenanceIntervalSeconds,
    schedule: false,
  });
  boss.on('error', (error) => logger.error({ err: error }, 'job queue error'));
  const handlers: Array<{ name: JobName; batch: (data: never[]) => Promise<BatchFailures> }> = [];
  let started = false;
  const jobOptions = (name: JobName) => ({
    retryLimit: options.retryLimit,
    retryDelay: 1,
    retryBackoff: true,
    expireInSeconds: options.kinds[name].expireInSeconds,
  });

  return {
    async send(tx, name, data, sendOptions = {}) {
      const id = await boss.send(name, data, {
        db: transactionExecutor(tx),
        ...jobOptions(name),
        ...(sendOptions.startAfter ? { startAfter: sendOptions.startAfter } : {}),
      });
      if (!id) throw new Error(`job ${name} was not enqueued`);
    },
    async sendIfNoneWaiting(name, data, sendOptions = {}) {
      if (!options.kinds[name].singleWaiting) throw new Error(`jobs of ${name} may be waiting several at once`);
      const id = await boss.send(name, data, { ...jobOptions(name), singletonKey: name, ...(sendOptions.startAfter ? { startAfter: sendOptions.startAfter } : {}) });
      return id !== null;
    },
    async sendMany(tx, name, jobs) {
      if (jobs.length === 0) return;
      await boss.insert(
        jobs.map((job) => ({ name, data: job.data, ...jobOptions(name), ...(job.startAfter ? { startAfter: job.startAfter.toISOString() } : {}) })),
        { db: transactionExecutor(tx) },
      );
    },
    work(name, handler) {
      const run = handler as (data: never) => Promise<void>;
      handlers.push({ name, batch: (data) => runAll(data, options.kinds[name].concurrency, run) });
    },
    workBatch(name, handler) {
      handlers.push({ name, batch: handler as (data: never[]) => Promise<BatchFailures> });
    },
    async start() {
      if (started) return;
      started = true;
      await boss.start();
      for (const name of JOB_NAMES) await boss.createQueue(name, options.kinds[name].singleWaiting ? { name, policy: 'stately' } : undefined);
      for (const { name, batch } of handlers) {
        const { batchSize, workers } = options.kinds[name];
        for (let w = 0; w < workers; w++) {
          await boss.work(name, { pollingIntervalSeconds: options.pollingIntervalSeconds, batchSize }, async (jobs) => {
            const failures = await batch(jobs.map((job) => job.data) as never[]).catch((error: unknown) => {
              countJobFailures(name, jobs.length); // pg-boss fails the whole batch
              throw error;
            });
            // The failed jobs are retried with backoff; pg-boss then completes the rest of the batch
            // (completing touches only jobs still active).
            for (const { index, error } of failures) {
              const job = jobs[index]!;
              logger.error({ err: error, job: name, job_id: job.id }, 'job failed');
              countJobFailures(name);
              const message = error instanceof Error ? error.message : String(error);
              await boss.fail(name, job.id, { message });
            }
          });
        }
      }
    },
    async stop() {
      if (!started) return;
      started = false;
      await boss.stop({ graceful: true, timeout: 5_000, wait: true });
    },
  };
}
