import type { AttemptDiff, CheckoutReport, ResolvedGit } from '../../core/ports/attempts.ts';
import type { RepoCache } from '../../core/repo-cache.ts';
import { readDiff, type DiffLimits } from './diff.ts';
import { RefMissing, WorkerFailure } from './failure.ts';
import { Aborted } from '../../core/aborted.ts';
import { checkPushRemote, redactUrl, type RepoAccess } from './git-access.ts';
import type { GitRunner } from '../../core/git-run.ts';
import type { WorkspaceOverlay } from './overlay.ts';
import { overlayCheckout } from './overlay-checkout.ts';
import type { RunAs } from './run-as.ts';
import {
  cloneCheckout,
  cloneMirror,
  commitAt,
  emptyCheckout,
  excludeWorkerFiles,
  fetchMirror,
  git,
  importHead,
  mirrorGit,
  remoteTip,
  resolveRef,
  run,
  syncRemoteRefs,
} from './mirror.ts';

/** The job's git controls (CreateJobRequest `git`), as stored. */
export interface GitControls {
  ref?: string;
  /** A shallow checkout: the last `depth` commits of each branch. */
  depth?: number;
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
  /** The worker's bare repository for this checkout: clone, fetch and push happen there, never in the checkout (git-exec.ts). */
  mirror: string;
  /** A folder the sandboxed git writes what the mirror takes from the checkout (a bundle of its HEAD). */
  exchange: string;
  /** Git on the checkout once a job may have touched it: as the attempt's user, in the sandbox. */
  checkoutGit: GitRunner;
  /** Whether anything of a job may have touched the checkout (a reused workspace; after the process): then only `checkoutGit` runs there. */
  touched: boolean;
  url: string;
  /** The worker's repository cache the mirror is cloned from (core/repo-cache.ts); null: cloned from the remote. */
  cache: RepoCache | null;
  /** The copy-on-write working tree to mount over the cache's prepared checkout (overlay.ts); null: a full checkout. */
  overlay: WorkspaceOverlay | null;
  /** Who the checkout's files belong to (the attempt's user; null: the server's): a prepared checkout is made theirs. */
  owner: RunAs | null;
  /** workspace.sparse: only these folders are checked out (cone mode); null: all. */
  sparse: string[] | null;
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

export const DEFAULT_COMMIT_MESSAGE = 'svc: ${summary} (job ${job_id})';

const fill = (template: string, values: Record<string, string>) => template.replace(/\$\{(\w+)\}/g, (m, k: string) => values[k] ?? m);
/** A git.branch template filled for this job: `${job_id}`, and `${run_id}` (the job's own id outside a run). */
export const branchName = (template: string, s: Pick<GitSetup, 'jobId' | 'runId'>) => fill(template, { job_id: s.jobId, run_id: s.runId ?? s.jobId });

/** Measures a step of the attempt (a phase of its receipt). */
export type Timed = <T>(name: string, fn: () => Promise<T>) => Promise<T>;

/** A checkout after the process: commits and pushes per its controls; the reason the attempt must fail, if one. */
export interface Checkout {
  readonly resolved: ResolvedGit;
  /** Keeps these workspace files (a harness's own, written for its run) out of every commit. */
  exclude(files: string[]): Promise<void>;
  finish(succeeded: boolean, summary: string, timed: Timed): Promise<string | null>;
  /** What the attempt changed, against the commit it started from (docs/diffs.md); null without one. */
  diff(limits: DiffLimits): Promise<AttemptDiff | null>;
}

/** A checkout prepared for an attempt, and what happens to it after (commit, push), per the spec's git controls. */
export class GitWorkspace implements Checkout {
  constructor(
    private readonly s: GitSetup,
    readonly resolved: ResolvedGit,
    /** The remote tip a create_branch always reset left behind: the push replaces exactly that tip. */
    private readonly replacedTip: string | null,
  ) {}

  /** How the checkout was made (a fresh one; null when continued): the receipt's `workspace.checkout`. */
  report: CheckoutReport | null = null;

