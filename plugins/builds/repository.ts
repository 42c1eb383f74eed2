import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { BuiltImage, BuildErrorClass } from '../../core/ports/builder.ts';
import type { RunStatus } from './schemas.ts';

export interface BuildSpec {
  id: string;
  project_id: string;
  git_sha: string;
  manifest_hash: string;
  services: string[] | null;
  inputs: Record<string, unknown>;
  registry: unknown;
  cache: Record<string, unknown>;
  created_by: string | null;
  created_at: Date;
}

export interface BuildRun {
  id: string;
  build_id: string;
  status: RunStatus;
  backend: string;
  force_rebuild: boolean;
  runner_ref: string | null;
  logs_ref: string | null;
  error_class: BuildErrorClass | null;
  error_message: string | null;
  failed_stage: string | null;
  log_tail: string[] | null;
  reused_from: string | null;
  created_by: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

export interface Artifact extends BuiltImage {
  run_id: string;
  created_at: Date;
}

export type NewSpec = Omit<BuildSpec, 'id' | 'created_at'>;
export type RunEnd = Pick<BuildRun, 'status'> & Partial<Pick<BuildRun, 'error_class' | 'error_message' | 'failed_stage' | 'log_tail' | 'reused_from'>>;

const RUN_COLUMNS = [
  'id',
  'build_id',
  'status',
  'backend',
  'force_rebuild',
  'runner_ref',
  'logs_ref',
  'error_class',
  'error_message',
  'failed_stage',
  'log_tail',
  'reused_from',
  'created_by',
  'created_at',
  'started_at',
  'completed_at',
];
const ARTIFACT_COLUMNS = ['run_id', 'service_name', 'image_ref', 'digest', 'platforms', 'size_bytes', 'created_at'];
const toArtifact = (row: Artifact & { size_bytes: unknown }): Artifact => ({ ...row, size_bytes: row.size_bytes === null ? null : Number(row.size_bytes) });

/** build_specs, build_runs and build_artifacts: SQL only. */
@injectable()
export class BuildRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  async insertSpec(spec: NewSpec, trx: Db): Promise<BuildSpec> {
    const row = { id: newId('bld'), ...spec, inputs: JSON.stringify(spec.inputs), registry: JSON.stringify(spec.registry), cache: JSON.stringify(spec.cache) };
    const [stored] = await trx('build_specs').insert(row).returning('*');
    return stored;
  }

  spec(buildId: string, db: Db = this.db): Promise<BuildSpec | undefined> {
    return db('build_specs').where({ id: buildId }).first();
  }

  /** The newest spec a build step of this pipeline run created. */
  specOfPipelineRun(projectId: string, pipelineRunId: string): Promise<BuildSpec | undefined> {
    return this.db('build_specs')
      .where({ project_id: projectId })
      .whereRaw("inputs ->> 'pipeline_run_id' = ?", [pipelineRunId])
      .orderBy('created_at', 'desc')
      .first();
  }

  listSpecs(projectId: string, filters: ListQuery & { git_sha?: string }): Promise<Page<BuildSpec>> {
    const q = this.db('build_specs').where({ project_id: projectId });
    if (filters.git_sha) q.andWhere({ git_sha: filters.git_sha });
    return paginate(q, filters, (r: BuildSpec) => r, 'build_specs');
  }

  /** A pending run. */
  async insertRun(run: Pick<BuildRun, 'build_id' | 'backend' | 'force_rebuild' | 'created_by'>, trx: Db): Promise<BuildRun> {
    const id = newId('brun');
    const [stored] = await trx('build_runs')
      .insert({ id, ...run, logs_ref: `/builds/${run.build_id}/logs?run_id=${id}` })
      .returning(RUN_COLUMNS);
    return stored;
  }

