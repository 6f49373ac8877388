// What the primary process of `pnpm start` (cluster/primary.ts) and its server processes
// (cluster/worker.ts, node:cluster workers) tell each other over the IPC channel, and the wording of
// start-up failures both print. Messages carry `kind` (prom-client's own messages on the same channel carry
// `type`; and `{ type: … }` literals in src/ are taken for events by test/contract/events.test.ts).
import { inspect } from 'node:util';
import type { Config } from '../config.ts';

/** Primary → worker. */
export type ToWorker =
  /**
   * The database is up and migrated: connect to it. `bootstrap`: this worker creates the organization
   * of a new installation before it listens (one worker, once). `listen`: listen at once (otherwise wait
   * for `listen`, sent once the organization exists).
   */
  | { kind: 'start'; databaseUrl: string; bootstrap: boolean; listen: boolean }
  | { kind: 'listen' }
  /** Stop: drain (the existing close with its drain time) and exit 0. */
  | { kind: 'stop' }
  /** Asked to stop again: close open connections now. */
  | { kind: 'stop-now' };

/** Worker → primary. */
export type ToPrimary =
  /** The worker listens for messages now (sent first: earlier messages would be lost). */
  | { kind: 'hello' }
  /** The bootstrap worker has made sure an organization exists; `created` with what to show once. */
  | { kind: 'bootstrapped'; created: { ownerEmail: string; ownerPassword: string | null; zuliprc: string } | null }
  | { kind: 'listening'; url: string; emailGatewayPort: number | null }
  /** Start-up failed (the worker exits 1 next); the message says why. */
  | { kind: 'failed'; message: string };

export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (error === undefined) return 'unknown error (undefined was thrown)';
  return typeof error === 'string' ? error : inspect(error);
}

export function explainListenError(error: unknown, config: Pick<Config, 'host' | 'port'>): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') return `port ${config.port} on ${config.host} is already in use; stop what uses it or set PORT to another port`;
  if (code === 'EACCES') return `not allowed to listen on ${config.host}:${config.port}; choose a PORT above 1023 or another HOST`;
  if (code === 'EADDRNOTAVAIL') return `${config.host} is not an address of this machine; set HOST to one that is (e.g. 127.0.0.1)`;
  return describeError(error);
}

/** Requests under way get this long to finish when the server stops. */
export const DRAIN_MS = 10_000;