  /**
   * Clones, resolves the ref per `ref_policy`, and checks out the branch per `branch`/`create_branch`.
   * A failure on a mirror cloned from the repository cache has the cache's mirror checked: a broken
   * one is removed, and the checkout is made once more from a mirror fetched afresh.
   */
  static async prepare(s: GitSetup): Promise<GitWorkspace> {
    try {
      return await GitWorkspace.checkout(s);
    } catch (err) {
      // A ref the remote does not have is the job's mistake: no fsck reads the whole mirror for it.
      if (!s.cache || !(err instanceof WorkerFailure) || err instanceof RefMissing || (await s.cache.verify(s.url, s.signal))) throw err;
      await s.log(`the repository cache's mirror of ${redactUrl(s.url)} is broken (git fsck): removed, cloning again`);
      await emptyCheckout(s);
      return GitWorkspace.checkout(s);
    }
  }

  private static async checkout(s: GitSetup): Promise<GitWorkspace> {
    const c = s.controls;
    const { ref, source } = chooseRef(c, s.projectBranch, s.envName, s.envReleaseSha);
    await s.log(`$ git clone ${redactUrl(s.url)} (ref ${ref}, ${source}${s.cache ? ', through the repository cache' : ''})`);
    // The workspace lives as long as the attempt: no template (copying the sample hooks cost more
    // than the clone itself) and no fsync.
    const depth = c.depth ?? null;
    await cloneMirror(s, ref, depth);
    const found = await resolveRef(s, ref);
    if (!found) throw new RefMissing(`git ref '${ref}' (${source}) is not a branch, tag or commit of ${redactUrl(s.url)}`);
    const { sha, remoteBranch } = found;

    const branch = c.branch ? branchName(c.branch, s) : remoteBranch ? ref : null;
    let replacedTip: string | null = null;
    let head = sha;
    if (branch) {
      const existing = branch === ref ? remoteBranch : await remoteTip(s, branch);
      const mode = c.create_branch ?? 'if_missing';
      if (mode === 'never' && !existing) throw new RefMissing(`git.branch '${branch}' does not exist on the remote and git.create_branch is never`);
      head = mode === 'always' || !existing ? sha : existing;
      if (mode === 'always' && existing && existing !== sha) replacedTip = existing;
    }
    if ((c.push ?? 'never') !== 'never' && !branch) {
      throw new RefMissing(`git.push is ${c.push} but there is no branch to push: '${ref}' is not a branch, so set git.branch`);
    }
    // A sparse checkout writes only its folders: no prepared tree of the whole commit.
    const copyOnWrite = !s.sparse && (await overlayCheckout(s, head, branch));
    if (!copyOnWrite) {
      await cloneCheckout(s);
      if (s.sparse) await run('setting up the sparse checkout failed', git(s, ['sparse-checkout', 'set', '--cone', '--', ...s.sparse]));
      if (branch) await run(`checking out branch ${branch} failed`, git(s, ['checkout', '--quiet', '-B', branch, head]));
      else await run(`checking out ${ref} failed`, git(s, ['checkout', '--quiet', '--detach', sha]));
    }
    await excludeWorkerFiles(s);
    const how = [
      copyOnWrite ? "copy-on-write over the cache's prepared checkout" : null,
      s.sparse ? `sparse: ${s.sparse.join(', ')}` : null,
      depth ? `depth ${depth}` : null,
    ].filter(Boolean);
    await s.log(`checked out ${branch ? `branch ${branch}` : 'a detached HEAD'} at ${head}${how.length ? ` (${how.join('; ')})` : ''}`);
    const checkout = new GitWorkspace(
      s,
      { resolved_ref: ref, resolved_sha: head, resolved_branch: branch, ref_source: source, pushed: false, commits: [] },
      replacedTip,
    );
    checkout.report = { copy_on_write: copyOnWrite, sparse: s.sparse, depth };
    return checkout;
  }

