// http/idle-collection.ts: one full collection once the server has been quiet for a while after
// serving requests; none while requests keep coming, none again until new requests came.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startIdleCollection, type IdleCollection } from '../../src/http/idle-collection.ts';

const servers: http.Server[] = [];
const collections: IdleCollection[] = [];
afterEach(async () => {
  for (const c of collections.splice(0)) c.stop();
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function serve(): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((_req, res) => res.end('ok'));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('idle collection', () => {
  it('collects once after requests stop, not while they come, and again only after new ones', async () => {
    const { server, url } = await serve();
    let collected = 0;
    // Quiet means 1 s without a request here (2 s in the server).
    collections.push(startIdleCollection(server, { collect: () => collected++, idleMs: 1_000, checkMs: 200 }));
    await sleep(1_600);
    expect(collected).toBe(0); // never served anything: nothing to give back

    // A request every ~150 ms for 2 s: never quiet for 1 s.
    for (let i = 0; i < 14; i++) {
      await fetch(url).then((r) => r.text());
      await sleep(150);
    }
    expect(collected).toBe(0);
    await sleep(2_000);
    expect(collected).toBe(1);
    await sleep(1_500);
    expect(collected).toBe(1); // quiet still, nothing new to give back

    await fetch(url).then((r) => r.text());
    await sleep(2_000);
    expect(collected).toBe(2);
  }, 30_000);
});
