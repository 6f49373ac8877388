// Objects in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2 …) through the official AWS SDK v3, so
// that several Parley processes on several machines share the same files. A write streams into S3's
// multipart upload through two fixed part buffers of 5 MiB (S3's smallest part): one is sent while
// the other fills, so an upload holds 10 MiB whatever the file's size, and allocates nothing per part
// (@aws-sdk/lib-storage concatenates the chunks of every part anew, which held 3-4 parts' worth at
// once in bench/uploads.bench.ts); a file under one part is one PutObject. A failed or aborted write
// aborts the multipart upload, so no part of it stays. Reads stream the object (or a Range of it) from
// GetObject. The SDK is loaded only when this backend is configured.
import type { Readable } from 'node:stream';
import { checkKey, type ListedObject, type ObjectRead, type ObjectStorage, type ObjectWrite, type RangeRequest, type StorageConfig } from './types.ts';
import { rangeHeaderValue, resolveRange } from './ranges.ts';

type S3Config = Extract<StorageConfig, { kind: 's3' }>;

const PART_BYTES = 5 * 1024 * 1024;

export async function createS3Storage(config: S3Config): Promise<ObjectStorage> {
  const sdk = await import('@aws-sdk/client-s3');
  const { getSignedUrl } = await import('@aws-sdk/s3-request-presigner');
  const client = new sdk.S3Client({
    region: config.region,
    ...(config.endpoint ? { endpoint: config.endpoint } : {}),
    forcePathStyle: config.forcePathStyle,
    ...(config.credentials ? { credentials: config.credentials } : {}),
    // S3-compatible servers often lack the SDK's newer default checksums (CRC32 headers, aws-chunked
    // trailers); AWS itself keeps them.
    ...(config.endpoint ? { requestChecksumCalculation: 'WHEN_REQUIRED' as const, responseChecksumValidation: 'WHEN_REQUIRED' as const } : {}),
  });
  const Bucket = config.bucket;
  const isMissing = (error: unknown) => {
    const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
  };

  const head = async (key: string) => {
    checkKey(key);
    try {
      const answer = await client.send(new sdk.HeadObjectCommand({ Bucket, Key: key }));
      return { size: Number(answer.ContentLength ?? 0), contentType: answer.ContentType ?? null };
    } catch (error) {
      if (isMissing(error)) return null;
      throw error;
    }
  };

  return {
    kind: 's3',
    head,

    async put(key: string, body: Readable, options: ObjectWrite) {
      checkKey(key);
      const params = { Bucket, Key: key, ContentType: options.contentType, ...(options.contentDisposition ? { ContentDisposition: options.contentDisposition } : {}) };
      const signal = options.signal;
      const abortError = () => (signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      // Two part buffers, filled in turn: one is sent while the other fills (the next waits for it).
      const buffers = [Buffer.allocUnsafe(PART_BYTES), Buffer.allocUnsafe(PART_BYTES)];
      let filling = 0;
      let filled = 0;
      let size = 0;
      let uploadId: string | null = null;
      const parts: Array<{ PartNumber: number; ETag: string }> = [];
      let sending: Promise<void> | null = null;
      const sendPart = async (data: Buffer, partNumber: number) => {
        if (uploadId === null) {
          const created = await client.send(new sdk.CreateMultipartUploadCommand(params), { abortSignal: signal });
          uploadId = created.UploadId ?? null;
          if (uploadId === null) throw new Error('S3 answered no UploadId');
        }
        const answer = await client.send(new sdk.UploadPartCommand({ Bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: data, ContentLength: data.length }), { abortSignal: signal });
        parts.push({ PartNumber: partNumber, ETag: answer.ETag! });
      };
      try {
        for await (const chunk of body as AsyncIterable<Buffer>) {
          if (signal?.aborted) throw abortError();
          size += chunk.length;
          let offset = 0;
          while (offset < chunk.length) {
            const copied = chunk.copy(buffers[filling]!, filled, offset);
            filled += copied;
            offset += copied;
            if (filled === PART_BYTES) {
              // A full part: wait for the one before it (its buffer is the next to fill), then send it.
              await sending;
              const partNumber = parts.length + (sending ? 1 : 0) + 1;
              const data = buffers[filling]!;
              sending = sendPart(data, partNumber);
              sending.catch(() => {}); // awaited before the next part or at the end
              filling = 1 - filling;
              filled = 0;
            }
          }
        }
        await sending;
        if (uploadId === null) {
          // The whole file fits one part: one PutObject.
          await client.send(new sdk.PutObjectCommand({ ...params, Body: buffers[filling]!.subarray(0, filled), ContentLength: filled }), { abortSignal: signal });
        } else {
          if (filled > 0) await sendPart(buffers[filling]!.subarray(0, filled), parts.length + 1);
          parts.sort((a, b) => a.PartNumber - b.PartNumber);
          await client.send(new sdk.CompleteMultipartUploadCommand({ Bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }), { abortSignal: signal });
        }
      } catch (error) {
        await sending?.catch(() => {});
        if (uploadId !== null) await client.send(new sdk.AbortMultipartUploadCommand({ Bucket, Key: key, UploadId: uploadId })).catch(() => {});
        body.destroy();
        throw signal?.aborted ? abortError() : error;
      }
      return { size };
    },

    async get(key: string, range?: RangeRequest | null): Promise<ObjectRead | { unsatisfiable: true; size: number } | null> {
      checkKey(key);
      if (range && 'suffix' in range) {
        // The last n bytes, as an absolute range (not every S3-compatible server takes `bytes=-n`).
        const found = await head(key);
        if (!found) return null;
        const resolved = resolveRange(range, found.size);
        if (resolved === 'unsatisfiable') return { unsatisfiable: true, size: found.size };
        range = resolved;
      }
      let answer;
      try {
        answer = await client.send(new sdk.GetObjectCommand({ Bucket, Key: key, ...(range ? { Range: rangeHeaderValue(range) } : {}) }));
      } catch (error) {
        if (isMissing(error)) return null;
        const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (e?.name === 'InvalidRange' || e?.$metadata?.httpStatusCode === 416) {
          const found = await head(key);
          return found ? { unsatisfiable: true, size: found.size } : null;
        }
        throw error;
      }
      const body = answer.Body as Readable;
      // "bytes <start>-<end>/<size>" for a range; the length alone otherwise.
      const m = answer.ContentRange ? /^bytes (\d+)-(\d+)\/(\d+)$/.exec(answer.ContentRange) : null;
      if (range && m) {
        return { size: Number(m[3]), contentType: answer.ContentType ?? null, body, range: { start: Number(m[1]), end: Number(m[2]) } };
      }
      return { size: Number(answer.ContentLength ?? 0), contentType: answer.ContentType ?? null, body, range: null };
    },

    async delete(keys: readonly string[]) {
      for (const key of keys) checkKey(key);
      for (let i = 0; i < keys.length; i += 1000) {
        const batch = keys.slice(i, i + 1000);
        if (batch.length === 1) {
          await client.send(new sdk.DeleteObjectCommand({ Bucket, Key: batch[0]! }));
          continue;
        }
        const answer = await client.send(new sdk.DeleteObjectsCommand({ Bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
        const failures = (answer.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
        if (failures.length > 0) throw new Error(`S3 could not delete ${failures.length} objects: ${failures[0]!.Code} ${failures[0]!.Message}`);
      }
    },

    async *list(prefix: string): AsyncIterable<ListedObject> {
      let token: string | undefined;
      do {
        const page = await client.send(new sdk.ListObjectsV2Command({ Bucket, Prefix: prefix, ...(token ? { ContinuationToken: token } : {}) }));
        for (const item of page.Contents ?? []) {
          if (item.Key) yield { key: item.Key, size: Number(item.Size ?? 0), lastModified: item.LastModified ?? new Date(0) };
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    },

    async removeIncomplete(before: Date) {
      // Multipart uploads a crashed process left unfinished (a lifecycle rule on the bucket does the
      // same); servers that cannot list them (some S3-compatible ones) leave it to that rule.
      let removed = 0;
      try {
        const page = await client.send(new sdk.ListMultipartUploadsCommand({ Bucket }));
        for (const u of page.Uploads ?? []) {
          if (u.Key && u.UploadId && u.Initiated && u.Initiated < before) {
            await client.send(new sdk.AbortMultipartUploadCommand({ Bucket, Key: u.Key, UploadId: u.UploadId }));
            removed++;
          }
        }
      } catch {
        return removed;
      }
      return removed;
    },

    async redirectUrl(key, options) {
      checkKey(key);
      if (!config.presignedDownloads) return null;
      return getSignedUrl(
        client,
        new sdk.GetObjectCommand({ Bucket, Key: key, ResponseContentType: options.contentType, ResponseContentDisposition: options.contentDisposition }),
        { expiresIn: options.expiresInSeconds },
      );
    },

    async close() {
      client.destroy();
    },
  };
}
