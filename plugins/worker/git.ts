import { execFile } from 'node:child_process';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ResolvedGit } from '../../core/ports/attempts.ts';
import { Aborted, WorkerFailure } from './failure.ts';
import { redactUrl, repoKind, type RepoAccess } from './git-access.ts';

/** The job's git controls (CreateJobRequest `git`), as stored. */
export interface GitControls {
  ref?: string;
  ref_policy?: 'auto' | 'env' | 'project_default' | 'explicit';
  branch?: string;
  create_branch?: 'never' | 'if_missing' | 'always';
  commit?: 'never' | 'manual' | 'auto' | 'required';
  commit_message?: string;
  push?: 'never' | 'on_success' | 'required';
  remote?: string;
}

export interface GitSetup {
  dir: string;
  url: string;
  access: RepoAccess;
  /** Access for `controls.remote` when it is a URL other than the clone's. */
  pushAccess: RepoAccess | null;
  controls: GitControls;
  jobId: string;
  /** The workflow or pipeline run the job is a step of (`${run_id}` in git.branch), else null. */
  runId: string | null;
  projectBranch: string;
  envName: string | null;
  /** The current release SHA of the job's environment (`ref_policy` env and auto), when it has one. */
  envReleaseSha: string | null;
  author: { name: string; email: string };
  signal: AbortSignal;
  log(line: string): Promise<void>;
}

const GIT_TIMEOUT_MS = 10 * 60_000;
/** Files the worker writes into the workspace; never committed. */
const WORKER_FILES = ['.svc/resources/', '.svc/coordination-inbox.md', '.svc/home/', '.svc/prompt.md', '.svc/steps/'];
export const DEFAULT_COMMIT_MESSAGE = 'svc: ${summary} (job ${job_id})';

const fill = (template: string, values: Record<string, string>) => template.replace(/\$\{(\w+)\}/g, (m, k: string) => values[k] ?? m);
/** A git.branch template filled for this job: `${job_id}`, and `${run_id}` (the job's own id outside a run). */
export const branchName = (template: string, s: Pick<GitSetup, 'jobId' | 'runId'>) => fill(template, { job_id: s.jobId, run_id: s.runId ?? s.jobId });

/** Measures a step of the attempt (a phase of its receipt). */
export type Timed = <T>(name: string, fn: () => Promise<T>) => Promise<T>;

/** A checkout after the process: commits and pushes per its controls; the reason the attempt must fail, if one. */
export interface Checkout {
  readonly resolved: ResolvedGit;
  finish(succeeded: boolean, summary: string, timed: Timed): Promise<string | null>;
}

/** Clones the remote into `s.dir` without checking anything out, for an attempt (no template, no fsync; the author in its config). */
export async function cloneBare(s: GitSetup): Promise<void> {
  const config = ['core.fsync=none', `user.name=${s.author.name}`, `user.email=${s.author.email}`].flatMap((c) => ['--config', c]);
  await run(s, ['clone', '--quiet', '--no-checkout', '--template=', ...config, s.url, s.dir], path.dirname(s.dir), `cloning ${redactUrl(s.url)} failed`);
}

/** The commit a branch, tag or (abbreviated) SHA names in the clone, or null. */
export async function resolveRef(s: GitSetup, ref: string): Promise<{ sha: string; remoteBranch: string | null } | null> {
  const remoteBranch = await commitAt(s, `refs/remotes/origin/${ref}`);
  const sha = remoteBranch ?? (await commitAt(s, `refs/tags/${ref}`)) ?? (/^[0-9a-f]{4,40}$/i.test(ref) ? await commitAt(s, ref) : null);
  return sha ? { sha, remoteBranch } : null;
}

export const commitAt = (s: GitSetup, rev: string) => git(s, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]).catch(() => null);

/** Keeps the worker's own files out of every commit. */
export async function excludeWorkerFiles(s: GitSetup): Promise<void> {
  const exclude = path.join(s.dir, '.git', 'info', 'exclude');
  const current = await readFile(exclude, 'utf8').catch(() => '');
  const missing = WORKER_FILES.filter((f) => !current.split('\n').includes(f));
  await mkdir(path.dirname(exclude), { recursive: true });
  if (missing.length) await appendFile(exclude, `${missing.join('\n')}\n`);
}

/** A checkout prepared for an attempt, and what happens to it after (commit, push), per the spec's git controls. */
export class GitWorkspace implements Checkout {
  constructor(
    private readonly s: GitSetup,
    readonly resolved: ResolvedGit,
    /** The remote tip a create_branch always reset left behind: the push replaces exactly that tip. */
    private readonly replacedTip: string | null,
  ) {}

