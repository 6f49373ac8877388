// A load-generator process of bench/organization.bench.ts: simulates the users the bench hands it, each
// behaving like a Zulip client (register, a long-poll held at all times, presence every 60 s, a channel
// read every 30 s, a message every ~2 min with typing first, a reaction every ~15 min to a message of the
// channel it viewed, marking read), and reports
// latencies and deliveries to the bench over IPC when asked. Started by the bench with a lower
// priority (os.setPriority) so that it yields the CPU to the server.
//
// Kept light so that it does not compete with the server more than it must:
//   - two keep-alive agents: one socket per parked poll (bounded by the users of this process), and at
//     most API_SOCKETS sockets for every other request (requests queue in the agent beyond that);
//   - request bodies and headers made once per user when it joins (only ids and counters change);
//   - one timer per user and activity, jittered, so that users never act in lockstep;
//   - poll answers scanned for what the bench needs (message ids), nothing else kept.
import http from 'node:http';
import type { SimUser } from './org-sim-seed.ts';
import { mobileRegisterBody } from './mobile-register.ts';
import { mulberry32 } from './prng.ts';

const API_SOCKETS = 48;

export type Operation = 'register' | 'poll' | 'presence' | 'read' | 'typing' | 'send' | 'react' | 'mark_read';
export const OPERATIONS: Operation[] = ['register', 'poll', 'presence', 'read', 'typing', 'send', 'react', 'mark_read'];

export interface WorkerStart {
  type: 'start';
  api: string;
  users: SimUser[];
  /** New users come online at random moments within this many seconds. */
  joinSeconds: number;
  everyoneChannelId: number;
  /** Probe users only register and poll. */
  passive: boolean;
  /** Share of messages sent to the everyone channel (the rest go to one of the sender's small channels). */
  everyoneShare: number;
}

export type ToWorker = WorkerStart | { type: 'report' } | { type: 'receipts'; messageId: number } | { type: 'stop' };

export interface WorkerReport {
  type: 'report';
  /** Latencies (ms) of answered requests by operation (polls: counted only, they wait by design). */
  latencies: Partial<Record<Operation, number[]>>;
  counts: Partial<Record<Operation, number>>;
  errors: Partial<Record<Operation, number>>;
  firstError?: string;
  /** [message id, send start (epoch ms), channel id] of the messages this process sent. */
  sends: [number, number, number][];
  /** [message id, last arrival (epoch ms), receipts] of the messages polls received. */
  receipts: [number, number, number][];
  /** [user id, epoch ms when its queue was registered] of users that came online since the last report. */
  online: [number, number][];
  parked: number;
  /** Events received by poll answers, by type ("(none)": answers without events, i.e. heartbeats). */
  events: Record<string, number>;
  /** With BENCH_DEBUG_DELIVERY=1: [message id, user id] of every message a user's poll received. */
  receivedBy?: [number, number][];
}

const DEBUG_DELIVERY = process.env.BENCH_DEBUG_DELIVERY === '1';

const now = () => performance.timeOrigin + performance.now();
const jitter = (ms: number, random: () => number, share = 0.2) => ms * (1 - share + 2 * share * random());
/**
 * Every run draws the same numbers (BENCH_SEED, 1 by default): each simulated user has a PRNG per
 * activity (joining, reading, sending, reacting, marking read), seeded by the run's seed, the user and
 * the activity, so that a user does the same things at the same moments of its time online in every
 * run, whatever the order its activities' timers fire in. Runs then differ by the server alone, not by
 * how many messages happened to go to the everyone channel (with Math.random, the message events of a
 * 60-s hold at 750 users ranged from 226 to 515 a second between runs, 2026-11-28).
 */
const SEED = Number(process.env.BENCH_SEED ?? 1);
const ACTIVITIES = ['join', 'read', 'send', 'react', 'markRead'] as const;
const randomsOf = (userId: number): Record<(typeof ACTIVITIES)[number], () => number> =>
  Object.fromEntries(ACTIVITIES.map((activity, i) => [activity, mulberry32(Math.imul(SEED, 0x9e3779b1) ^ Math.imul(userId, 0x85ebca6b) ^ Math.imul(i + 1, 0xc2b2ae35))])) as Record<
    (typeof ACTIVITIES)[number],
    () => number
  >;
