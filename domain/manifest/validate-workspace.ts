import { WORKSPACE_MODES } from './types.ts';
import { type Problems, at, expectObject, isString, kindOf, unknownKeys } from './problems.ts';
import { GitAccessError, pushRemoteKind } from '../../core/git-access.ts';
import { MAX_SPARSE_PATHS, sparsePathProblem } from '../../core/git-refs.ts';

/** The longest `workspace.key` (the jobs API's limit). */
const MAX_KEY = 200;
const GIT_KEYS = ['ref', 'branch', 'commit', 'commit_message', 'push', 'remote'] as const;
const GIT_CHOICES: Record<string, readonly string[]> = {
  commit: ['never', 'manual', 'auto', 'required'],
  push: ['never', 'on_success', 'required'],
};

/**
 * `workspace` of a workflow, a pipeline or one of their steps: `mode` one of job, session,
 * isolated; `key` names a session workspace, so it is required with session and meaningless
 * without it.
 */
export function checkWorkspace(problems: Problems, value: unknown, path: string): void {
  if (value === undefined || !expectObject(problems, value, path)) return;
  unknownKeys(problems, value, ['mode', 'key', 'sparse'], path);
  const { mode, key, sparse } = value;
  if (sparse !== undefined) {
    if (!Array.isArray(sparse) || sparse.length === 0 || sparse.length > MAX_SPARSE_PATHS)
      problems.add(at(path, 'sparse'), `workspace.sparse must be a list of 1 to ${MAX_SPARSE_PATHS} folders of the repository`);
    else
      sparse.forEach((p: unknown, i) => {
        const problem = isString(p) ? sparsePathProblem(p) : `must be a string, got ${kindOf(p)}`;
        if (problem) problems.add(`${at(path, 'sparse')}[${i}]`, `workspace.sparse[${i}] ${problem}`);
      });
  }
  if (mode !== undefined && !(WORKSPACE_MODES as readonly unknown[]).includes(mode)) {
    problems.add(at(path, 'mode'), `workspace.mode must be one of ${WORKSPACE_MODES.join(', ')}, got ${isString(mode) ? `'${mode}'` : kindOf(mode)}`);
  }
  if (key !== undefined && !(isString(key) && key.length <= MAX_KEY)) {
    problems.add(at(path, 'key'), `workspace.key must be a non-empty string of at most ${MAX_KEY} characters`);
  } else if (key !== undefined && mode !== 'session') {
    problems.add(at(path, 'key'), "workspace.key names a shared workspace: it needs workspace.mode 'session'");
  }
  if (mode === 'session' && key === undefined)
    problems.add(at(path, 'key'), "workspace.mode 'session' needs workspace.key (the name jobs share the workspace under)");
}

/** `git` of a workflow or a pipeline: the git controls its steps' jobs get (`branch` names the run branch). */
export function checkRunGit(problems: Problems, value: unknown, path: string): void {
  if (value === undefined || !expectObject(problems, value, path)) return;
  unknownKeys(problems, value, [...GIT_KEYS, 'depth'], path);
  const { depth } = value;
  if (depth !== undefined && !(Number.isInteger(depth) && (depth as number) >= 1 && (depth as number) <= 1_000_000))
    problems.add(at(path, 'depth'), 'git.depth must be a whole number from 1 to 1000000');
  for (const key of GIT_KEYS) {
    const v = value[key];
    if (v === undefined) continue;
    if (!isString(v)) problems.add(at(path, key), `git.${key} must be a non-empty string`);
    else if (GIT_CHOICES[key] && !GIT_CHOICES[key].includes(v)) problems.add(at(path, key), `git.${key} must be one of ${GIT_CHOICES[key].join(', ')}`);
    else if (key === 'remote') remoteProblem(problems, v, at(path, key));
  }
}

/** `git.remote`: 'origin' or an https or SSH URL, never a path or file:// (core/git-access.ts pushRemoteKind). */
function remoteProblem(problems: Problems, remote: string, path: string): void {
  try {
    pushRemoteKind(remote);
  } catch (e) {
    if (!(e instanceof GitAccessError)) throw e;
    problems.add(path, e.message);
  }
}
