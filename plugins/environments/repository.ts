import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { EnvironmentHealth, EnvironmentStatus, ReleaseRef, ServiceHealth } from '../../core/ports/environments.ts';
import type { EnvironmentProtection } from '../../domain/manifest/types.ts';

export type EnvironmentType = 'persistent' | 'temporary';

export interface EnvironmentRow {
  id: string;
  project_id: string;
  name: string;
  type: EnvironmentType;
  namespace: string | null;
  db_ref: string | null;
  kind: string | null;
  pipeline: string | null;
  pipeline_inputs: Record<string, unknown>;
  source: 'manifest' | 'ensured';
  health: EnvironmentHealth;
  health_detail: ServiceHealth[];
  health_checked_at: Date | null;
  suspended: boolean;
  suspended_reason: string | null;
  suspended_at: Date | null;
  current_release: ReleaseRef | null;
  /** The manifest's protection rules; null when unprotected. */
  protection: EnvironmentProtection | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export type DeployStatus = 'awaiting_approval' | 'waiting' | 'running' | 'succeeded' | 'failed' | 'rejected' | 'pipeline';

/** What a waiting deploy through a pipeline starts it with. */
export interface PipelineRequest {
  inputs: Record<string, unknown>;
  image_tag: string | null;
}

export interface DeployRow {
  id: string;
  environment_id: string;
  project_id: string;
  status: DeployStatus;
  release: ReleaseRef;
  previous_release: ReleaseRef | null;
  rollback_of: string | null;
  direct: boolean;
  pipeline_run_id: string | null;
  error_message: string | null;
  services: ServiceHealth[];
  /** The protection rules the deploy was created under; null for an unprotected environment. */
  protection: EnvironmentProtection | null;
  /** A `waiting` deploy runs from then (its environment's wait_seconds after creation). */
  run_after: Date | null;
  pipeline_request: PipelineRequest | null;
  created_by: string | null;
  created_at: Date;
  completed_at: Date | null;
}

export interface DeployReview {
  deploy_id: string;
  user_id: string;
  decision: 'approved' | 'rejected';
  comment: string | null;
  created_at: Date;
}

/** The fields an environment takes from the manifest or an ensure. */
export type EnvironmentFields = Pick<EnvironmentRow, 'type' | 'namespace' | 'db_ref' | 'kind' | 'pipeline' | 'pipeline_inputs' | 'protection'>;

const json = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));

