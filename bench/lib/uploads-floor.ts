// The floors of bench/uploads.bench.ts: the least a server could do to take a file over HTTP and give
// it back, run as a separate Node process like Parley. Not Parley code and not a design for it: no
// authentication, no multipart parsing, no database.
//
//   PUT /disk/<name>   the request body into a file of the folder     GET /disk/<name>   the file back
//   PUT /s3/<key>      the body into the bucket (Parley's S3 module:   GET /s3/<key>      GetObject back
//                      the SDK's multipart upload)
//   GET /ready
//
// Usage: node --import tsx bench/lib/uploads-floor.ts '<json: { port, dir, s3: { endpoint, bucket } }>'
import { createReadStream, createWriteStream } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createS3Storage } from '../../apps/server/src/storage/s3.ts';

const config = JSON.parse(process.argv[2]!) as { port: number; dir: string; s3: { endpoint: string; bucket: string } };
const storage = await createS3Storage({
  kind: 's3',
  bucket: config.s3.bucket,
  endpoint: config.s3.endpoint,
  region: 'us-east-1',
  forcePathStyle: true,
  presignedDownloads: false,
  credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
});

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url!, 'http://floor');
    const [, kind, ...rest] = url.pathname.split('/');
    const name = rest.join('/');
    if (kind === 'ready') return void res.end('ok');
    if (req.method === 'PUT' && kind === 'disk') {
      await pipeline(req, createWriteStream(path.join(config.dir, path.basename(name)), { highWaterMark: 1024 * 1024 }));
      return void res.end('{}');
    }
    if (req.method === 'GET' && kind === 'disk') {
      await pipeline(createReadStream(path.join(config.dir, path.basename(name)), { highWaterMark: 256 * 1024 }), res);
      return;
    }
    if (req.method === 'PUT' && kind === 's3') {
      await storage.put(name, req, { contentType: 'application/octet-stream' });
      return void res.end('{}');
    }
    if (req.method === 'GET' && kind === 's3') {
      const read = await storage.get(name);
      if (!read || 'unsatisfiable' in read) {
        res.statusCode = 404;
        return void res.end();
      }
      res.setHeader('Content-Length', String(read.size));
      await pipeline(read.body, res);
      return;
    }
    res.statusCode = 404;
    res.end();
  } catch (error) {
    res.statusCode = 500;
    res.end(String(error));
  }
});
server.listen(config.port, '127.0.0.1');