  /**
   * A run completed at once with the artifacts of run `from` and one log line, in a single
   * statement (build reuse answers within the request); with the digests it carries, by service.
   */
  async insertReusedRun(
    run: Pick<BuildRun, 'build_id' | 'backend' | 'force_rebuild' | 'created_by'>,
    from: string,
    logLine: string,
    trx: Db,
  ): Promise<{ run: BuildRun; digests: Record<string, string> }> {
    const id = newId('brun');
    const { rows } = await trx.raw<{ rows: (BuildRun & { image_digests: Record<string, string> | null })[] }>(
      `WITH run AS (
         INSERT INTO build_runs (id, build_id, backend, force_rebuild, created_by, logs_ref, status, reused_from, started_at, completed_at)
         VALUES (?, ?, ?, ?, ?, ?, 'completed', ?, now(), now())
         RETURNING ${RUN_COLUMNS.join(', ')}
       ), copied AS (
         INSERT INTO build_artifacts (build_id, run_id, service_name, image_ref, digest, platforms, size_bytes)
         SELECT ?, ?, service_name, image_ref, digest, platforms, size_bytes FROM build_artifacts WHERE run_id = ?
         RETURNING service_name, digest
       ), logged AS (
         INSERT INTO build_logs (run_id, seq, stream, line) VALUES (?, 1, 'system', ?)
       )
       SELECT run.*, (SELECT json_object_agg(service_name, digest) FROM copied) AS image_digests FROM run`,
      [
        id,
        run.build_id,
        run.backend,
        run.force_rebuild,
        run.created_by,
        `/builds/${run.build_id}/logs?run_id=${id}`,
        from,
        run.build_id,
        id,
        from,
        id,
        logLine,
      ],
    );
    const { image_digests, ...stored } = rows[0];
    return { run: stored, digests: image_digests ?? {} };
  }

  run(runId: string, db: Db = this.db): Promise<BuildRun | undefined> {
    return db('build_runs').where({ id: runId }).first(RUN_COLUMNS);
  }

  /** The newest run of each spec. */
  async latestRuns(buildIds: string[]): Promise<Map<string, BuildRun>> {
    if (buildIds.length === 0) return new Map();
    const rows: BuildRun[] = await this.db('build_runs')
      .distinctOn('build_id')
      .whereIn('build_id', buildIds)
      .orderBy([{ column: 'build_id' }, { column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }])
      .select(RUN_COLUMNS);
    return new Map(rows.map((r) => [r.build_id, r]));
  }

  listRuns(buildId: string, filters: ListQuery & { status?: RunStatus }): Promise<Page<BuildRun>> {
    const q = this.db('build_runs').where({ build_id: buildId });
    if (filters.status) q.andWhere({ status: filters.status });
    return paginate(q, filters, (r: BuildRun) => r, 'build_runs');
  }

  /**
   * The run, now `building` under `runnerRef` (its work item's lease holder), unless it ended
   * meanwhile (cancelled before a runner took it); `fresh` when it was pending until now.
   */
  async startBuilding(runId: string, runnerRef: string, trx: Db): Promise<{ run: BuildRun; fresh: boolean } | undefined> {
    const before = await trx('build_runs').where({ id: runId }).forUpdate().first('status');
    if (!before || !['pending', 'building'].includes(before.status)) return undefined;
    const [run] = await trx('build_runs')
      .where({ id: runId })
      .update({ status: 'building', runner_ref: runnerRef, started_at: trx.raw('coalesce(started_at, now())') })
      .returning(RUN_COLUMNS);
    return { run, fresh: before.status === 'pending' };
  }

  /** Ends a run that is still active; false when it had already ended (a cancel won the race). */
  async end(runId: string, end: RunEnd, trx: Db = this.db): Promise<boolean> {
    const n = await trx('build_runs')
      .where({ id: runId })
      .whereIn('status', ['pending', 'building'])
      .update({ ...end, completed_at: trx.fn.now() });
    return n > 0;
  }

  async insertArtifacts(buildId: string, runId: string, images: BuiltImage[], trx: Db): Promise<void> {
    if (images.length === 0) return;
    await trx('build_artifacts').insert(images.map((i) => ({ ...i, build_id: buildId, run_id: runId })));
  }

  /** Artifacts of the build's latest completed run. */
  async artifacts(buildId: string): Promise<Artifact[]> {
    const rows = await this.db('build_artifacts')
      .where('run_id', this.db('build_runs').where({ build_id: buildId, status: 'completed' }).orderBy('completed_at', 'desc').limit(1).select('id'))
      .orderBy('service_name')
      .select(ARTIFACT_COLUMNS);
    return rows.map(toArtifact);
  }

  /**
   * The latest completed run with artifacts of any build of this project with the same commit,
   * manifest and requested services (build reuse).
   */
  async reusable(spec: Pick<BuildSpec, 'project_id' | 'git_sha' | 'manifest_hash' | 'services'>, trx: Db = this.db): Promise<string | null> {
    const run = await trx('build_runs as r')
      .join('build_specs as s', 's.id', 'r.build_id')
      .where({ 's.project_id': spec.project_id, 's.git_sha': spec.git_sha, 's.manifest_hash': spec.manifest_hash, 'r.status': 'completed' })
      .whereRaw('s.services IS NOT DISTINCT FROM ?::text[]', [spec.services])
      .whereExists(trx('build_artifacts as a').whereRaw('a.run_id = r.id'))
      .orderBy('r.completed_at', 'desc')
      .first('r.id');
    return run?.id ?? null;
  }
}