@injectable()
export class EnvironmentRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  byName(projectId: string, name: string, db: Db = this.db): Promise<EnvironmentRow | undefined> {
    return db('environments').where({ project_id: projectId, name }).first();
  }

  lock(projectId: string, name: string, trx: Db): Promise<EnvironmentRow | undefined> {
    return trx('environments').where({ project_id: projectId, name }).forUpdate().first();
  }

  list(projectId: string, q: ListQuery & { kind?: string; type?: EnvironmentType }): Promise<Page<EnvironmentRow>> {
    const query = this.db('environments').where({ project_id: projectId });
    if (q.kind) query.where('kind', q.kind);
    if (q.type) query.where('type', q.type);
    return paginate(query, q, (r: EnvironmentRow) => r, 'environments');
  }

  /** Inserts the environment, or (same project and name) updates its fields; returns the row and whether it is new. */
  async upsert(
    projectId: string,
    name: string,
    fields: EnvironmentFields,
    source: EnvironmentRow['source'],
    createdBy: string | null,
    trx: Db,
  ): Promise<{ row: EnvironmentRow; created: boolean }> {
    const values = { ...fields, pipeline_inputs: JSON.stringify(fields.pipeline_inputs), protection: json(fields.protection) };
    const [row] = await trx('environments')
      .insert({ id: newId('env'), project_id: projectId, name, source, created_by: createdBy, ...values })
      .onConflict(['project_id', 'name'])
      .merge({ ...values, updated_at: trx.fn.now() })
      .returning(['*', trx.raw('(xmax = 0) AS created')]);
    const { created, ...env } = row;
    return { row: env as EnvironmentRow, created: Boolean(created) };
  }

  /** Serializes creations of one org's environments until the transaction ends (limits.org.environments). */
  async lockOrgCreations(orgId: string, trx: Db): Promise<void> {
    await trx.raw("SELECT pg_advisory_xact_lock(hashtext('environments'), hashtext(?))", [orgId]);
  }

  async countInProjects(projectIds: string[], trx: Db): Promise<number> {
    if (!projectIds.length) return 0;
    const row = (await trx('environments').whereIn('project_id', projectIds).count({ n: '*' }).first()) as { n: string };
    return Number(row.n);
  }

  /** Manifest environments that are no longer in the manifest and never ran anything: removed with the entry. */
  removeStaleFromManifest(projectId: string, keep: string[], trx: Db): Promise<number> {
    return trx('environments').where({ project_id: projectId, source: 'manifest' }).whereNotIn('name', keep).whereNull('current_release').delete();
  }

  async update(id: string, changes: Partial<EnvironmentRow>, trx: Db = this.db): Promise<EnvironmentRow> {
    const values: Record<string, unknown> = { ...changes, updated_at: trx.fn.now() };
    for (const key of ['current_release', 'health_detail', 'pipeline_inputs', 'protection'] as const) if (key in changes) values[key] = json(changes[key]);
    const [row] = await trx('environments').where({ id }).update(values).returning('*');
    return row;
  }

  delete(id: string, trx: Db): Promise<number> {
    return trx('environments').where({ id }).delete();
  }

  /** Locks and returns the org's environments with the given suspended state, through the project ids the caller names. */
  inProjects(projectIds: string[], suspended: boolean, trx: Db): Promise<EnvironmentRow[]> {
    return trx('environments').whereIn('project_id', projectIds).where({ suspended }).orderBy('id').forUpdate();
  }

  /** The projects' environments with their health, by project and name. */
  statuses(projectIds: string[]): Promise<EnvironmentStatus[]> {
    return this.db('environments').whereIn('project_id', projectIds).orderBy(['project_id', 'name']).select('name', 'project_id', 'health as status');
  }

  async insertDeploy(
    row: Omit<DeployRow, 'id' | 'created_at' | 'completed_at' | 'error_message' | 'services' | 'protection' | 'run_after' | 'pipeline_request'> &
      Partial<Pick<DeployRow, 'protection' | 'run_after' | 'pipeline_request'>>,
    trx: Db,
  ): Promise<DeployRow> {
    const [created] = await trx('environment_deploys')
      .insert({
        id: newId('dep'),
        ...row,
        release: json(row.release),
        previous_release: json(row.previous_release),
        protection: json(row.protection),
        pipeline_request: json(row.pipeline_request),
      })
      .returning('*');
    return created;
  }

  /** A deploy that has not ended moves on: approved, its timer run out, or started through its pipeline. */
  async advanceDeploy(id: string, changes: Partial<Pick<DeployRow, 'status' | 'run_after' | 'pipeline_run_id'>>, trx: Db): Promise<DeployRow> {
    const [row] = await trx('environment_deploys').where({ id }).update(changes).returning('*');
    return row;
  }

  async addReview(review: Omit<DeployReview, 'created_at'>, trx: Db): Promise<DeployReview> {
    const [row] = await trx('environment_deploy_reviews').insert(review).returning('*');
    return row;
  }

  /** The reviews of the deploys, oldest first. */
  reviewsOf(deployIds: string[], db: Db = this.db): Promise<DeployReview[]> {
    if (!deployIds.length) return Promise.resolve([]);
    return db('environment_deploy_reviews').whereIn('deploy_id', deployIds).orderBy(['created_at', 'user_id']);
  }

  async finishDeploy(id: string, changes: Pick<DeployRow, 'status' | 'error_message' | 'services'>, trx: Db): Promise<DeployRow> {
    const [row] = await trx('environment_deploys')
      .where({ id })
      .update({ ...changes, services: json(changes.services), completed_at: trx.fn.now() })
      .returning('*');
    return row;
  }

  /** A deploy of the environment still running (its work item runs it to an end, on this process or another). */
  runningDeploy(environmentId: string, trx: Db): Promise<DeployRow | undefined> {
    return trx('environment_deploys').where({ environment_id: environmentId, status: 'running' }).first();
  }

  /** Environments running a release, not suspended, with no deploy running: what health reconciliation reads. */
  reconcilable(): Promise<EnvironmentRow[]> {
    return this.db('environments as e')
      .whereNotNull('e.current_release')
      .where('e.suspended', false)
      .whereNotExists(this.db('environment_deploys as d').whereRaw('d.environment_id = e.id').where('d.status', 'running'))
      .orderBy('e.id')
      .select('e.*');
  }

  /** A deploy by id alone (the work engine's key), locked for `trx` when given one. */
  deployRow(id: string, trx?: Db): Promise<DeployRow | undefined> {
    const q = (trx ?? this.db)('environment_deploys').where({ id });
    return (trx ? q.forUpdate() : q).first();
  }

  byId(id: string, db: Db = this.db): Promise<EnvironmentRow | undefined> {
    return db('environments').where({ id }).first();
  }

  deployById(environmentId: string, id: string, trx?: Db): Promise<DeployRow | undefined> {
    const q = (trx ?? this.db)('environment_deploys').where({ id, environment_id: environmentId });
    return (trx ? q.forUpdate() : q).first();
  }

  deploys(environmentId: string, q: ListQuery & { status?: DeployStatus }): Promise<Page<DeployRow>> {
    const query = this.db('environment_deploys').where({ environment_id: environmentId });
    if (q.status) query.where('status', q.status);
    return paginate(query, q, (r: DeployRow) => r, 'environment_deploys');
  }

  /** The newest succeeded deploy before `before` whose release differs from the current one: what a rollback goes back to. */
  previousSucceeded(environmentId: string, current: ReleaseRef | null): Promise<DeployRow | undefined> {
    const q = this.db('environment_deploys')
      .where({ environment_id: environmentId, status: 'succeeded' })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]);
    if (current) q.whereRaw('release <> ?::jsonb', [JSON.stringify(current)]);
    return q.first();
  }
}
