// The body of an answer that is a stored object (an uploaded file, an avatar, an export): streamed
// from storage with backpressure, nothing for HEAD, and the storage stream closed whichever side
// stops first. A read error after the headers went out can only cut the response short (logged).
import type { Request, Response } from 'express';
import type { Logger } from './logging.ts';
import type { ObjectRead } from '../storage/types.ts';
import { transferred } from './idle-collection.ts';

export async function streamStoredBody(req: Request, res: Response, read: ObjectRead, logger: Logger, failure: { msg: string; [field: string]: unknown }): Promise<void> {
  if (req.method === 'HEAD') {
    read.body.destroy();
    res.end();
    return;
  }
  await new Promise<void>((resolve) => {
    read.body.on('error', (error) => {
      const { msg, ...fields } = failure;
      logger.error({ err: error, ...fields }, msg);
      res.destroy(error);
      resolve();
    });
    res.on('close', () => {
      read.body.destroy();
      resolve();
    });
    read.body.on('data', (chunk: Buffer) => transferred(chunk.length));
    read.body.pipe(res);
  });
}