  /** Clones, resolves the ref per `ref_policy`, and checks out the branch per `branch`/`create_branch`. */
  static async prepare(s: GitSetup): Promise<GitWorkspace> {
    const c = s.controls;
    const { ref, source } = chooseRef(c, s.projectBranch, s.envName, s.envReleaseSha);
    await s.log(`$ git clone ${redactUrl(s.url)} (ref ${ref}, ${source})`);
    // The workspace lives as long as the attempt: no template (copying the sample hooks cost more
    // than the clone itself) and no fsync.
    await cloneBare(s);
    const at = (rev: string) => commitAt(s, rev);
    const found = await resolveRef(s, ref);
    if (!found) throw new WorkerFailure(`git ref '${ref}' (${source}) is not a branch, tag or commit of ${redactUrl(s.url)}`);
    const { sha, remoteBranch } = found;

    const branch = c.branch ? branchName(c.branch, s) : remoteBranch ? ref : null;
    let replacedTip: string | null = null;
    let head = sha;
    if (branch) {
      const existing = branch === ref ? remoteBranch : await at(`refs/remotes/origin/${branch}`);
      const mode = c.create_branch ?? 'if_missing';
      if (mode === 'never' && !existing) throw new WorkerFailure(`git.branch '${branch}' does not exist on the remote and git.create_branch is never`);
      const start = mode === 'always' || !existing ? sha : existing;
      if (mode === 'always' && existing && existing !== sha) replacedTip = existing;
      head = start;
      await run(s, ['checkout', '--quiet', '-B', branch, start], s.dir, `checking out branch ${branch} failed`);
    } else {
      await run(s, ['checkout', '--quiet', '--detach', sha], s.dir, `checking out ${ref} failed`);
    }
    if ((c.push ?? 'never') !== 'never' && !branch) {
      throw new WorkerFailure(`git.push is ${c.push} but there is no branch to push: '${ref}' is not a branch, so set git.branch`);
    }
    await excludeWorkerFiles(s);
    await s.log(`checked out ${branch ? `branch ${branch}` : 'a detached HEAD'} at ${head}`);
    return new GitWorkspace(s, { resolved_ref: ref, resolved_sha: head, resolved_branch: branch, ref_source: source, pushed: false, commits: [] }, replacedTip);
  }