const FORM = 'application/x-www-form-urlencoded';
const form = (fields: Record<string, string | number | boolean>) => new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString();
const EMOJI = ['octopus', 'smile', 'heart', 'tada', 'thumbs_up', 'rocket', 'eyes', 'fire'];
/**
 * How often a user reacts, in seconds. Mattermost's load-test-ng simulates users from measured usage:
 * 0.13 reactions per post (its action frequencies), each to a post of the channel the user is viewing.
 * At a message every ~2 min, that is a reaction every ~15 min, to a message of the channel last read.
 * (Until 2026-11-27 every user reacted every 2 min to the messages its polls brought, which are mostly
 * the organization-wide channel's: ~8 times that rate, nearly all of it fanned out to everyone.)
 */
const REACT_SECONDS = Number(process.env.BENCH_REACT_SECONDS ?? 900);

// Each user long-polls on a connection of their own, kept alive, as Zulip's clients do (a requests
// Session, the mobile app's connection). Polls of different users taking turns on a shared pool of
// sockets would hop between the server's worker processes at every poll, which real clients do not.
const pollAgents = new Set<http.Agent>();
const newPollAgent = () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1, maxFreeSockets: 1, timeout: 0 });
  pollAgents.add(agent);
  return agent;
};
const apiAgent = new http.Agent({ keepAlive: true, maxSockets: API_SOCKETS, maxFreeSockets: API_SOCKETS });

let report: WorkerReport = emptyReport();
function emptyReport(): WorkerReport {
  return { type: 'report', latencies: {}, counts: {}, errors: {}, sends: [], receipts: [], online: [], parked: 0, events: {} };
}
const receiptIndex = new Map<number, [number, number, number]>();
/** Receipts per message id since start (for the probe). */
const receiptTotals = new Map<number, number>();
let stopping = false;
let parked = 0;
const active = new Set<http.ClientRequest>();

function record(op: Operation, ms: number | null, status: number, body: string) {
  report.counts[op] = (report.counts[op] ?? 0) + 1;
  if (status === 200) {
    if (ms !== null) (report.latencies[op] ??= []).push(ms);
  } else if (!stopping) {
    report.errors[op] = (report.errors[op] ?? 0) + 1;
    report.firstError ??= `${op}: ${status} ${body.slice(0, 200)}`;
  }
}

function request(agent: http.Agent, url: string, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = http.request(url, { method, agent, headers: body !== undefined ? { ...headers, 'content-type': FORM, 'content-length': String(Buffer.byteLength(body)) } : headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        active.delete(req);
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (e) => {
        active.delete(req);
        resolve({ status: 0, body: String(e) });
      });
    });
    active.add(req);
    req.on('error', (e) => {
      active.delete(req);
      resolve({ status: 0, body: String(e) });
    });
    req.end(body);
  });
}

class User {
  readonly random: ReturnType<typeof randomsOf>;
  private readonly pollAgent = newPollAgent();
  private readonly auth: Record<string, string>;
  private queueId = '';
  private lastEventId = -1;
  /** Messages of others among the newest of the channel this user read last (what it may react to). */
  private viewed: number[] = [];
  private readonly unread: number[] = [];
  private readonly reacted = new Set<number>();
  private readonly timers: NodeJS.Timeout[] = [];
  private sent = 0;
  private readonly registerBody: string;
  private readonly readUrls: string[];
  private readonly presenceBody: string;

  constructor(
    private readonly api: string,
    private readonly me: SimUser,
    private readonly start: WorkerStart,
  ) {
    this.random = randomsOf(me.id);
    this.auth = { authorization: `Basic ${Buffer.from(`${me.email}:${me.apiKey}`).toString('base64')}` };
    // Probe users need a queue, not the state (fetch_event_types []: no state, every event type).
    this.registerBody = mobileRegisterBody({ passive: start.passive });
    this.readUrls = me.channelIds.map(
      (id) => `${api}/messages?${form({ anchor: 'newest', num_before: 50, num_after: 0, apply_markdown: true, client_gravatar: true, narrow: JSON.stringify([{ operator: 'channel', operand: id }]) })}`,
    );
    this.presenceBody = form({ status: 'active', new_user_input: true, ping_only: false, slim_presence: true, last_update_id: -1 });
  }

