import { randomBytes } from 'node:crypto';
import type { DependencyContainer } from 'tsyringe';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { type Permission } from '../../../core/auth/permissions.ts';
import { mayNameJob, type Grant, type Principal } from '../../../core/auth/principal.ts';
import type { Creator } from '../../../core/ports/launchers.ts';
import { ManifestDefaultsToken, type ManifestDefaults } from '../../../core/ports/manifest.ts';
import { JobAdmissions, JobRequestChecks, type JobRequestCheck } from '../../../core/ports/jobs.ts';
import { HarnessRegistryToken, harnessNames } from '../../../core/ports/harness.ts';
import { Batcher } from '../../../core/batcher.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../../core/ports/directory.ts';
import { describeUnstorable, findUnstorable } from '../../../core/db/storable.ts';
import { ID_ATTEMPTS, JobRepository, toJob, type Job, type JobRow, type NewRootJob } from './repository.ts';
import { createJobSchema, platformJobSchema } from './schemas.ts';
import { JobLifecycle } from '../lifecycle/lifecycle.ts';
import { BadRequest, Conflict, Forbidden, Invalid } from '../../../core/errors.ts';
import { drawUntilFree } from '../../../core/ids.ts';
import { isObject } from '../../../core/is-object.ts';
import { checkPushRemote, GitAccessError } from '../../../core/git-access.ts';
import { HarnessCheck, harnessFields } from './harness-check.ts';

/** Jobs nest at most three levels: root (depth 0), child, grandchild. */
export const MAX_DEPTH = 2;
const TITLE_MAX = 80;
const SECRET_EXPRESSION = /\$\{secret\.[A-Za-z0-9_]+\}/;
/** Phases of a job not planned to run yet: its harness is checked when it moves to ready (JobService.update). */
const NOT_PLANNED: ReadonlySet<unknown> = new Set(['idea', 'backlog']);

/** What `x-svc.defaults` may hold: a create request without the description. Built once. */
const DEFAULTS_SCHEMA = createJobSchema.fork(['description'], (s) => s.optional());

export type NewRow = Omit<NewRootJob, 'suffix'> & Pick<JobRow, 'parent_id' | 'depth'>;

export type CreateJobInput = Record<string, unknown> & { description: string; parent_id?: string | null };

