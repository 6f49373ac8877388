// The server secret protects API keys at rest: keys are stored AES-256-GCM encrypted and found through
// an HMAC-SHA256 of the key. Every process serving one database must share the secret
// (PARLEY_SECRET_KEY, or the same $PARLEY_DATA_DIR/secret.key file).
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface ApiKeyCipher {
  lookupHash(apiKey: string): string;
  encrypt(apiKey: string): string;
  decrypt(ciphertext: string): string;
  /** Constant-time comparison of a presented key with the stored one. */
  matches(presented: string, ciphertext: string): boolean;
}

export function loadOrCreateSecret(configured: string | undefined, dataDir: string): Buffer {
  if (configured) {
    const secret = /^[0-9a-f]+$/i.test(configured) && configured.length % 2 === 0 ? Buffer.from(configured, 'hex') : Buffer.from(configured, 'base64');
    if (secret.length < 32) throw new Error('PARLEY_SECRET_KEY must hold at least 32 bytes (64 hex characters)');
    return secret;
  }
  const file = path.join(dataDir, 'secret.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32);
  writeFileSync(file, secret.toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secret;
}

export function createApiKeyCipher(secret: Buffer): ApiKeyCipher {
  const derive = (info: string) => Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), info, 32));
  const macKey = derive('parley api-key lookup');
  const encKey = derive('parley api-key encryption');
  const cipher: ApiKeyCipher = {
    lookupHash: (apiKey) => createHmac('sha256', macKey).update(apiKey).digest('hex'),
    encrypt(apiKey) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', encKey, iv);
      const body = Buffer.concat([c.update(apiKey, 'utf8'), c.final()]);
      return ['v1', iv.toString('base64'), c.getAuthTag().toString('base64'), body.toString('base64')].join(':');
    },
    decrypt(ciphertext) {
      const [version, iv, tag, body] = ciphertext.split(':');
      if (version !== 'v1' || !iv || !tag || !body) throw new Error('unknown API key ciphertext format');
      const d = createDecipheriv('aes-256-gcm', encKey, Buffer.from(iv, 'base64'));
      d.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([d.update(Buffer.from(body, 'base64')), d.final()]).toString('utf8');
    },
    matches(presented, ciphertext) {
      const stored = Buffer.from(cipher.decrypt(ciphertext));
      const given = Buffer.from(presented);
      return stored.length === given.length && timingSafeEqual(stored, given);
    },
  };
  return cipher;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** 32 alphanumeric characters from a CSPRNG (rejection sampling, no modulo bias). */
export function generateApiKey(): string {
  let key = '';
  while (key.length < 32) {
    for (const byte of randomBytes(48)) {
      if (byte < 248 && key.length < 32) key += ALPHANUMERIC[byte % 62];
    }
  }
  return key;
}

export const isWellFormedApiKey = (key: string) => /^[A-Za-z0-9]{32}$/.test(key);
