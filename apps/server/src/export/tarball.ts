// A .tar.gz written as it is made: entries go one after another into a tar stream (tar-stream's
// pack), through gzip (node:zlib), into any writable (a file, or the body of a storage upload). Each
// entry waits for the one before it, and for the output's backpressure, so at most one entry's bytes
// are in flight: a file copied from storage is streamed through, never held whole.
//
// Why tar-stream: it is the streaming tar writer of the npm ecosystem (mafintosh; used by tar-fs,
// dockerode, …): entries of known size from buffers or streams, no file system needed, which is what an
// archive of database rows and storage objects is. node-tar (isaacs) writes from the file system and
// would need the export staged on disk first.
import { createGzip } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Readable, Transform, type Writable } from 'node:stream';
import { pack as createPack } from 'tar-stream';

export interface TarGzWriter {
  /** A file of these bytes (JSON tables). */
  addBuffer(name: string, data: Buffer): Promise<void>;
  /** A file read from `body`, which must yield exactly `size` bytes. */
  addStream(name: string, size: number, body: Readable): Promise<void>;
  /** Ends the archive; resolves once every byte reached the output. */
  finish(): Promise<{ size: number; sha256: string }>;
  /** Ends the archive with a failure (the output is destroyed with it). */
  abort(error: Error): void;
}

export function createTarGzWriter(output: Writable, mtime = new Date()): TarGzWriter {
  const pack = createPack();
  const hash = createHash('sha256');
  let size = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  // tar-stream's streams are streamx streams: read as an async iterable into node's pipeline.
  const written = pipeline(Readable.from(pack), createGzip({ level: 6 }), tap, output);
  // A failure of the output surfaces here and through the entry being written.
  written.catch(() => undefined);

  const entry = (name: string, entrySize: number, feed: (sink: ReturnType<typeof pack.entry>) => Promise<void>) =>
    new Promise<void>((resolve, reject) => {
      const sink = pack.entry({ name, size: entrySize, mtime, mode: 0o644, type: 'file' }, (error) => (error ? reject(error) : resolve()));
      feed(sink).catch((error: unknown) => {
        const failure = error instanceof Error ? error : new Error(String(error));
        sink.destroy(failure);
        reject(failure);
      });
    });

  return {
    addBuffer(name, data) {
      return entry(name, data.length, async (sink) => {
        sink.end(data);
      });
    },
    addStream(name, entrySize, body) {
      return entry(name, entrySize, async (sink) => {
        for await (const chunk of body) {
          if (!sink.write(chunk as Buffer)) await once(sink as unknown as NodeJS.EventEmitter, 'drain');
        }
        (sink as unknown as { end(): void }).end();
      });
    },
    async finish() {
      pack.finalize();
      await written;
      return { size, sha256: hash.digest('hex') };
    },
    abort(error) {
      pack.destroy(error);
      output.destroy(error);
    },
  };
}