  async join(): Promise<void> {
    if (!(await this.register())) return;
    void this.pollLoop();
    if (this.start.passive) return;
    const every = (ms: number, random: () => number, act: () => Promise<void>, first = random() * ms) => {
      const run = () => {
        if (stopping) return;
        void act().finally(() => {
          if (!stopping) this.timers.push(setTimeout(run, jitter(ms, random)));
        });
      };
      this.timers.push(setTimeout(run, first));
    };
    every(60_000, this.random.join, () => this.presence(), 0);
    every(30_000, this.random.read, () => this.read());
    every(120_000, this.random.send, () => this.send());
    every(REACT_SECONDS * 1000, this.random.react, () => this.react());
    every(30_000, this.random.markRead, () => this.markRead());
  }

  private async register(): Promise<boolean> {
    let answer: { status: number; body: string };
    for (;;) {
      const t0 = performance.now();
      answer = await request(apiAgent, `${this.api}/register`, 'POST', this.auth, this.registerBody);
      record('register', performance.now() - t0, answer.status, answer.body);
      // Overloaded: a client waits as told, then registers again (the error is counted).
      if (answer.status !== 503 || stopping) break;
      await new Promise((r) => setTimeout(r, jitter(1000 * Number(/"retry-after":(\d+)/.exec(answer.body)?.[1] ?? 5), this.random.join)));
    }
    if (answer.status !== 200) return false;
    // Only the two fields the client needs from a large body.
    const queue = /"queue_id":"([^"]+)"/.exec(answer.body);
    const last = /"last_event_id":(-?\d+)/.exec(answer.body);
    if (!queue || !last) return false;
    this.queueId = queue[1]!;
    this.lastEventId = Number(last[1]);
    report.online.push([this.me.id, now()]);
    return true;
  }

  private async pollLoop(): Promise<void> {
    while (!stopping) {
      const url = `${this.api}/events?queue_id=${this.queueId}&last_event_id=${this.lastEventId}`;
      parked++;
      const answer = await request(this.pollAgent, url, 'GET', this.auth);
      parked--;
      const at = now();
      if (stopping) return;
      record('poll', null, answer.status, answer.body);
      if (answer.status !== 200) {
        if (answer.body.includes('BAD_EVENT_QUEUE_ID')) {
          if (!(await this.register())) return;
          continue;
        }
        await new Promise((r) => setTimeout(r, 1000));
        continue;
      }
      const events = (JSON.parse(answer.body) as { events: { id: number; type: string; message?: { id: number; sender_id: number } }[] }).events;
      if (!events.length) report.events['(none)'] = (report.events['(none)'] ?? 0) + 1;
      for (const e of events) {
        if (e.id > this.lastEventId) this.lastEventId = e.id;
        report.events[e.type] = (report.events[e.type] ?? 0) + 1;
        if (e.type !== 'message' || !e.message) continue;
        const id = e.message.id;
        let r = receiptIndex.get(id);
        if (!r) {
          r = [id, at, 0];
          receiptIndex.set(id, r);
          report.receipts.push(r);
        }
        r[1] = Math.max(r[1], at);
        r[2]++;
        if (DEBUG_DELIVERY) (report.receivedBy ??= []).push([id, this.me.id]);
        receiptTotals.set(id, (receiptTotals.get(id) ?? 0) + 1);
        if (e.message.sender_id !== this.me.id) this.unread.push(id);
      }
    }
  }

  private async presence(): Promise<void> {
    const t0 = performance.now();
    const a = await request(apiAgent, `${this.api}/users/me/presence`, 'POST', this.auth, this.presenceBody);
    record('presence', performance.now() - t0, a.status, a.body);
  }

  private async read(): Promise<void> {
    const url = this.readUrls[Math.floor(this.random.read() * this.readUrls.length)]!;
    const t0 = performance.now();
    const a = await request(apiAgent, url, 'GET', this.auth);
    record('read', performance.now() - t0, a.status, a.body);
    if (a.status !== 200) return;
    const messages = (JSON.parse(a.body) as { messages: { id: number; sender_id: number }[] }).messages;
    this.viewed = messages.slice(-10).filter((m) => m.sender_id !== this.me.id).map((m) => m.id);
  }

  private async send(): Promise<void> {
    const ids = this.me.channelIds;
    const channelId = this.random.send() < this.start.everyoneShare || ids.length === 1 ? ids[0]! : ids[1 + Math.floor(this.random.send() * (ids.length - 1))]!;
    const topic = `topic ${1 + (this.sent % 5)}`;
    const typing = (op: string) => form({ op, type: 'stream', stream_id: channelId, topic });
    let t0 = performance.now();
    let a = await request(apiAgent, `${this.api}/typing`, 'POST', this.auth, typing('start'));
    record('typing', performance.now() - t0, a.status, a.body);
    await new Promise((r) => setTimeout(r, jitter(3_000, this.random.send, 0.5)));
    if (stopping) return;
    t0 = performance.now();
    a = await request(apiAgent, `${this.api}/typing`, 'POST', this.auth, typing('stop'));
    record('typing', performance.now() - t0, a.status, a.body);
    this.sent++;
    const body = form({
      type: 'stream',
      to: channelId,
      topic,
      content: `Message ${this.sent} from user ${this.me.id}: the quick brown fox jumps over the lazy dog, and the bench times its delivery.`,
      queue_id: this.queueId,
      local_id: `${this.sent}.01`,
    });
    const started = now();
    t0 = performance.now();
    a = await request(apiAgent, `${this.api}/messages`, 'POST', this.auth, body);
    record('send', performance.now() - t0, a.status, a.body);
    const id = /"id":(\d+)/.exec(a.body);
    if (a.status === 200 && id) report.sends.push([Number(id[1]), started, channelId]);
  }

  private async react(): Promise<void> {
    const candidates = this.viewed.filter((id) => !this.reacted.has(id));
    if (!candidates.length) return;
    const id = candidates[Math.floor(this.random.react() * candidates.length)]!;
    this.reacted.add(id);
    const t0 = performance.now();
    const a = await request(apiAgent, `${this.api}/messages/${id}/reactions`, 'POST', this.auth, form({ emoji_name: EMOJI[this.me.id % EMOJI.length]! }));
    record('react', performance.now() - t0, a.status, a.body);
  }

  private async markRead(): Promise<void> {
    if (!this.unread.length) return;
    const ids = this.unread.splice(0);
    const t0 = performance.now();
    const a = await request(apiAgent, `${this.api}/messages/flags`, 'POST', this.auth, form({ op: 'add', flag: 'read', messages: JSON.stringify(ids) }));
    record('mark_read', performance.now() - t0, a.status, a.body);
  }

  async leave(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    if (this.queueId) await request(apiAgent, `${this.api}/events?queue_id=${this.queueId}`, 'DELETE', this.auth);
  }
}

const users: User[] = [];

process.on('message', (message: ToWorker) => {
  switch (message.type) {
    case 'start':
      for (const u of message.users) {
        const user = new User(message.api, u, message);
        users.push(user);
        setTimeout(() => void user.join(), user.random.join() * message.joinSeconds * 1000);
      }
      break;
    case 'report': {
      const out = report;
      out.parked = parked;
      report = emptyReport();
      receiptIndex.clear();
      process.send!(out);
      break;
    }
    case 'receipts':
      process.send!({ type: 'receipts', messageId: message.messageId, count: receiptTotals.get(message.messageId) ?? 0, parked });
      break;
    case 'stop':
      stopping = true;
      void Promise.all(users.splice(0).map((u) => u.leave())).finally(() => {
        for (const req of active) req.destroy();
        for (const agent of pollAgents) agent.destroy();
        apiAgent.destroy();
        process.send!({ type: 'stopped' }, () => process.exit(0));
      });
      break;
    default:
      break;
  }
});
