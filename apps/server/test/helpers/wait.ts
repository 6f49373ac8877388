// Waiting for work done after commit (job queue, notifications): polls `probe` every 100 ms until it
// gives a truthy value, and fails with `what` once `timeoutMs` has passed.
export async function waitFor<T>(probe: () => Promise<T | null | undefined | false>, options: { timeoutMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${options.what ?? 'a condition'}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
