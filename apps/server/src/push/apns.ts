// Apple Push Notification service over HTTP/2, through @parse/node-apn (token-based authentication with
// a .p8 key: an ES256 JWT in `authorization`, renewed by the library before its hour runs out).
//
// One send is one request for one device. The library's own retries are off: retrying belongs to the
// job queue (with backoff, and without sending twice what was accepted), so every answer comes back
// here as an outcome: sent, rejected for good (the token being invalid or not), or worth retrying.
import { readFileSync } from 'node:fs';
import apn from '@parse/node-apn';
import type { ApnsConfig } from '../config.ts';

export interface ApnsRequest {
  /** The device token (hex). */
  token: string;
  /** apns-topic: the app's bundle id. */
  topic: string;
  /** The JSON body: `aps` plus Zulip's `zulip` data. */
  payload: Record<string, unknown>;
  /** apns-id: a UUID, the same on every attempt of one push. */
  apnsId: string;
}

export type ApnsOutcome =
  | { result: 'sent' }
  /** APNs refused the push for good; `tokenInvalid` when the token itself is (Zulip then removes it). */
  | { result: 'rejected'; status: number; reason: string; tokenInvalid: boolean }
  /** A timeout, a connection failure, 429 or 5xx: try again later. */
  | { result: 'retry'; status: number | null; reason: string };

/** APNs reasons meaning the token will never work again (Zulip's list). */
const INVALID_TOKEN_REASONS = new Set(['Unregistered', 'BadDeviceToken', 'DeviceTokenNotForTopic']);

/** Pushes stay deliverable for a day when the device is offline (Zulip's time_to_live). */
const EXPIRATION_SECONDS = 24 * 3600;

/** An idle connection is closed after this long; the next push opens a new one. */
const IDLE_CLOSE_MS = 60_000;

export interface ApnsSender {
  send(request: ApnsRequest): Promise<ApnsOutcome>;
  close(): Promise<void>;
}

interface Failure {
  status?: number | string;
  response?: { reason?: string };
  error?: { message?: string };
}

export function classifyFailure(failure: Failure): ApnsOutcome {
  const status = typeof failure.status === 'number' ? failure.status : Number(failure.status) || null;
  const reason = failure.response?.reason ?? failure.error?.message ?? 'unknown error';
  if (status === null) return { result: 'retry', status: null, reason };
  if (status === 410 || INVALID_TOKEN_REASONS.has(reason)) return { result: 'rejected', status, reason, tokenInvalid: true };
  // 403 ExpiredProviderToken: the library makes a new JWT; the retry carries it.
  if (status === 429 || status >= 500 || reason === 'ExpiredProviderToken') return { result: 'retry', status, reason };
  return { result: 'rejected', status, reason, tokenInvalid: false };
}

/** A connection to APNs as configured (opened on the first send, closed when idle). */
export function createApnsSender(config: ApnsConfig): ApnsSender {
  const url = new URL(config.url);
  const key = readFileSync(config.keyFile);
  let provider: apn.Provider | null = null;
  let idleTimer: NodeJS.Timeout | null = null;
  let inFlight = 0;

  function open(): apn.Provider {
    provider ??= new apn.Provider({
      token: { key, keyId: config.keyId, teamId: config.teamId },
      address: url.hostname,
      port: url.port ? Number(url.port) : 443,
      requestTimeout: config.requestTimeoutMs,
      connectionRetryLimit: 0,
      ...(config.ca ? { ca: [config.ca] } : {}),
    });
    return provider;
  }

  async function shutdown(): Promise<void> {
    if (idleTimer) clearTimeout(idleTimer);
    idleTimer = null;
    const current = provider;
    provider = null;
    if (current) await current.shutdown();
  }

  return {
    async send(request) {
      if (idleTimer) clearTimeout(idleTimer);
      idleTimer = null;
      inFlight++;
      try {
        const notification = new apn.Notification();
        notification.rawPayload = request.payload;
        notification.topic = request.topic;
        notification.id = request.apnsId;
        notification.pushType = 'alert';
        notification.priority = 10;
        notification.expiry = Math.floor(Date.now() / 1000) + EXPIRATION_SECONDS;
        const { sent, failed } = await open().send(notification, request.token);
        if (sent.length > 0) return { result: 'sent' };
        return classifyFailure((failed[0] ?? {}) as Failure);
      } catch (error) {
        return { result: 'retry', status: null, reason: error instanceof Error ? error.message : String(error) };
      } finally {
        inFlight--;
        if (inFlight === 0) {
          idleTimer = setTimeout(() => void shutdown(), IDLE_CLOSE_MS);
          idleTimer.unref();
        }
      }
    },
    close: shutdown,
  };
}

/**
 * The sender for the current configuration: made on first use, replaced when the configuration
 * changes (tests change it on a running server), none when APNs is not configured.
 */
export function createApnsSenders(): { forConfig(config: ApnsConfig | null): ApnsSender | null; close(): Promise<void> } {
  let current: { key: string; sender: ApnsSender } | null = null;
  return {
    forConfig(config) {
      if (!config) return null;
      const key = JSON.stringify(config);
      if (current?.key !== key) {
        void current?.sender.close();
        current = { key, sender: createApnsSender(config) };
      }
      return current.sender;
    },
    async close() {
      const last = current;
      current = null;
      await last?.sender.close();
    },
  };
}
