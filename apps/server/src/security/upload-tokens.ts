// Signed, expiring tokens of the temporary URLs of uploaded files (GET /user_uploads/{realm_id_str}/
// {filename} answers `/user_uploads/temporary/<token>/<name>`): the file's path and the time the token
// was made, signed with HMAC-SHA256 under a key derived from the server secret, so that any process
// sharing the secret accepts it, and nobody can make or alter one. Zulip's tokens (Django's
// TimestampSigner) last SIGNED_ACCESS_TOKEN_VALIDITY_IN_SECONDS, 60 s by default; so do these.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

export const UPLOAD_TOKEN_VALIDITY_SECONDS = 60;

export interface UploadTokenSigner {
  /** A token for the file at `pathId`, made at `issuedAtSeconds` (now by default). */
  sign(pathId: string, issuedAtSeconds?: number): string;
  /** The path of the file a token names, or null when it is malformed, altered or expired. */
  verify(token: string, nowSeconds?: number): string | null;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

export function createUploadTokenSigner(secret: Buffer): UploadTokenSigner {
  const key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'parley user_uploads temporary url', 32));
  const mac = (payload: string) => createHmac('sha256', key).update(payload, 'utf8').digest();
  return {
    sign(pathId, issuedAtSeconds = nowSeconds()) {
      const payload = `${issuedAtSeconds}:${pathId}`;
      return `${Buffer.from(payload, 'utf8').toString('base64url')}.${mac(payload).toString('base64url')}`;
    },
    verify(token, now = nowSeconds()) {
      const dot = token.indexOf('.');
      if (dot <= 0 || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)) return null;
      const payload = Buffer.from(token.slice(0, dot), 'base64url').toString('utf8');
      const given = Buffer.from(token.slice(dot + 1), 'base64url');
      const expected = mac(payload);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
      const m = /^(\d{1,12}):(.+)$/s.exec(payload);
      if (!m) return null;
      const issued = Number(m[1]);
      // Expired once older than the validity; a token from the future (clocks of several processes) only within it.
      if (now - issued > UPLOAD_TOKEN_VALIDITY_SECONDS || issued - now > UPLOAD_TOKEN_VALIDITY_SECONDS) return null;
      return m[2]!;
    },
  };
}