/** The first line of the description, cut at a word near the limit. */
export function titleFrom(description: string): string {
  const line = description.trim().split('\n')[0].trim();
  if (line.length <= TITLE_MAX) return line;
  const cut = line.slice(0, TITLE_MAX - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > TITLE_MAX / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** Manifest defaults under explicit fields; objects (hints, git, workspace) merge key by key. */
export function withDefaults(defaults: Record<string, unknown>, explicit: CreateJobInput): CreateJobInput {
  const out: Record<string, unknown> = { ...defaults, ...explicit };
  for (const key of ['hints', 'git', 'workspace', 'harness_options']) {
    if (isObject(defaults[key]) && isObject(explicit[key])) out[key] = { ...defaults[key], ...explicit[key] };
  }
  return out as CreateJobInput;
}

/** A request made by the platform (manifest defaults under it) through the job schema; invalid: 422 naming `what`. */
export function checkedRequest(defaults: Record<string, unknown>, input: CreateJobInput, what: string): CreateJobInput {
  const { error, value } = platformJobSchema.validate(withDefaults(defaults, input));
  if (error) throw new Invalid(`${what} cannot be created: ${error.message}`);
  return value;
}

@injectable()
export class JobCreation {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(ManifestDefaultsToken) private readonly manifest: ManifestDefaults,
    @inject(JobRequestChecks) private readonly requestChecks: JobRequestChecks,
    @inject(JobAdmissions) private readonly admissions: JobAdmissions,
    @inject(JobLifecycle) private readonly lifecycle: JobLifecycle,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(HarnessCheck) private readonly harnesses: HarnessCheck,
  ) {}

  /** One batch: the projects' slugs (remembered; a deleted project's rows get null), then one INSERT. */
  private readonly roots = new Batcher<NewRootJob, JobRow | null>(async (rows) => {
    const live = await this.projects.liveSlugs(rows.map((r) => r.project_id));
    const insertable = rows.flatMap((row) => (live.has(row.project_id) ? [{ ...row, slug: live.get(row.project_id)! }] : []));
    const inserted = insertable.length ? await this.lifecycle.insertRoots(insertable) : [];
    let next = 0;
    return rows.map((row) => (live.has(row.project_id) ? inserted[next++] : null));
  });

  async create(principal: Principal, grant: Grant, explicit: CreateJobInput): Promise<Job> {
    requireOverridePermissions(grant, explicit);
    const input = withDefaults(await this.validDefaults(grant.projectId!), explicit);
    // A value the database would refuse is refused here (422 naming it), so it never fails the
    // batched INSERT that other callers' jobs share.
    const unstorable = findUnstorable(input);
    if (unstorable) throw new Invalid(`the job cannot be stored: ${describeUnstorable(unstorable)}`);
    await this.requestChecks.check(grant.projectId!, input);
    await this.requirePushRemotes(grant.projectId!, [input]);
    if (!NOT_PLANNED.has(input.phase)) await this.requireRunnable(grant.projectId!, principal, [input]);
    await this.admissions.admit({ projectId: grant.projectId!, orgId: grant.orgId });
    if (!input.parent_id) return this.createRoot(this.row(principal, grant.projectId!, input, 0));
    // A job token places children under its own job only; another parent reads as outside the project.
    if (!mayNameJob(principal, input.parent_id)) throw new Invalid(`parent job ${input.parent_id} is not a job of project ${grant.projectId}`);
    return this.db.transaction(async (trx) => {
      await this.requireLiveProject(grant.projectId!, trx);
      const placement = await this.childPlacement(input.parent_id!, grant.projectId!, trx);
      const created = await this.jobs.insert({ ...this.row(principal, grant.projectId!, input, placement.depth), id: placement.id }, trx);
      this.lifecycle.created([created], trx);
      return toJob(created);
    });
  }

  /** Concurrent creations share one INSERT; an id already taken is drawn again (a deleted project is 422). */
  private async createRoot(row: NewRow): Promise<Job> {
    const created = await drawUntilFree({
      draws: ID_ATTEMPTS,
      attempt: async () => {
        const inserted = await this.roots.submit({ ...row, suffix: randomBytes(4).toString('hex') });
        if (!inserted) await this.requireLiveProject(row.project_id);
        return inserted;
      },
      exhausted: () => new Error(`no free job id in project ${row.project_id} after ${ID_ATTEMPTS} draws`),
    });
    return toJob(created);
  }

  /** New work not asked for by a caller's grant (a job graph, a workflow invocation): admitted by the project's org like a request. */
  async admitInProject(projectId: string): Promise<void> {
    const project = await this.projects.byId(projectId);
    if (!project || project.deleted) throw new Invalid(`project ${projectId} is deleted`);
    await this.admissions.admit({ projectId, orgId: project.org_id });
  }

  /** The project's slug; a deleted project is 422. */
  async requireLiveProject(projectId: string, trx: Db = this.db): Promise<string> {
    const project = await this.projects.byId(projectId, trx);
    if (!project || project.deleted) throw new Invalid(`project ${projectId} is deleted`);
    return project.slug;
  }

  /**
   * Each request's `git.remote` (its schema allows only 'origin' or an https or SSH URL) against the
   * project's repo_url: a URL of another kind than the repository's is 422 naming git.remote
   * (core/git-access.ts checkPushRemote; the worker checks it again before it pushes). `what` names the job in the message.
   */
  async requirePushRemotes(projectId: string, requests: Record<string, unknown>[], what?: string): Promise<void> {
    const remotes = new Set(requests.flatMap((r) => (isObject(r.git) && typeof r.git.remote === 'string' ? [r.git.remote] : [])));
    if (remotes.size === 0) return;
    const repoUrl = (await this.projects.byId(projectId))?.repo_url ?? null;
    for (const remote of remotes) {
      try {
        checkPushRemote(remote, repoUrl);
      } catch (e) {
        if (e instanceof GitAccessError) throw new Invalid(what ? `${what} cannot be created: ${e.message}` : e.message);
        throw e;
      }
    }
  }

  /**
   * Each request that runs a harness (manifest defaults under it) against what the workers report
   * they can run: HarnessUnavailable (422) naming the harness and what it lacks when none that
   * reported recently can (HarnessCheck). `what` names the job in the message.
   */
  requireRunnable(projectId: string, creator: Creator, requests: Record<string, unknown>[], what?: (i: number) => string): Promise<void> {
    return this.harnesses.require(projectId, requests, { projectId, userId: creator.id }, what);
  }

  /** Manifest defaults pass the same validation as a request; invalid ones are a server-side error to report. */
  async validDefaults(projectId: string): Promise<Record<string, unknown>> {
    const defaults = await this.manifest.jobDefaults(projectId);
    if (Object.keys(defaults).length === 0) return defaults;
    const { error } = DEFAULTS_SCHEMA.validate(defaults);
    if (error) throw new Invalid(`the project manifest's x-svc.defaults are invalid: ${error.message}`);
    return defaults;
  }

  /** Locks the parent and draws the child's id `{parent}.{n}` (workflow invoke uses it too). */
  async childPlacement(parentId: string, projectId: string, trx: Db): Promise<{ id: string; depth: number }> {
    const parent = await this.jobs.lock(parentId, trx);
    if (!parent || parent.project_id !== projectId) throw new Invalid(`parent job ${parentId} is not a job of project ${projectId}`);
    if (parent.depth >= MAX_DEPTH) throw new Invalid(`job ${parentId} is at the deepest level: jobs nest at most ${MAX_DEPTH + 1} levels`);
    if (parent.phase === 'done' || parent.phase === 'cancelled') throw new Conflict(`parent job ${parentId} is ${parent.phase}`);
    return { id: `${parent.id}.${await this.jobs.nextChildNumber(parent.id, trx)}`, depth: parent.depth + 1 };
  }

  /** The row a create request makes (shared with workflow invoke). */
  row(creator: Creator, projectId: string, input: CreateJobInput, depth: number): NewRow {
    const harness = harnessFields(input) as Record<string, unknown>;
    return {
      project_id: projectId,
      parent_id: (input.parent_id as string | null) ?? null,
      depth,
      title: (input.title as string | undefined) ?? titleFrom(input.description),
      description: input.description,
      issue_type: (input.issue_type as string) ?? 'task',
      labels: (input.labels as string[]) ?? [],
      phase: (input.phase as JobRow['phase']) ?? 'ready',
      priority: (input.priority as number) ?? 2,
      assignee: (input.assignee as string | null) ?? null,
      review_required: (input.review_required as string) ?? 'none',
      hints: { permission_policy: 'yolo', ...(input.hints as Record<string, unknown>) },
      git: (input.git as Record<string, unknown>) ?? null,
      workspace: (input.workspace as Record<string, unknown>) ?? null,
      env_name: (input.env_name as string | null) ?? null,
      execution_mode: (input.execution_mode as string) ?? 'persistent',
      harness,
      env_overrides: (input.env_overrides as Record<string, string>) ?? null,
      resource_refs: (input.resource_refs as Record<string, unknown>[]) ?? [],
      defer_until: input.defer_until ? new Date(input.defer_until as string) : null,
      due_at: input.due_at ? new Date(input.due_at as string) : null,
      created_by: creator.id,
    };
  }
}

/**
 * `harness` names a harness this server has (a built-in, an alias, or one a harness plugin adds),
 * when a harness registry is loaded; looked up per request, so plugin order does not matter.
 */
export const knownHarness =
  (container: DependencyContainer): JobRequestCheck =>
  async (_projectId, { harness }) => {
    if (typeof harness !== 'string' || !container.isRegistered(HarnessRegistryToken)) return;
    const registry = container.resolve(HarnessRegistryToken);
    if (registry.get(harness)) return;
    throw new BadRequest(`harness: unknown harness '${harness}' (known: ${harnessNames(registry).join(', ')})`);
  };

/** Overrides need `jobs:harness_override`; secret-backed env values need `secrets:read` too. */
export function requireOverridePermissions(grant: Grant, input: CreateJobInput): void {
  const held = grant.permissions;
  const need = (p: Permission, why: string) => {
    if (!held.has(p)) throw new Forbidden(`missing permission ${p} (${why})`);
  };
  if (input.harness_profile_override !== undefined) need('jobs:harness_override', 'harness_profile_override');
  if (input.env_overrides !== undefined) {
    need('jobs:harness_override', 'env_overrides');
    if (Object.values(input.env_overrides as Record<string, string>).some((v) => SECRET_EXPRESSION.test(v)))
      need('secrets:read', 'secret-backed env_overrides');
  }
}
