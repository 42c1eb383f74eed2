/** Values shorter than this are not masked: replacing every "abc" would garble output and reveal little. */
export const MIN_MASKED_CHARS = 4;
export const MASK = '***';

/**
 * A function that replaces every exact occurrence of the known secret values in execution output,
 * compiled once for many lines. Longest values go first in one pass, so a value containing another
 * is masked whole and masks are never re-matched.
 */
export function secretMasker(values: string[]): (text: string) => string {
  const known = [...new Set(values.filter((v) => typeof v === 'string' && v.length >= MIN_MASKED_CHARS))].sort((a, b) => b.length - a.length);
  if (!known.length) return (text) => text;
  const pattern = new RegExp(known.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return (text) => (text ? text.replace(pattern, MASK) : text);
}

export function maskSecrets(text: string, values: string[]): string {
  return secretMasker(values)(text);
}
