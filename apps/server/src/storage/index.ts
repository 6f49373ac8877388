// Storage from configuration: an S3-compatible bucket when PARLEY_S3_BUCKET is set, otherwise a folder
// on local disk ($PARLEY_DATA_DIR/uploads). See types.ts for the interface every caller uses.
import path from 'node:path';
import { createLocalStorage } from './local.ts';
import type { ObjectStorage, StorageConfig } from './types.ts';

export type { ObjectStorage, StorageConfig, ObjectRead, RangeRequest, ListedObject } from './types.ts';
export { parseRangeHeader } from './ranges.ts';

/**
 * PARLEY_S3_BUCKET (turns S3 on), PARLEY_S3_ENDPOINT (an S3-compatible server; path-style addressing
 * then, unless PARLEY_S3_PATH_STYLE=0), PARLEY_S3_PRESIGNED_DOWNLOADS=1 (downloads redirect to the
 * bucket); region and credentials as the AWS SDK reads them (AWS_REGION, AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_PROFILE, instance roles …).
 */
export function parseStorageConfig(env: NodeJS.ProcessEnv, dataDir: string): StorageConfig {
  const bucket = env.PARLEY_S3_BUCKET?.trim();
  if (!bucket) {
    if (env.PARLEY_S3_ENDPOINT) throw new Error('PARLEY_S3_ENDPOINT is set but PARLEY_S3_BUCKET is not: name the bucket to store files in');
    return { kind: 'local', dir: path.join(dataDir, 'uploads') };
  }
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new Error(`PARLEY_S3_BUCKET must be an S3 bucket name (3-63 characters: a-z 0-9 . -), got ${JSON.stringify(bucket)}`);
  const endpoint = env.PARLEY_S3_ENDPOINT?.trim() || null;
  if (endpoint !== null && !/^https?:\/\/[^/?#]+\/?$/.test(endpoint)) throw new Error(`PARLEY_S3_ENDPOINT must be http(s)://host[:port], got ${JSON.stringify(endpoint)}`);
  const pathStyle = env.PARLEY_S3_PATH_STYLE;
  return {
    kind: 's3',
    bucket,
    endpoint: endpoint?.replace(/\/$/, '') ?? null,
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    forcePathStyle: pathStyle === undefined || pathStyle === '' ? endpoint !== null : pathStyle === '1' || pathStyle === 'true',
    presignedDownloads: env.PARLEY_S3_PRESIGNED_DOWNLOADS === '1' || env.PARLEY_S3_PRESIGNED_DOWNLOADS === 'true',
  };
}

/** The storage backend of a configuration. */
export async function createStorage(config: StorageConfig): Promise<ObjectStorage> {
  if (config.kind === 'local') return createLocalStorage(config.dir);
  const { createS3Storage } = await import('./s3.ts');
  return createS3Storage(config);
}
