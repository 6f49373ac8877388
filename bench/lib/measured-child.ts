// A bench's measured work in a child process of its own (as `manage export` / `manage import` run it),
// so that its RSS is the work's and not the seeding's: the bench runs its own script again with the
// environment that selects the child's part; the child prints `[bench]` lines (echoed here) and its
// figures as one JSON line.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Runs `scriptUrl` (import.meta.url of the bench) as `node --expose-gc --import tsx` with `env` added; returns the JSON figures it printed. */
export async function runMeasuredChild<T>(scriptUrl: string, env: Record<string, string>, what: string): Promise<T> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(scriptUrl)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    for (const line of text.split('\n')) if (line.startsWith('[bench]')) console.log(line);
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  const figures = output.split('\n').find((line) => line.startsWith('{'));
  if (code !== 0 || !figures) throw new Error(`${what} failed (exit ${code})`);
  return JSON.parse(figures) as T;
}

/**
 * This process's RSS in bytes, sampled every 50 ms from now (after a full collection, with
 * --expose-gc); `stop()` gives the baseline and the peak, the kernel's high-water mark (VmHWM) included.
 */
export function sampleRss(): { baseline: number; stop(): { baseline: number; peak: number } } {
  global.gc?.();
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  return {
    baseline,
    stop() {
      clearInterval(sampler);
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
      return { baseline, peak: Math.max(peak, process.memoryUsage().rss, hwm ? Number(hwm[1]) * 1024 : 0) };
    },
  };
}
