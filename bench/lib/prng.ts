// mulberry32: a small, fast, seedable PRNG (32 bits of state), for runs that must draw the same numbers
// every time (the organization bench/lib/org-sim-seed.ts seeds, the security-invariant test's actions
// in apps/server/test/helpers/invariant-model.ts). Not for anything secret: use node:crypto for that.
// Dependency-free, so that the tests can share it without pulling in any of the benches.

/** A stream of floats in [0, 1), the same for the same seed. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
