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
import PgBoss from 'pg-boss';
import type { Db } from '../data/db.ts';
import type { Logger } from '../http/logging.ts';

/** Every kind of job, with its payload. */
export interface JobPayloads {
  'deliver-scheduled-message': { id: number; /** The delivery time this job was made for (ISO). */ at: string };
  /** Sends one e-mail of the outbox (mail/). */
  'send-email': { emailId: number };
  /** Sends one push notification of the push outbox (push/). */
  'send-push': { pushId: number };
}
export type JobName = keyof JobPayloads;
export const JOB_NAMES: readonly JobName[] = ['deliver-scheduled-message', 'send-email', 'send-push'];

export interface JobQueue {
  /** Enqueues a job inside the transaction `tx`: it runs only if `tx` commits. */
  send<K extends JobName>(tx: Db, name: K, data: JobPayloads[K], options?: { startAfter?: Date }): Promise<void>;
  /** Runs `handler` for jobs of `name` in this process (call before start). */
  work<K extends JobName>(name: K, handler: (data: JobPayloads[K]) => Promise<void>): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface JobQueueOptions {
  /** How often idle workers look for due jobs (pg-boss's minimum is 0.5 s). */
  pollingIntervalSeconds: number;
  /** A job still running after this long is considered lost (its process died) and retried. */
  expireInSeconds: number;
  retryLimit: number;
}

export const DEFAULT_JOB_QUEUE_OPTIONS: JobQueueOptions = { pollingIntervalSeconds: 0.5, expireInSeconds: 60, retryLimit: 10 };

/** pg-boss runs its own statements through the transaction of the caller (Prisma's raw SQL). */
function transactionExecutor(tx: Db) {
  return {
    async executeSql(text: string, values: unknown[]) {
      const rows = await tx.$queryRawUnsafe<unknown[]>(text, ...values);
      return { rows: rows as unknown[] };
    },
  };
}

export function createJobQueue(databaseUrl: string, logger: Logger, options: JobQueueOptions = DEFAULT_JOB_QUEUE_OPTIONS): JobQueue {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    max: 3,
    application_name: 'parley-jobs',
    // Every process supervises (maintenance, expiry); pg-boss coordinates them with advisory locks.
    supervise: true,
    schedule: false,
  });
  boss.on('error', (error) => logger.error({ err: error }, 'job queue error'));
  const workers: Array<{ name: JobName; handler: (data: never) => Promise<void> }> = [];
  let started = false;

  return {
    async send(tx, name, data, sendOptions = {}) {
      const id = await boss.send(name, data, {
        db: transactionExecutor(tx),
        retryLimit: options.retryLimit,
        retryDelay: 1,
        retryBackoff: true,
        expireInSeconds: options.expireInSeconds,
        ...(sendOptions.startAfter ? { startAfter: sendOptions.startAfter } : {}),
      });
      if (!id) throw new Error(`job ${name} was not enqueued`);
    },
    work(name, handler) {
      workers.push({ name, handler: handler as (data: never) => Promise<void> });
    },
    async start() {
      if (started) return;
      started = true;
      await boss.start();
      for (const name of JOB_NAMES) await boss.createQueue(name);
      for (const { name, handler } of workers) {
        // Up to 10 due jobs per fetch, run one after the other. If one fails the batch is retried
        // whole, which is safe because handlers are idempotent (the ones done find nothing to do).
        await boss.work(name, { pollingIntervalSeconds: options.pollingIntervalSeconds, batchSize: 10 }, async (jobs) => {
          let failure: unknown = null;
          for (const job of jobs) {
            try {
              await handler(job.data as never);
            } catch (error) {
              failure ??= error;
              logger.error({ err: error, job: name, job_id: job.id }, 'job failed');
            }
          }
          if (failure) throw failure;
        });
      }
    },
    async stop() {
      if (!started) return;
      started = false;
      await boss.stop({ graceful: true, timeout: 5_000, wait: true });
    },
  };
}
