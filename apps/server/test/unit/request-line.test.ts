// The access log line of GET /events' lean route (http/logging.ts createRequestLineWriter) is the line
// requestLogging writes through pino for the same request.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, createRequestLineWriter, type RequestLine } from '../../src/http/logging.ts';

function sinkLogger(level: string) {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: createLogger(level, sink), lines };
}

const parsed = (line: string) => {
  const { time, ...rest } = JSON.parse(line) as Record<string, unknown>;
  expect(typeof time).toBe('number');
  return rest;
};

describe('request line writer', () => {
  it('writes the text pino writes for the same fields, in the same order', () => {
    for (const child of [false, true]) {
      const base = sinkLogger('info');
      const logger = child ? base.logger.child({ worker: 2 }) : base.logger;
      const write = createRequestLineWriter(logger);
      for (const line of [
        { reqId: '2f1c3a4e-0000-4000-8000-000000000001', method: 'GET', path: '/api/v1/events', operation: 'get-events', userId: 12, status: 200, ms: 1.234567, aborted: false },
        { reqId: 'poll-42.a:b', method: 'GET', path: '/api/v1/events', operation: 'get-events', userId: 7, status: 499, ms: 45012.5, aborted: true },
      ] satisfies RequestLine[]) {
        expect(write(line)).toBe(true);
        logger.info(
          { req_id: line.reqId, method: line.method, path: line.path, operation: line.operation, user_id: line.userId, status: line.status, ms: line.ms, ...(line.aborted ? { aborted: true } : {}) },
          'request',
        );
      }
      const [leanA, pinoA, leanB, pinoB] = base.lines;
      expect(base.lines).toHaveLength(4);
      expect(Object.keys(JSON.parse(leanA!))).toEqual(Object.keys(JSON.parse(pinoA!)));
      expect(parsed(leanA!)).toEqual(parsed(pinoA!));
      expect(Object.keys(JSON.parse(leanB!))).toEqual(Object.keys(JSON.parse(pinoB!)));
      expect(parsed(leanB!)).toEqual(parsed(pinoB!));
      expect(leanA!.endsWith('}\n')).toBe(true);
    }
  });

  it('writes nothing when info is off', () => {
    const { logger, lines } = sinkLogger('warn');
    const write = createRequestLineWriter(logger);
    expect(write({ reqId: 'x', method: 'GET', path: '/api/v1/events', operation: 'get-events', userId: 1, status: 200, ms: 1, aborted: false })).toBe(false);
    expect(lines).toEqual([]);
  });
});
