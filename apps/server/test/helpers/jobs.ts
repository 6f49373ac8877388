// The job queue's rows (pg-boss's table), read by tests that wait for background work to have run.
import type { TestServer } from './test-server.ts';

export interface DeliveryJob {
  /** The delivery time the job was made for (ISO). */
  at: string;
  /** pg-boss's state: created, retry, active, completed, cancelled or failed. */
  state: string;
  /** Whether its time has come (start_after has passed). */
  due: boolean;
}

/** The delivery jobs of a scheduled message or reminder, oldest first. */
export function deliveryJobs(env: TestServer, id: number): Promise<DeliveryJob[]> {
  return env.running.deps.db.$queryRawUnsafe(
    `SELECT data->>'at' AS at, state::text AS state, start_after <= now() AS due FROM pgboss.job WHERE name = 'deliver-scheduled-message' AND (data->>'id')::int = $1 ORDER BY created_on, id`,
    id,
  );
}
