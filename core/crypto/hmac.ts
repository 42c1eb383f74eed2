import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** Lower-case hex HMAC-SHA256 of `data` under `key`. */
export const hmacSha256Hex = (key: string, data: string | Buffer): string => createHmac('sha256', key).update(data).digest('hex');

/**
 * Whether a signature a sender presented equals the one expected, in time that does not depend on
 * where they differ. Lengths are compared first: the expected length is public (a hex digest).
 */
export function sameSignature(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Equal-time comparison of secrets of any length: their digests are compared. */
export function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}