  /**
   * A checkout an earlier attempt (or job) left: fetched, and kept as it is (branch, commits and
   * uncommitted work), so the attempt continues where the last one stopped.
   */
  static async reopen(s: GitSetup): Promise<GitWorkspace> {
    await run(s, ['fetch', '--quiet', '--prune', 'origin'], s.dir, 'git fetch failed');
    const head = await commitAt(s, 'HEAD');
    const branch = await git(s, ['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => null);
    if ((s.controls.push ?? 'never') !== 'never' && !branch)
      throw new WorkerFailure(`git.push is ${s.controls.push} but the reused checkout has no branch to push`);
    await excludeWorkerFiles(s);
    await s.log(`continuing the checkout on ${branch ? `branch ${branch}` : 'a detached HEAD'} at ${head ?? 'no commit'}`);
    return new GitWorkspace(
      s,
      { resolved_ref: branch, resolved_sha: head, resolved_branch: branch, ref_source: 'workspace', pushed: false, commits: [] },
      null,
    );
  }

  /** Commit, then push, per the controls (the phases commit and push). */
  async finish(succeeded: boolean, summary: string, timed: Timed): Promise<string | null> {
    let failure = this.wantsCommit(succeeded) ? await timed('commit', () => this.commit(succeeded, summary)) : null;
    if (!failure && this.wantsPush(succeeded)) failure = await timed('push', () => this.push());
    return failure;
  }

  /**
   * After the process, per git.commit: auto stages everything and commits, even after a failure;
   * required commits on success and fails the attempt when nothing changed. Returns the reason the
   * attempt must fail, if one.
   */
  async commit(succeeded: boolean, summary: string): Promise<string | null> {
    const c = this.s.controls;
    const mode = c.commit ?? 'manual';
    if (!this.wantsCommit(succeeded)) return null;
    await git(this.s, ['add', '-A']);
    const changed = await git(this.s, ['diff', '--cached', '--quiet']).then(
      () => false,
      () => true,
    );
    if (!changed) return mode === 'required' ? 'git.commit is required but the attempt left no changes to commit' : null;
    const message = fill(c.commit_message ?? DEFAULT_COMMIT_MESSAGE, { job_id: this.s.jobId, summary });
    await run(this.s, ['commit', '--quiet', '--no-verify', '-m', message], this.s.dir, 'git commit failed');
    const sha = await git(this.s, ['rev-parse', 'HEAD']);
    this.resolved.commits.push(sha);
    await this.s.log(`committed ${sha}`);
    return null;
  }

  /** Whether the worker commits at all (auto: always; required: on success; manual and never: not). */
  wantsCommit(succeeded: boolean): boolean {
    const mode = this.s.controls.commit ?? 'manual';
    return mode === 'auto' || (mode === 'required' && succeeded);
  }

  /** Whether `push` would push anything: the worker committed, and the policy asks for it. */
  wantsPush(succeeded: boolean): boolean {
    const push = this.s.controls.push ?? 'never';
    return push !== 'never' && this.resolved.commits.length > 0 && (push === 'required' || succeeded);
  }

  /**
   * Pushes the worker's commits to the branch. on_success: a failed push is logged and the attempt
   * keeps its result; required: a failed push fails the attempt (the returned reason).
   */
  async push(): Promise<string | null> {
    const remote = this.s.controls.remote ?? 'origin';
    const ref = `refs/heads/${this.resolved.resolved_branch}`;
    const target = `HEAD:${ref}`;
    const lease = this.replacedTip ? [`--force-with-lease=${ref}:${this.replacedTip}`] : [];
    try {
      await this.s.log(`$ git push ${lease.join(' ')}${lease.length ? ' ' : ''}${redactUrl(remote)} ${target}`);
      await run(this.s, ['push', '--quiet', ...lease, remote, target], this.s.dir, 'git push failed', this.s.pushAccess ?? this.s.access);
      this.resolved.pushed = true;
      this.resolved.workspace?.pushed_to.push({ branch: this.resolved.resolved_branch!, sha: this.resolved.commits.at(-1)! });
      return null;
    } catch (err) {
      if (err instanceof Aborted) throw err;
      if (this.s.controls.push === 'required') return (err as Error).message;
      await this.s.log(`push failed (git.push on_success: the attempt keeps its result): ${(err as Error).message}`);
      return null;
    }
  }
}

/**
 * The ref per `ref_policy` and where it came from. auto: the environment's release SHA when the job
 * names an environment that has one, then git.ref (manifest defaults are merged into it at creation),
 * then the project branch.
 */
export function chooseRef(c: GitControls, projectBranch: string, envName: string | null, envReleaseSha: string | null): { ref: string; source: string } {
  const policy = c.ref_policy ?? (c.ref ? 'explicit' : 'auto');
  if (policy === 'env') {
    if (!envName) throw new WorkerFailure('git.ref_policy env needs the job to name an environment (env_name)');
    if (!envReleaseSha) throw new WorkerFailure(`git.ref_policy env: environment ${envName} has no current release SHA (deploy a release to it first)`);
    return { ref: envReleaseSha, source: 'env' };
  }
  if (policy === 'project_default') return { ref: projectBranch, source: 'project_default' };
  if (policy === 'auto' && envName && envReleaseSha) return { ref: envReleaseSha, source: 'env' };
  if (c.ref) return { ref: c.ref, source: 'explicit' };
  if (policy === 'explicit') throw new WorkerFailure('git.ref_policy explicit needs git.ref');
  return { ref: projectBranch, source: 'project_default' };
}

/** Whether the remote named by git.remote is a URL (needs its own credentials) rather than a remote name. */
export function remoteUrl(controls: GitControls): string | null {
  const remote = controls.remote;
  if (!remote || !/[/:]/.test(remote)) return null;
  repoKind(remote);
  return remote;
}

/** `git <args>` in the checkout; stdout trimmed. */
export function git(s: GitSetup, args: string[]): Promise<string> {
  return exec(s, args, s.dir, s.access);
}

/** Like `git` but a failure is the attempt's, with git's own message (credentials masked by the log sink, never put in args). */
export async function run(s: GitSetup, args: string[], cwd: string, what: string, access: RepoAccess = s.access): Promise<string> {
  try {
    return await exec(s, args, cwd, access);
  } catch (err) {
    if (err instanceof Aborted) throw err;
    let detail = ((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n').slice(-5).join(' | ');
    for (const secret of access.secrets) detail = detail.split(secret).join('***');
    throw new WorkerFailure(`${what}: ${detail}`);
  }
}

function exec(s: GitSetup, args: string[], cwd: string, access: RepoAccess): Promise<string> {
  const env = { ...process.env, ...access.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false' };
  return new Promise((resolve, reject) => {
    // The checkout may belong to the user the attempt runs as: git must not refuse it as "dubious ownership".
    execFile(
      'git',
      ['-c', 'safe.directory=*', ...args],
      { cwd, env, signal: s.signal, timeout: GIT_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (s.signal.aborted) return reject(new Aborted(String(s.signal.reason ?? 'aborted')));
        if (err) return reject(Object.assign(err, { stderr }));
        resolve(stdout.trim());
      },
    );
  });
}
