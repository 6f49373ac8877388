// The floor of messages.bench.ts's delivery row: the least a server could do to answer a parked
// long-poll and take the client's next one, as a bare node:http server in a Node process of its own
// (NODE_ENV=production, like Parley). Not Parley code and not a design for it.
//
//   GET  /api/v1/events?queue_id=…&last_event_id=…   parked (the query string is read, the
//                                                      Authorization header must be there; nothing checked)
//   POST /wake   body: one event's JSON text; every parked poll is answered with Parley's envelope
//                around it ({"result":"success","msg":"","events":[…],"queue_id":"…"}), then /wake
//   GET  /ready
//
// Keep-alive connections stay open as Parley's do (65 s).
import http from 'node:http';

interface Parked {
  res: http.ServerResponse;
  queueId: string;
}

let parked: Parked[] = [];

function sendJson(res: http.ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  if (req.method === 'GET' && path === '/api/v1/events') {
    const query = new URLSearchParams(queryAt < 0 ? '' : url.slice(queryAt + 1));
    const queueId = query.get('queue_id');
    if (!req.headers.authorization || !queueId || query.get('last_event_id') === null) return sendJson(res, 400, '{"result":"error","msg":"bad poll","code":"BAD_REQUEST"}');
    parked.push({ res, queueId });
    return;
  }
  if (req.method === 'POST' && path === '/wake') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const event = Buffer.concat(chunks).toString('utf8');
      const polls = parked;
      parked = [];
      for (const p of polls) {
        if (p.res.destroyed) continue;
        sendJson(p.res, 200, `{"result":"success","msg":"","events":[${event}],"queue_id":${JSON.stringify(p.queueId)}}`);
      }
      sendJson(res, 200, `{"result":"success","msg":"","answered":${polls.length}}`);
    });
    return;
  }
  if (path === '/ready') return sendJson(res, 200, '{"result":"success","msg":""}');
  sendJson(res, 404, '{"result":"error","msg":"Not Found","code":"BAD_REQUEST"}');
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
// (an ordinary exit on SIGTERM, so that node --cpu-prof writes its profile)
process.on('SIGTERM', () => process.exit(0));
