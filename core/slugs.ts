import { createHash, randomBytes } from 'node:crypto';

const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** `n` random lower-case letters and digits. */
export function randomAlphanumeric(n: number): string {
  return [...randomBytes(n)].map((b) => ALPHANUMERIC[b % ALPHANUMERIC.length]).join('');
}

/**
 * An org slug from a name: lower case, words joined by '-', at most 63 characters. A name without
 * letters or digits gets `org-` and a hash of the name: deterministic, so ensure by name finds it again.
 */
export function orgSlugFrom(name: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return slug || `org-${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
}

/** Another org slug after a collision: the derived one with a random suffix. */
export const varyOrgSlug = (name: string): string => `${orgSlugFrom(name).slice(0, 56)}-${randomAlphanumeric(6)}`;

export const ORG_SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Project slugs are 4 to 8 lower-case letters and digits; they prefix job ids. */
export const PROJECT_SLUG = /^[a-z0-9]{4,8}$/;

/** A project slug from a name, padded with random characters to the minimum length. */
export function projectSlugFrom(name: string): string {
  const base = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')
    .slice(0, 8);
  return base.length >= 4 ? base : base + randomAlphanumeric(4 - base.length);
}

/** Another candidate after a collision: keep a prefix, replace the tail with random characters. */
export function varySlug(slug: string, attempt: number): string {
  const tail = Math.min(2 + attempt, 8);
  const head = slug.slice(0, Math.max(0, 8 - tail));
  return head + randomAlphanumeric(Math.max(tail, 4 - head.length));
}
