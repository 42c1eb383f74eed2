/**
 * Name patterns of triggers and subscriptions: an exact name, a prefix (`release/*`), a suffix
 * (`*-prod`), or `*` for anything. A `*` anywhere else is a literal character only in
 * `matchesPattern`; `patternProblem` refuses it.
 */
export function matchesPattern(pattern: string, value: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('*') && !pattern.slice(0, -1).includes('*')) return value.startsWith(pattern.slice(0, -1));
  if (pattern.startsWith('*') && !pattern.slice(1).includes('*')) return value.endsWith(pattern.slice(1));
  return pattern === value;
}

/** Why a pattern is not one `matchesPattern` understands, or null. */
export function patternProblem(pattern: string): string | null {
  if (pattern.length === 0) return 'a pattern must not be empty';
  const inner = pattern.length > 1 ? pattern.slice(1, -1) : '';
  const stars = [...pattern].filter((c) => c === '*').length;
  if (stars > 1 || inner.includes('*')) return `'${pattern}': a wildcard may only open (*-prod) or close (release/*) a pattern`;
  return null;
}
