// Sending a message with ten inline images against one without: thumbnails are made by a job off the
// request path, so linking ten uploaded images should cost a send little more than linking ten
// ordinary URLs. Not a test: it prints figures. From the repository root:
//
//   npx tsx bench/thumbnails.bench.ts
//
// Environment:
//   BENCH_SENDS     sends per row (40), taken in turns between the rows
//   BENCH_KEEP=1    keep the work directory (the server's log)
//   PARLEY_BENCH_SERVER_CMD  how to start Parley (see bench/lib/processes.ts)
//
// One Parley process on local storage with its embedded PostgreSQL (a fresh data directory: the
// organization and its owner made at first start). Sets of ten 1280x960 JPEG photographs (one set per send) are
// uploaded and their thumbnails made (the job; polled until rendered) before the timed sends, and sets
// of ten small text files; every send links files no earlier message linked. Rows, each a POST
// /api/v1/messages to a channel, sequential, latency median and p90:
// - without: ten links to https://example.com/… (no previews);
// - ten links to uploaded text files: the attachment links a send records, without previews (where
//   the cost of linking uploads lies, previews aside);
// - ten inline images, thumbnails made: the same text linking the ten uploaded images (each renders a
//   `message_inline_image` block with its thumbnail URL);
// - ten inline images, thumbnails pending: ten images uploaded just before each send (upload not
//   timed), so their thumbnail jobs run while the message is sent (placeholders rendered).
// The ratio of each to "without" is the figure (goal ≤ 1.5×). Compare within one run.
import { mkdtempSync, readFileSync, rmSync, chmodSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { freePort, startServer } from './lib/processes.ts';
import { fmt, markdownTable, median, percentile } from './lib/stats.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SENDS = Number(process.env.BENCH_SENDS ?? 40);
const GOAL = 1.5;
const SERVER_CMD = process.env.PARLEY_BENCH_SERVER_CMD || 'node --max-semi-space-size=2 --import tsx apps/server/src/main.ts';
const log = (line: string) => console.log(`[bench] ${line}`);

const requireFromServer = createRequire(new URL('../apps/server/package.json', import.meta.url));
type Sharp = (input: Buffer, options: { raw: { width: number; height: number; channels: 3 } }) => { jpeg(options: { quality: number }): { toBuffer(): Promise<Buffer> } };
const sharp = requireFromServer('sharp') as Sharp;

/** A photograph-like JPEG (random noise: the decoder has real work). */
async function photo(width: number, height: number): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } }).jpeg({ quality: 80 }).toBuffer();
}

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'parley-bench-thumbnails-'));
  chmodSync(dir, 0o755); // the embedded PostgreSQL runs as its own user
  log(`work directory ${dir}; ${SENDS} sends per row`);
  const port = await freePort();
  const dataDir = path.join(dir, 'parley');
  const server = await startServer({
    label: 'parley',
    command: SERVER_CMD,
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'production', PARLEY_DATA_DIR: dataDir, PARLEY_RATE_LIMIT: '0', PARLEY_LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port) },
    port,
    readyPath: '/api/v1/server_settings',
    logFile: path.join(dir, 'parley.log'),
    timeoutMs: 180_000,
  });
  try {
    const zuliprc = readFileSync(path.join(dataDir, 'zuliprc'), 'utf8');
    const auth = `Basic ${Buffer.from(`${/^email=(.*)$/m.exec(zuliprc)![1]!}:${/^key=(.*)$/m.exec(zuliprc)![1]!}`).toString('base64')}`;
    const api = async (method: string, p: string, body?: URLSearchParams | FormData) => {
      const res = await fetch(`${server.url}/api/v1${p}`, { method, headers: { Authorization: auth }, body });
      const json = (await res.json()) as Record<string, unknown>;
      if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const channel = 'thumbnail bench';
    await api('POST', '/users/me/subscriptions', new URLSearchParams({ subscriptions: JSON.stringify([{ name: channel }]) }));

    const picture = await photo(1280, 960);
    const uploadOne = async (i: number, data: Buffer = picture, type = 'image/jpeg') => {
      const form = new FormData();
      form.append('file', new Blob([data], { type }), `photo-${i}.${type === 'image/jpeg' ? 'jpg' : 'txt'}`);
      return (await api('POST', '/user_uploads', form))['url'] as string;
    };
    const uploadTen = async () => Promise.all(Array.from({ length: 10 }, (_, i) => uploadOne(i)));
    const thumbnailOf = (url: string) => `/user_uploads/thumbnail/${url.slice('/user_uploads/'.length)}/840x560.webp`;
    const contentOf = (urls: string[]) => urls.map((u, i) => `picture ${i}: [photo-${i}.png](${u})`).join('\n');

    // Every send links files no other message links yet, as a message of freshly uploaded pictures
    // does (re-linking the same files to every send would grow their attachment records' message
    // lists, and the events announcing them, send after send).
    log(`uploading ${(SENDS + 5) * 10} images and waiting for their thumbnails (the job)`);
    const madeSets: string[][] = [];
    for (let i = 0; i < SENDS + 5; i++) madeSets.push(await uploadTen());
    const deadline = Date.now() + 600_000;
    for (const set of madeSets) {
      for (;;) {
        const probe = String((await api('POST', '/messages/render', new URLSearchParams({ content: contentOf(set) })))['rendered']);
        if (probe.includes(thumbnailOf(set[0]!)) && !probe.includes('image-loading-placeholder')) break;
        if (Date.now() > deadline) throw new Error('thumbnails were not made within 600 s');
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const textSets: string[][] = [];
    for (let i = 0; i < SENDS + 5; i++) textSets.push(await Promise.all(Array.from({ length: 10 }, (_, j) => uploadOne(j, Buffer.from(`notes ${i} ${j}\n`), 'text/plain'))));
    const plain = contentOf(Array.from({ length: 10 }, () => `https://example.com/${randomBytes(18).toString('base64url')}/photo.png`));

    const send = async (content: string) => {
      const start = process.hrtime.bigint();
      await api('POST', '/messages', new URLSearchParams({ type: 'stream', to: channel, topic: 'pictures', content }));
      return Number(process.hrtime.bigint() - start) / 1e6;
    };
    // Warm-up.
    for (let i = 0; i < 5; i++) {
      await send(plain);
      await send(contentOf(textSets[SENDS + i]!));
      await send(contentOf(madeSets[SENDS + i]!));
    }
    const rows = { without: [] as number[], files: [] as number[], made: [] as number[], pending: [] as number[] };
    for (let i = 0; i < SENDS; i++) {
      const fresh = await uploadTen();
      // In turns, the order changing every round.
      const order: Array<keyof typeof rows> = i % 2 === 0 ? ['without', 'files', 'made', 'pending'] : ['pending', 'made', 'files', 'without'];
      const contents = { without: plain, files: contentOf(textSets[i]!), made: contentOf(madeSets[i]!), pending: contentOf(fresh) };
      for (const row of order) rows[row].push(await send(contents[row]));
    }
    const base = median(rows.without);
    const table = [
      ['ten links, no previews', rows.without],
      ['ten links to uploaded text files (attachments, no previews)', rows.files],
      ['ten inline images, thumbnails made', rows.made],
      ['ten inline images, thumbnails pending (jobs running)', rows.pending],
    ].map(([name, values]) => {
      const v = values as number[];
      const ratio = median(v) / base;
      return [name as string, fmt(median(v), 1), fmt(percentile(v, 90), 1), `${fmt(ratio, 2)}×`, name === 'ten links, no previews' ? '' : ratio <= GOAL ? 'yes' : 'NO'];
    });
    console.log(`\nPOST /messages, ${SENDS} sends per row (sequential), ms; goal ≤ ${GOAL}× the message without images\n`);
    console.log(markdownTable(['message', 'median ms', 'p90 ms', 'ratio', `≤ ${GOAL}×`], table));
  } finally {
    await server.stop();
    if (process.env.BENCH_KEEP !== '1') rmSync(dir, { recursive: true, force: true });
    else log(`kept ${dir}`);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
