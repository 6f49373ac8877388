// http/idle-collection.ts: one full collection once the server has been quiet for a while after
// serving requests that grew the heap; none while requests keep coming, none again until new requests
// came, none when the heap has hardly grown since the previous one. The clock is
// vitest's (fake timers): the test steps time itself, so it counts collections, never waits.
import { EventEmitter } from 'node:events';
import http from 'node:http';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startIdleCollection, type IdleCollection } from '../../src/http/idle-collection.ts';

const collections: IdleCollection[] = [];
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'performance'] });
});
afterEach(() => {
  for (const c of collections.splice(0)) c.stop();
  vi.useRealTimers();
});

describe('idle collection', () => {
  it('collects once after requests stop, not while they come, and again only after new ones', () => {
    // It only counts the server's `request` events: a server that is not listening, told of requests.
    const server = http.createServer();
    // A request and its answer, over at once.
    const request = () => {
      const res = new EventEmitter();
      server.emit('request', {}, res);
      res.emit('close');
    };
    let collected = 0;
    // The heap grows by 40 MB with each request here (the server collects at 32 MB of growth).
    let heap = 0;
    const served = () => {
      request();
      heap += 40e6;
    };
    // Quiet means 1 s without a request here (2 s in the server).
    collections.push(startIdleCollection(server, { collect: () => collected++, idleMs: 1_000, checkMs: 200, heapUsed: () => heap }));
    vi.advanceTimersByTime(1_600);
    expect(collected).toBe(0); // never served anything: nothing to give back

    // A request every 150 ms for 2 s: never quiet for 1 s.
    for (let i = 0; i < 14; i++) {
      served();
      vi.advanceTimersByTime(150);
    }
    expect(collected).toBe(0);
    vi.advanceTimersByTime(2_000);
    expect(collected).toBe(1);
    vi.advanceTimersByTime(1_500);
    expect(collected).toBe(1); // quiet still, nothing new to give back

    served();
    vi.advanceTimersByTime(2_000);
    expect(collected).toBe(2);
  });

  it('does not collect after requests that left the heap hardly grown', () => {
    const server = http.createServer();
    let collected = 0;
    let heap = 100e6;
    collections.push(startIdleCollection(server, { collect: () => collected++, idleMs: 1_000, checkMs: 200, heapUsed: () => heap, minGrowthBytes: 32e6 }));
    const request = () => {
      const res = new EventEmitter();
      server.emit('request', {}, res);
      res.emit('close');
    };
    request();
    heap += 10e6;
    vi.advanceTimersByTime(2_000);
    expect(collected).toBe(0);
    // Another request, and now the heap has grown by more than the threshold since the start: collected.
    request();
    heap += 30e6;
    vi.advanceTimersByTime(2_000);
    expect(collected).toBe(1);
  });

  it('does not collect while a request is being served, however long it takes', () => {
    const server = http.createServer();
    let collected = 0;
    collections.push(startIdleCollection(server, { collect: () => collected++, idleMs: 1_000, checkMs: 200, heapUsed: () => 0, minGrowthBytes: 0 }));
    // A large upload: one request, answered after 5 s.
    const res = new EventEmitter();
    server.emit('request', {}, res);
    vi.advanceTimersByTime(5_000);
    expect(collected).toBe(0);
    res.emit('close');
    vi.advanceTimersByTime(1_600);
    expect(collected).toBe(1);
  });
});
