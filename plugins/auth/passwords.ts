import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/** scrypt with N=2^15, r=8, p=1: about 30 ms and 32 MiB per check. */
const PARAMS = { N: 32_768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_BYTES = 32;

const derive = (password: string, salt: Buffer) =>
  new Promise<Buffer>((resolve, reject) => scrypt(password.normalize('NFKC'), salt, KEY_BYTES, PARAMS, (err, key) => (err ? reject(err) : resolve(key))));

/** `scrypt$<salt b64url>$<key b64url>`: what `users.password_hash` holds. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('base64url')}$${(await derive(password, salt)).toString('base64url')}`;
}

/** A stored hash nobody's password matches: checked for unknown accounts so they take as long as known ones. */
const NOBODY = `scrypt$${randomBytes(16).toString('base64url')}$${randomBytes(KEY_BYTES).toString('base64url')}`;

/** Whether the password matches the stored hash (constant-time compare); a missing hash never matches, after the same work. */
export async function checkPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const [scheme, salt, key] = (stored ?? NOBODY).split('$');
  const expected = Buffer.from(key ?? '', 'base64url');
  const actual = await derive(password, Buffer.from(salt ?? '', 'base64url'));
  return scheme === 'scrypt' && Boolean(stored) && expected.length === actual.length && timingSafeEqual(expected, actual);
}
