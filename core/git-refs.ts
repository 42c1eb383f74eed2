/**
 * Names of git refs a request may carry (a job's `git.ref` and `git.branch`): what
 * `git check-ref-format --allow-onelevel` accepts, and never a name git would read as an option.
 * A commit SHA (full or abbreviated) is such a name too.
 */

/** Why `name` is not a ref name git accepts, or null when it is. */
export function refNameProblem(name: string): string | null {
  if (name.startsWith('-')) return 'must not begin with "-" (git would read it as an option)';
  // Control characters, DEL, space and the characters git gives meaning in revisions and patterns.
  if (/[\0-\x20\x7f~^:?*[\\]/.test(name)) return 'must not contain control characters, spaces or any of ~ ^ : ? * [ \\';
  if (name.includes('..')) return 'must not contain ".."';
  if (name.includes('@{')) return 'must not contain "@{"';
  if (name === '@') return 'must not be "@"';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'must not begin or end with "/" or contain "//"';
  if (name.endsWith('.')) return 'must not end with "."';
  for (const part of name.split('/')) {
    if (part.startsWith('.')) return 'no "/"-separated part may begin with "."';
    if (part.endsWith('.lock')) return 'no "/"-separated part may end with ".lock"';
  }
  return null;
}
