// The lane POST /register's state reads go through (src/lib/lane.ts): never more runs at once than its
// limit, the waiting ones in arrival order, and a failed run gives its place back.
import { describe, expect, it } from 'vitest';
import { createLane } from '../../src/lib/lane.ts';

/** A run the test finishes when it chooses. */
function gate() {
  let open!: () => void;
  let fail!: (error: Error) => void;
  const done = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { done, open, fail };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('lane', () => {
  it('runs at most its limit at once and lets the others in in arrival order', async () => {
    const lane = createLane(2);
    const gates = Array.from({ length: 5 }, gate);
    const started: number[] = [];
    let atOnce = 0;
    let most = 0;
    const runs = gates.map((g, i) =>
      lane.run(async () => {
        started.push(i);
        most = Math.max(most, ++atOnce);
        try {
          await g.done;
          return i;
        } finally {
          atOnce--;
        }
      }),
    );
    await tick();
    expect(started).toEqual([0, 1]);
    expect([lane.running, lane.waiting]).toEqual([2, 3]);
    gates[1]!.open();
    await tick();
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.open();
    gates[2]!.open();
    await tick();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    gates[3]!.open();
    gates[4]!.open();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4]);
    expect(most).toBe(2);
    expect([lane.running, lane.waiting]).toEqual([0, 0]);
  });

  it('gives a failed run’s place to the next one, and the failure to its caller', async () => {
    const lane = createLane(1);
    const first = gate();
    const failing = lane.run(() => first.done);
    const next = lane.run(async () => 'next');
    await tick();
    expect([lane.running, lane.waiting]).toEqual([1, 1]);
    first.fail(new Error('state read failed'));
    await expect(failing).rejects.toThrow('state read failed');
    await expect(next).resolves.toBe('next');
    expect([lane.running, lane.waiting]).toEqual([0, 0]);
  });

  it('refuses a limit below one', () => {
    expect(() => createLane(0)).toThrow(/at least 1/);
  });
});
