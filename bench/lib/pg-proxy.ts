// A counting TCP proxy in front of PostgreSQL: it passes bytes through unchanged and counts, in the
// client-to-server direction of the wire protocol, the statements executed (Query 'Q' and Execute 'E'
// messages) and the round trips (Query and Sync 'S', each of which the server answers with
// ReadyForQuery). Used to report PostgreSQL statements per request for Parley and its floors.
import net from 'node:net';

export interface PgCounts {
  statements: number;
  roundTrips: number;
  /** Explicit transactions: a Query of BEGIN, or the Bind of a statement prepared as BEGIN (as node-postgres and Prisma open them). */
  transactions: number;
}

export interface PgProxy {
  port: number;
  counts: PgCounts;
  reset(): void;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** Counts the frontend messages of one connection as its bytes stream through. */
function frontendCounter(counts: PgCounts) {
  let startup = true; // untyped messages until the StartupMessage
  let header = Buffer.alloc(0); // the bytes of a message header read so far
  let skip = 0; // bytes of the current message body still to pass
  // The first bytes of a Query's, Parse's or Bind's body, while they are read.
  let peek: { type: string; bytes: number[] } | null = null;
  const PEEK = 256;
  /** This connection's prepared statements (by name; "" the unnamed one): whether each is BEGIN. */
  const beginStatements = new Map<string, boolean>();
  /** The first two NUL-terminated strings of a body. */
  const cstrings = (bytes: number[]): [string, string] => {
    const first = bytes.indexOf(0);
    if (first < 0) return [String.fromCharCode(...bytes), ''];
    const second = bytes.indexOf(0, first + 1);
    return [String.fromCharCode(...bytes.slice(0, first)), String.fromCharCode(...bytes.slice(first + 1, second < 0 ? bytes.length : second))];
  };
  const isBegin = (text: string) => /^\s*begin\b/i.test(text);
  const peeked = (p: { type: string; bytes: number[] }) => {
    const [a, b] = cstrings(p.bytes);
    if (p.type === 'Q' && isBegin(a)) counts.transactions++;
    else if (p.type === 'P') beginStatements.set(a, isBegin(b)); // Parse: statement name, query
    else if (p.type === 'B' && beginStatements.get(b) === true) counts.transactions++; // Bind: portal, statement
  };
  return (chunk: Buffer) => {
    let at = 0;
    while (at < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - at);
        if (peek) {
          for (let i = 0; i < n && peek.bytes.length < PEEK; i++) peek.bytes.push(chunk[at + i]!);
          if (peek.bytes.length === PEEK || n === skip) {
            peeked(peek);
            peek = null;
          }
        }
        skip -= n;
        at += n;
        continue;
      }
      const need = startup ? 8 : 5;
      const take = Math.min(need - header.length, chunk.length - at);
      header = Buffer.concat([header, chunk.subarray(at, at + take)]);
      at += take;
      if (header.length < need) break;
      if (startup) {
        const length = header.readInt32BE(0);
        const code = header.readInt32BE(4);
        if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) startup = false;
        skip = length - 8;
      } else {
        const type = String.fromCharCode(header[0]!);
        if (type === 'Q' || type === 'E') counts.statements++;
        if (type === 'Q' || type === 'S') counts.roundTrips++;
        skip = header.readInt32BE(1) - 4;
        if (type === 'Q' || type === 'P' || type === 'B') peek = { type, bytes: [] };
      }
      header = Buffer.alloc(0);
    }
  };
}

export async function startPgProxy(upstreamPort: number): Promise<PgProxy> {
  const counts: PgCounts = { statements: 0, roundTrips: 0, transactions: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(upstreamPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    const count = frontendCounter(counts);
    client.on('data', (chunk: Buffer) => {
      count(chunk);
      upstream.write(chunk);
    });
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address() as net.AddressInfo;
  return {
    port: address.port,
    counts,
    reset() {
      counts.statements = 0;
      counts.roundTrips = 0;
      counts.transactions = 0;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
