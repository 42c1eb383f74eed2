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

/** The most `workspace.sparse` entries a job or manifest may name, and the longest one. */
export const MAX_SPARSE_PATHS = 100;
export const MAX_SPARSE_PATH = 500;

/**
 * Why `p` is not a folder `workspace.sparse` may name (git sparse-checkout's cone mode: a folder
 * of the repository, relative, no pattern), or null when it is.
 */
export function sparsePathProblem(p: string): string | null {
  if (p.length === 0 || p.length > MAX_SPARSE_PATH) return `must be 1 to ${MAX_SPARSE_PATH} characters`;
  if (p.startsWith('/') || p.startsWith('-')) return 'must be a folder of the repository, relative, not beginning with "/" or "-"';
  if (/[\0-\x1f\x7f*?[\]\\!#]/.test(p)) return 'must not contain control characters or any of * ? [ ] \\ ! # (cone mode takes folders, not patterns)';
  if (p.split('/').some((part) => part === '..' || part === '.' || part === '.git')) return 'must not contain ".", ".." or ".git" as a part';
  return null;
}
