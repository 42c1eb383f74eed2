import type { AttemptDiff, ResolvedGit, WorkspaceReport } from '../../core/ports/attempts.ts';
import { readDiff, type DiffLimits } from './diff.ts';
import { WorkerFailure } from './failure.ts';
import { Aborted } from '../../core/aborted.ts';
import { redactUrl } from './git-access.ts';
import { GitWorkspace, branchName, chooseRef, type Checkout, type GitSetup, type Timed } from './git.ts';
import {
  cloneCheckout,
  cloneMirror,
  commitAt,
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
import { stepSegment } from './step-outputs.ts';

/** The run branch when the workflow's (or pipeline's) `git.branch` names none. */
export const DEFAULT_RUN_BRANCH = 'svc/run/${run_id}';

/** A step's own branch beside the run branch (`a/b` cannot sit beside a branch `a`, so it is `<run branch>--<step>`). */
export const stepBranchOf = (runBranch: string, step: string) => `${runBranch}--${stepSegment(step)}`;

export interface RunStepPlace {
  step: string;
  dependsOn: string[];
  /** What each finished step of the run depends on: a dependency that pushed nothing hands on what it started from, its own dependencies. */
  upstream: Map<string, string[]>;
  /** How the workspace came to be (mode, reused), for the report. */
  mode: string;
  reused: boolean;
  /** A checkout this job's earlier attempt left: keep it as it is (workspace.mode job). */
  continueCheckout: boolean;
}

/**
 * A step's checkout on its run's line of work (docs/workspaces.md): it starts from its own step
 * branch if an earlier attempt pushed one, else from what the steps it depends on pushed, else the
 * run branch, else the ref; the other dependencies' branches are merged in (a conflict fails the
 * step naming the paths). At the end everything is committed (even after a failure), pushed to the
 * step branch, and the run branch is moved to it when that is a fast-forward: parallel steps leave
 * their work on their step branches, and the step that depends on them merges it.
 */
export class RunLine implements Checkout {
  private constructor(
    private readonly s: GitSetup,
    readonly resolved: ResolvedGit & { workspace: WorkspaceReport },
    private readonly tips: { step: string | null },
  ) {}

  /** The checkout's HEAD once copied into the mirror at the end (finish). */
  private head: string | null = null;

  static async prepare(s: GitSetup, place: RunStepPlace, fresh: boolean): Promise<RunLine> {
    const { ref, source } = chooseRef(s.controls, s.projectBranch, s.envName, s.envReleaseSha);
    if (fresh) {
      await s.log(`$ git clone ${redactUrl(s.url)} (ref ${ref}, ${source})`);
      await cloneMirror(s);
      await cloneCheckout(s);
    } else {
      await s.log(`$ git fetch ${redactUrl(s.url)}`);
      await fetchMirror(s);
      await syncRemoteRefs(s);
    }
    const base = await resolveRef(s, ref);
    if (!base) throw new WorkerFailure(`git ref '${ref}' (${source}) is not a branch, tag or commit of ${redactUrl(s.url)}`);
    const runBranch = branchName(s.controls.branch ?? DEFAULT_RUN_BRANCH, s);
    const stepBranch = stepBranchOf(runBranch, place.step);
    const tipOf = (branch: string) => remoteTip(s, branch);
    const stepTip = await tipOf(stepBranch);
    const deps = await dependencyTips(place, (step) => tipOf(stepBranchOf(runBranch, step)));
    const depOf = (step: string, sha: string) => ({ step, branch: stepBranchOf(runBranch, step), sha });

    const current = place.continueCheckout ? await git(s, ['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => null) : null;
    if (current === stepBranch) {
      await s.log(`continuing the checkout on ${stepBranch} at ${await commitAt(s, 'HEAD')} (uncommitted work kept)`);
    } else {
      const start = stepTip ?? deps[0]?.sha ?? (await tipOf(runBranch)) ?? base.sha;
      await run(`checking out ${stepBranch} failed`, git(s, ['checkout', '--quiet', '--force', '-B', stepBranch, start]));
    }
    const merged: WorkspaceReport['merged'] = [];
    for (const { step, sha } of deps) {
      const dep = depOf(step, sha);
      const contained = await git(s, ['merge-base', '--is-ancestor', dep.sha, 'HEAD']).then(
        () => true,
        () => false,
      );
      if (contained) continue;
      await merge(s, dep, place.step);
      merged.push({ step: dep.step, branch: dep.branch, sha: dep.sha });
      await s.log(`merged step ${dep.step} (${dep.branch} at ${dep.sha})`);
    }
    await excludeWorkerFiles(s);
    const head = await commitAt(s, 'HEAD');
    await s.log(
      `step ${place.step}: started from ${head} on ${stepBranch} (run branch ${runBranch}; workspace ${place.mode}, ${place.reused ? 'reused' : 'fresh'})`,
    );
    return new RunLine(
      s,
      {
        resolved_ref: ref,
        resolved_sha: head,
        resolved_branch: stepBranch,
        ref_source: source,
        pushed: false,
        commits: [],
        workspace: {
          mode: place.mode,
          reused: place.reused,
          started_from: head,
          run_branch: runBranch,
          step_branch: stepBranch,
          merged,
          pushed_to: [],
          changed_files: [],
        },
      },
      { step: stepTip },
    );
  }

  exclude(files: string[]): Promise<void> {
    return excludeWorkerFiles(this.s, files);
  }

  /** Against where the step started, after merging the steps it depends on: the step's own work. */
  async diff(limits: DiffLimits): Promise<AttemptDiff | null> {
    const base = this.resolved.workspace.started_from;
    return base ? readDiff(this.s, base, limits) : null;
  }

  /** Commits everything (git.commit, default auto), then pushes the step branch and moves the run branch (git.push, default required). */
  async finish(succeeded: boolean, summary: string, timed: Timed): Promise<string | null> {
    this.s.touched = true;
    const controls = { ...this.s.controls, commit: this.s.controls.commit ?? 'auto', push: this.s.controls.push ?? 'required' };
    const checkout = new GitWorkspace({ ...this.s, controls }, this.resolved, null);
    const failure = checkout.wantsCommit(succeeded) ? await timed('commit', () => checkout.commit(succeeded, summary)) : null;
    const report = this.resolved.workspace;
    // What the step left is read in the mirror, once the checkout's HEAD is copied there.
    this.head = await importHead(
      this.s,
      [report.started_from, ...report.merged.map((m) => m.sha)].filter((k): k is string => !!k),
    );
    report.changed_files =
      this.head && report.started_from
        ? (await run('git diff failed', mirrorGit(this.s, ['diff', '--name-only', report.started_from, this.head]))).split('\n').filter(Boolean)
        : [];
    if (failure || controls.push === 'never' || (controls.push === 'on_success' && !succeeded)) return failure;
    try {
      await timed('push', () => this.push());
    } catch (err) {
      if (err instanceof Aborted) throw err;
      if (controls.push === 'required') return (err as Error).message;
      await this.s.log(`push failed (git.push on_success: the attempt keeps its result): ${(err as Error).message}`);
    }
    const pushed = this.resolved.workspace.pushed_to;
    if (pushed.length) await this.s.log(`pushed ${pushed[0].sha} to ${pushed.map((p) => p.branch).join(' and ')}`);
    return null;
  }

  private async push(): Promise<void> {
    const s = this.s;
    const report = this.resolved.workspace;
    const head = this.head;
    if (!head) throw new WorkerFailure('git push failed: the checkout has no commit');
    const remote = s.controls.remote ?? 'origin';
    const access = s.pushAccess ?? s.access;
    const pushTo = async (branch: string) => {
      await s.log(`$ git push ${redactUrl(remote)} HEAD:refs/heads/${branch}`);
      await run(`git push to ${branch} failed`, mirrorGit(s, ['push', '--quiet', remote, `${head}:refs/heads/${branch}`], access), access);
      report.pushed_to.push({ branch, sha: head });
    };
    if (head === report.started_from && report.merged.length === 0) {
      await s.log('nothing to push: the step changed nothing');
      return;
    }
    if (head !== this.tips.step) await pushTo(report.step_branch!);
    const runBranch = report.run_branch!;
    const runTip = await this.remoteTip(runBranch);
    if (runTip === head) return this.pushed();
    if (runTip && !(await this.contains(runTip))) return this.movedOn(runBranch);
    try {
      await pushTo(runBranch);
    } catch (err) {
      // Another step moved the run branch between the look and the push.
      const now = await this.remoteTip(runBranch);
      if (now && !(await this.contains(now))) return this.movedOn(runBranch);
      throw err;
    }
    this.pushed();
  }

  private pushed(): void {
    this.resolved.pushed = true;
  }

  private async movedOn(runBranch: string): Promise<void> {
    this.pushed();
    await this.s.log(
      `run branch ${runBranch} has moved on (a step running beside this one pushed first): this step's work stays on ${this.resolved.workspace.step_branch}, which the steps that depend on it merge`,
    );
  }

  /** The run branch's tip on the remote now (fetched into the mirror), or null when it does not exist yet. */
  private async remoteTip(branch: string): Promise<string | null> {
    await mirrorGit(this.s, ['fetch', '--quiet', 'origin', `+refs/heads/${branch}:refs/heads/${branch}`], this.s.access).catch(() => null);
    return remoteTip(this.s, branch);
  }

  /** Whether the step's HEAD (in the mirror) contains `sha`. */
  private contains(sha: string): Promise<boolean> {
    return mirrorGit(this.s, ['merge-base', '--is-ancestor', sha, this.head!]).then(
      () => true,
      () => false,
    );
  }
}

/**
 * The step branches to start from and merge: each dependency's, or for one that pushed nothing (it
 * changed nothing, or was skipped), those of its own dependencies, in order and each once.
 */
async function dependencyTips(place: RunStepPlace, tipOf: (step: string) => Promise<string | null>): Promise<{ step: string; sha: string }[]> {
  const found: { step: string; sha: string }[] = [];
  const seen = new Set<string>();
  const visit = async (steps: string[]) => {
    for (const step of steps) {
      if (seen.has(step)) continue;
      seen.add(step);
      const sha = await tipOf(step);
      if (sha) found.push({ step, sha });
      else await visit(place.upstream.get(step) ?? []);
    }
  };
  await visit(place.dependsOn);
  return found;
}

/** Merges a dependency's step branch; a conflict aborts the merge and fails the step naming the paths. */
async function merge(s: GitSetup, dep: { step: string; branch: string; sha: string }, step: string): Promise<void> {
  try {
    await git(s, ['merge', '--quiet', '--no-edit', '-m', `svc: merge step ${dep.step} into ${step}`, dep.sha]);
  } catch (err) {
    if (err instanceof Aborted) throw err;
    const conflicts = (await git(s, ['diff', '--name-only', '--diff-filter=U']).catch(() => '')).split('\n').filter(Boolean);
    await git(s, ['merge', '--abort']).catch(() => undefined);
    if (conflicts.length === 0) {
      const detail = ((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n').slice(-3).join(' | ');
      throw new WorkerFailure(`merging step '${dep.step}' (${dep.branch}) into step '${step}' failed: ${detail}`);
    }
    throw new WorkerFailure(
      `merging step '${dep.step}' (${dep.branch}) into step '${step}' conflicts in ${conflicts.join(', ')}: the steps changed the same lines; make them touch different files, or order them with depends_on`,
    );
  }
}
