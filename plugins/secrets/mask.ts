/** Values shorter than this are not masked: replacing every "abc" would garble output and reveal little. */
export const MIN_MASKED_CHARS = 4;
export const MASK = '***';

/**
 * Replaces every exact occurrence of a known secret value in execution output. Longest values go
 * first in one pass, so a value containing another is masked whole and masks are never re-matched.
 */
export function maskSecrets(text: string, values: string[]): string {
  const known = [...new Set(values.filter((v) => typeof v === 'string' && v.length >= MIN_MASKED_CHARS))].sort((a, b) => b.length - a.length);
  if (!known.length || !text) return text;
  const pattern = new RegExp(known.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return text.replace(pattern, MASK);
}
