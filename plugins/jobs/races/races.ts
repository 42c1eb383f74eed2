import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { Conflict, Invalid } from '../../../core/errors.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../../core/ports/directory.ts';
import type { ManifestReader } from '../../../core/ports/manifest.ts';
import { planAgent, ProfileError } from '../../../domain/manifest/profiles.ts';
import { JobRepository, toJob, type Job } from '../job/repository.ts';
import { AttemptRepository, toAttempt, type Attempt } from '../attempts/attempts.ts';
import { Claims } from '../claims/claims.ts';
import { afterSuccess, JobLifecycle } from '../lifecycle/lifecycle.ts';
import { JobWakeups } from '../lifecycle/wakeups.ts';
import { refuseWorkflowRootClaim } from '../workflows/roots.ts';
import { ManifestReaderLookup } from '../workflows/workflow-invoke.ts';
import { RaceLaneRepository, type LaneRow, type Variant } from './race-lanes.ts';
import { RaceBranches, type BranchCleanup } from './race-branches.ts';
import { raceBranch } from './race-work.ts';

/** What `POST /jobs/{job_id}/attempts` asks for: the variants, or a manifest profile whose entries are the variants. */
export interface RaceRequest {
  variants?: Variant[];
  profile?: string;
  check_command?: string;
}
export interface Race {
  job: Job;
  lanes: LaneRow[];
}
export interface Choice {
  job: Job;
  attempt: Attempt;
  cleanup: BranchCleanup;
}

/** Phases a race may start from: the job's work has not started (or has gone back to the queue). */
const RACEABLE = ['backlog', 'ready'];

/**
 * Rival attempts (docs/worker.md): a job raced by several variants at once, one lane each; lanes are
 * claimed as ready jobs are (LaneClaims), and one succeeded attempt is then chosen as the job's result.
 */
@injectable()
export class Races {
  constructor(
    @inject(Tokens.ControlDb) private readonly db: Db,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
    @inject(RaceLaneRepository) private readonly lanes: RaceLaneRepository,
    @inject(Claims) private readonly claims: Claims,
    @inject(JobLifecycle) private readonly lifecycle: JobLifecycle,
    @inject(JobWakeups) private readonly wakeups: JobWakeups,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(ManifestReaderLookup) private readonly manifests: () => ManifestReader | null,
    @inject(RaceBranches) private readonly branches: RaceBranches,
  ) {}

  /** Starts the race: one ready lane per variant, and the job active until one of its attempts is chosen. */
  async start(jobId: string, request: RaceRequest, actorId: string): Promise<Race> {
    const job = await this.jobs.byId(jobId);
    const variants = request.profile ? await this.profileVariants(job!.project_id, request.profile) : request.variants!;
    return this.db.transaction(async (trx) => {
      const locked = await this.claims.locked(jobId, trx);
      if (!RACEABLE.includes(locked.phase)) throw new Conflict(`job ${jobId} is ${locked.phase}: only a backlog or ready job can be raced`);
      refuseWorkflowRootClaim(locked);
      await this.claims.requireUnblocked(locked, trx);
      const lanes = await this.lanes.add(jobId, variants, request.check_command ?? null, trx);
      const active = await this.lifecycle.change(jobId, { phase: 'active', assignee: actorId, defer_until: null }, trx);
      this.wakeups.afterCommit(trx);
      return { job: toJob(active), lanes };
    });
  }

  /**
   * Makes a race's succeeded attempt the job's result, as a successful attempt's result becomes it:
   * its resolved git (the chosen attempt comes first, latest-success.ts), then done or review. Every
   * lane must have ended. The other attempts' pushed branches are deleted once that has committed.
   */
  async choose(jobId: string, attemptNumber: number): Promise<Choice> {
    const { job, attempt, losers } = await this.db.transaction(async (trx) => {
      const locked = await this.claims.locked(jobId, trx);
      const lanes = await this.lanes.of(jobId, trx);
      if (lanes.length === 0) throw new Conflict(`job ${jobId} was not raced: nothing to choose from`);
      if (locked.phase !== 'active') throw new Conflict(`job ${jobId} is ${locked.phase}: a choice is made while the raced job is active`);
      const unfinished = lanes.filter((l) => l.status !== 'ended').map((l) => l.lane);
      if (unfinished.length) throw new Conflict(`job ${jobId}: race lanes ${unfinished.join(', ')} have not ended yet`);
      const row = await this.attempts.byNumber(jobId, attemptNumber, trx);
      if (!row || row.race_lane === null) throw new Invalid(`attempt ${attemptNumber} of job ${jobId} is not one of its race's attempts`);
      if (row.status !== 'succeeded' || row.result_status !== 'success')
        throw new Invalid(
          `attempt ${attemptNumber} of job ${jobId} did not succeed (${row.status}${row.result_status ? `, ${row.result_status}` : ''}): only a success can be chosen`,
        );
      const chosen = await this.attempts.choose(row.id, trx);
      const next = await this.lifecycle.change(jobId, { ...afterSuccess(locked), assignee: null }, trx);
      // The rivals' own branches by name (race-work.ts), never what an attempt's recorded git says it pushed to.
      const losers = (await this.attempts.pushedRivals(jobId, row.id, trx)).map((n) => raceBranch(jobId, n)).sort();
      return { job: next, attempt: chosen, losers };
    });
    const project = (await this.projects.byId(job.project_id))!;
    const cleanup = await this.branches.delete(project, losers);
    // Read again: the phase listeners wrote its resolved_git after the row `change` answered.
    return { job: toJob((await this.jobs.byId(jobId)) ?? job), attempt: toAttempt(attempt), cleanup };
  }

  /** The entries of the project's manifest profile `name`, each a variant (422 when the manifest or profile is missing). */
  private async profileVariants(projectId: string, name: string): Promise<Variant[]> {
    const stored = await this.manifests()?.current(projectId);
    const agents = stored?.parsed['x-svc']?.agents;
    if (!agents?.profiles?.[name]) throw new Invalid(`profile: the project's manifest has no agent profile '${name}' (x-svc.agents.profiles)`);
    try {
      const plan = planAgent({ harness_profile: name }, agents, { canonical: (id) => id, defaultHarness: '' });
      return plan.candidates.map((c) => ({
        harness: c.harness,
        ...(c.model ? { model: c.model } : {}),
        ...(c.reasoningEffort ? { reasoning_effort: c.reasoningEffort } : {}),
      }));
    } catch (err) {
      if (err instanceof ProfileError) throw new Invalid(`profile: ${err.message}`);
      throw err;
    }
  }
}