  /**
   * A checkout an earlier attempt (or job) left: its mirror fetched, its `origin/*` branches moved
   * to match, and kept as it is (branch, commits and uncommitted work), so the attempt continues
   * where the last one stopped. The checkout is the earlier job's: git runs there only sandboxed.
   */
  static async reopen(s: GitSetup): Promise<GitWorkspace> {
    await fetchMirror(s);
    await syncRemoteRefs(s);
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

  exclude(files: string[]): Promise<void> {
    return excludeWorkerFiles(this.s, files);
  }

  /** Against the commit the checkout started at (resolved_sha; a reused checkout: its HEAD when the attempt began). */
  async diff(limits: DiffLimits): Promise<AttemptDiff | null> {
    const base = this.resolved.workspace?.started_from ?? this.resolved.resolved_sha;
    return base ? readDiff(this.s, base, limits) : null;
  }

  /** Commit, then push, per the controls (the phases commit and push). */
  async finish(succeeded: boolean, summary: string, timed: Timed): Promise<string | null> {
    this.s.touched = true;
    if (!this.wantsCommit(succeeded)) {
      await this.reportUncommitted();
      return null;
    }
    let failure = await timed('commit', () => this.commit(succeeded, summary));
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
    await run('git add failed', git(this.s, ['add', '-A']));
    const changed = await git(this.s, ['diff', '--cached', '--quiet']).then(
      () => false,
      () => true,
    );
    if (!changed) return mode === 'required' ? 'git.commit is required but the attempt left no changes to commit' : null;
    const message = fill(c.commit_message ?? DEFAULT_COMMIT_MESSAGE, { job_id: this.s.jobId, summary });
    const { name, email } = this.s.author;
    await run('git commit failed', git(this.s, ['-c', `user.name=${name}`, '-c', `user.email=${email}`, 'commit', '--quiet', '--no-verify', '-m', message]));
    const sha = await run('git commit failed', git(this.s, ['rev-parse', 'HEAD']));
    this.resolved.commits.push(sha);
    await this.s.log(`committed ${sha}`);
    return null;
  }

  /** Changes the worker leaves uncommitted go with the workspace: the log's last word on them says so, and why. */
  /** Says in the log, and in the attempt's git, that the work stays uncommitted and why. */
  private async reportUncommitted(): Promise<void> {
    const status = await git(this.s, ['status', '--porcelain', '--no-renames', '--untracked-files=all', '-z']).catch(() => '');
    const files = status.split('\0').filter(Boolean).length;
    if (files === 0) return;
    const mode = this.s.controls.commit ?? 'manual';
    const reason = mode === 'required' ? 'the attempt did not succeed and git.commit is required' : `git.commit is ${mode}`;
    this.resolved.uncommitted = { files, reason };
    const keep = mode === 'manual' ? ' (git.commit auto commits the work; git.push on_success with git.branch pushes it)' : '';
    await this.s.log(`${files} file${files === 1 ? '' : 's'} changed, not committed: ${reason}${keep}`);
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
   * Pushes the worker's commits to the branch, from the mirror (the checkout's HEAD copied there
   * first): the credentials never meet the checkout's configuration. on_success: a failed push is
   * logged and the attempt keeps its result; required: a failed push fails the attempt (the
   * returned reason).
   */
  async push(): Promise<string | null> {
    const remote = this.s.controls.remote ?? 'origin';
    const ref = `refs/heads/${this.resolved.resolved_branch}`;
    const lease = this.replacedTip ? [`--force-with-lease=${ref}:${this.replacedTip}`] : [];
    const access = this.s.pushAccess ?? this.s.access;
    try {
      const head = await importHead(
        this.s,
        [this.resolved.resolved_sha].filter((k): k is string => !!k),
      );
      if (!head) throw new WorkerFailure('git push failed: the checkout has no commit');
      const target = `${head}:${ref}`;
      await this.s.log(`$ git push ${lease.join(' ')}${lease.length ? ' ' : ''}${redactUrl(remote)} HEAD:${ref}`);
      await run('git push failed', mirrorGit(this.s, ['push', '--quiet', ...lease, remote, target], access), access);
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

/** The URL git.remote names, or null for origin; anything else (a path, file://, another kind than repo_url) fails the attempt. */
export function remoteUrl(controls: GitControls, repoUrl: string): string | null {
  const remote = controls.remote;
  if (!remote) return null;
  // Checked at creation too; again here, for jobs made before the rule and for manifest defaults.
  checkPushRemote(remote, repoUrl);
  return remote === 'origin' ? null : remote;
}
