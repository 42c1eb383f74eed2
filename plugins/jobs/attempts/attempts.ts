import { randomUUID } from 'node:crypto';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import type { ListQuery, Page } from '../../../core/http/lists.ts';
import { JobRepository, type JobRow } from '../job/repository.ts';
import { noUnfinishedBlockers } from '../relations/blockers.ts';
import { isWorkflowRootSql } from '../workflows/roots.ts';
import { NotFound } from '../../../core/errors.ts';

export const ATTEMPT_STATUSES = ['running', 'succeeded', 'failed', 'cancelled'] as const;
export type AttemptStatus = (typeof ATTEMPT_STATUSES)[number];
/** The `svc.status` of a harness's json-result block. */
export const RESULT_STATUSES = ['success', 'waiting', 'failed'] as const;
export type ResultStatus = (typeof RESULT_STATUSES)[number];

export interface AttemptRow {
  id: string;
  job_id: string;
  attempt_number: number;
  status: AttemptStatus;
  result_status: ResultStatus | null;
  result_json: Record<string, unknown> | null;
  result_summary: string | null;
  error: string | null;
  lease_owner: string | null;
  lease_token: string | null;
  lease_expires_at: Date | null;
  git: Record<string, unknown> | null;
  started_at: Date;
  ended_at: Date | null;
  /** The race lane the attempt runs (docs/worker.md, "Rival attempts"), null outside a race. */
  race_lane: number | null;
  /** The outcome of the race's check command in the attempt's workspace. */
  check_result: Record<string, unknown> | null;
  /** The race's attempt chosen as the job's result. */
  chosen: boolean;
}

/** How an attempt ends: its status and what the worker reported. */
export type AttemptEnding = Pick<AttemptRow, 'status'> & Partial<Pick<AttemptRow, 'result_status' | 'result_json' | 'result_summary' | 'error'>>;

/** How the error of an attempt lost with its worker starts (only svc writes a cancelled attempt's error). */
export const WORKER_LOST = 'worker lost';

/** The Attempt as everyone sees it: never the lease token, nor the org it counts against (job_attempts.org_id, bookkeeping). */
export function toAttempt(row: AttemptRow) {
  const { lease_token: _t, org_id: _o, ...attempt } = row as AttemptRow & { org_id?: string | null };
  return attempt as Omit<AttemptRow, 'lease_token'>;
}
export type Attempt = ReturnType<typeof toAttempt>;
/** The attempt as its claimer sees it, once: with the lease token that fences its writes. */
export type ClaimedAttempt = AttemptRow & { lease_token: string };

/** A job's gate keys (`hints.gates`). */
export const gateKeysOf = (job: Pick<JobRow, 'hints'>): string[] => (Array.isArray(job.hints.gates) ? (job.hints.gates as string[]) : []);
/** Gate keys belong to a project: job_gates stores `<project_id>:<key>`, so jobs of other projects (and orgs) never contend. */
const scopedGate = (projectId: string, key: string) => `${projectId}:${key}`;
/** The same scoping as SQL over two expressions (for scans). */
const scopedGateSql = (projectExpr: string, keyExpr: string) => `${projectExpr} || ':' || ${keyExpr}`;
/** Every job_attempts column of an AttemptRow (the compiler insists on all of them; not org_id, bookkeeping), for statements that return attempts. */
const ATTEMPT_COLUMNS = Object.keys({
  id: 1,
  job_id: 1,
  attempt_number: 1,
  status: 1,
  result_status: 1,
  result_json: 1,
  result_summary: 1,
  error: 1,
  lease_owner: 1,
  lease_token: 1,
  lease_expires_at: 1,
  git: 1,
  started_at: 1,
  ended_at: 1,
  race_lane: 1,
  check_result: 1,
  chosen: 1,
} satisfies Record<keyof AttemptRow, 1>);
/** Claimers mark the gate keys they are taking with transaction-scoped advisory locks in this namespace. */
const GATE_LOCK_SPACE = 0x5ca7e;

@injectable()
export class AttemptRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  /** A running attempt numbered after the job's last one, counted against `orgId`'s running attempts; call under the job's row lock. */
  async open(jobId: string, orgId: string, owner: string, leaseSeconds: number, trx: Db, raceLane: number | null = null): Promise<ClaimedAttempt> {
    const [row] = await trx('job_attempts')
      .insert({
        id: randomUUID(),
        race_lane: raceLane,
        job_id: jobId,
        org_id: orgId,
        attempt_number: trx.raw('(SELECT coalesce(max(attempt_number), 0) + 1 FROM job_attempts WHERE job_id = ?)', [jobId]),
        status: 'running',
        lease_owner: owner,
        lease_token: randomUUID(),
        lease_expires_at: trx.raw('now() + make_interval(secs => ?)', [leaseSeconds]),
      })
      .returning(ATTEMPT_COLUMNS);
    return row;
  }

  /** The attempt `attemptId` of `jobId`, row-locked. */
  lock(jobId: string, attemptId: string, trx: Db): Promise<(AttemptRow & { lease_live: boolean }) | undefined> {
    return trx('job_attempts').where({ id: attemptId, job_id: jobId }).forUpdate().first('*', trx.raw('lease_expires_at > now() AS lease_live'));
  }

  /** The running attempt of `jobId` (at most one outside a race), row-locked. */
  running(jobId: string, trx: Db): Promise<AttemptRow | undefined> {
    return trx('job_attempts').where({ job_id: jobId, status: 'running' }).forUpdate().first();
  }

  /** Every running attempt of `jobId` (one per lane in a race), row-locked. */
  allRunning(jobId: string, trx: Db): Promise<AttemptRow[]> {
    return trx('job_attempts').where({ job_id: jobId, status: 'running' }).orderBy('attempt_number').forUpdate();
  }

  /** A new expiry for a lease the caller has checked (see Claims.fence). */
  async renew(attemptId: string, leaseSeconds: number, trx: Db): Promise<AttemptRow> {
    const [row] = await trx('job_attempts')
      .where({ id: attemptId })
      .update({ lease_expires_at: trx.raw('now() + make_interval(secs => ?)', [leaseSeconds]) })
      .returning('*');
    return row;
  }

  /**
   * The next `limit` claimable jobs (ready, not deferred, nothing unfinished they wait for, no gate
   * held by a running attempt; not in `exclude`, not of a project in `skipProjects`, not of a worker
   * type in `skipWorkerTypes`) in claim order, row-locked for the transaction, skipping rows other
   * claimers hold. Nothing is claimed yet: `openPicked` does that once the orgs' quotas are known.
   */
  async pick(limit: number, exclude: string[], skipProjects: string[], skipWorkerTypes: string[], trx: Db): Promise<JobRow[]> {
    const { rows } = await trx.raw(
      `SELECT j.* FROM jobs j
       WHERE j.phase = 'ready' AND (j.defer_until IS NULL OR j.defer_until <= now()) AND j.id <> ALL(?::text[]) AND j.project_id <> ALL(?::text[])
         AND coalesce(nullif(j.hints->>'worker_type', ''), 'default') <> ALL(?::text[])
         AND ${noUnfinishedBlockers('j')} AND NOT ${isWorkflowRootSql('j')}
         AND NOT EXISTS (SELECT 1 FROM job_gates g WHERE g.gate_key IN (
               SELECT ${scopedGateSql('j.project_id', 'k')} FROM jsonb_array_elements_text(coalesce(j.hints->'gates', '[]')) AS k))
       ORDER BY j.priority, j.created_at, j.id
       LIMIT ? FOR UPDATE OF j SKIP LOCKED`,
      [exclude, skipProjects, skipWorkerTypes, limit],
    );
    return rows;
  }

  /**
   * Claims picked jobs (`pick`, row-locked by this transaction) within their orgs' running-attempt
   * quota, in one statement: each org's running attempts are counted (call under the orgs' locks,
   * RunningOrgs, so the count is exact) and its picks, in the order given, take the free places.
   * The gate-less ones among those are claimed on the spot, as `open` plus the job update of
   * `JobLifecycle.start` would: a running attempt numbered after the job's last, with a lease for
   * `owner` on the database clock, and the job active for `owner` (no receipt: receipts are written
   * when attempts end). Gated ones that got a place come back with no attempt, for the per-job path
   * (advisory locks and job_gates). Picks without a place are not in the answer. Rows in the order given.
   */
  async openPicked(
    picks: { job: JobRow; orgId: string }[],
    owner: string,
    leaseSeconds: number,
    quota: number,
    trx: Db,
  ): Promise<{ job: JobRow; attempt: ClaimedAttempt | null }[]> {
    const candidates = picks.map(({ job, orgId }, ord) => ({ id: job.id, org_id: orgId, ord, gated: gateKeysOf(job).length > 0 }));
    const { rows } = await trx.raw(
      `WITH cand AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS c(id text, org_id text, ord int, gated boolean)),
       counted AS (
         SELECT a.org_id, count(*)::int AS n FROM job_attempts a
         WHERE a.status = 'running' AND a.org_id IN (SELECT org_id FROM cand) GROUP BY a.org_id),
       placed AS (
         SELECT r.* FROM (SELECT c.*, row_number() OVER (PARTITION BY c.org_id ORDER BY c.ord) AS k FROM cand c) r
         LEFT JOIN counted n ON n.org_id = r.org_id
         WHERE r.k + coalesce(n.n, 0) <= ?::int),
       opened AS (
         INSERT INTO job_attempts (id, job_id, org_id, attempt_number, status, lease_owner, lease_token, lease_expires_at)
         SELECT gen_random_uuid(), p.id, p.org_id, coalesce((SELECT max(x.attempt_number) FROM job_attempts x WHERE x.job_id = p.id), 0) + 1,
                'running', ?::text, gen_random_uuid(), now() + make_interval(secs => ?::float8)
         FROM placed p WHERE NOT p.gated
         RETURNING ${ATTEMPT_COLUMNS.join(', ')}),
       activated AS (
         UPDATE jobs j SET phase = 'active', assignee = ?::text, updated_at = now()
         FROM opened o WHERE j.id = o.job_id
         RETURNING j.*)
       SELECT p.id AS "placed.id", c.*, ${ATTEMPT_COLUMNS.map((col) => `o.${col} AS "attempt.${col}"`).join(', ')}
       FROM placed p LEFT JOIN activated c ON c.id = p.id LEFT JOIN opened o ON o.job_id = p.id
       ORDER BY p.ord`,
      [JSON.stringify(candidates), quota, owner, leaseSeconds, owner],
    );
    const picked = new Map(picks.map(({ job }) => [job.id, job]));
    return rows.map((row: Record<string, unknown>) => {
      const job: Record<string, unknown> = {};
      const attempt: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(row)) {
        if (k.startsWith('attempt.')) attempt[k.slice('attempt.'.length)] = v;
        else if (k !== 'placed.id') job[k] = v;
      }
      if (!attempt.id) return { job: picked.get(row['placed.id'] as string)!, attempt: null };
      return { job: job as unknown as JobRow, attempt: attempt as unknown as ClaimedAttempt };
    });
  }

  /** Ends the attempt and frees its gates (JobLifecycle.endAttempt does the rest of an ending). */
  async end(attemptId: string, ending: AttemptEnding, trx: Db): Promise<AttemptRow> {
    const changes: Record<string, unknown> = { ...ending, ended_at: trx.fn.now() };
    if (ending.result_json) changes.result_json = JSON.stringify(ending.result_json);
    const [row] = await trx('job_attempts').where({ id: attemptId }).update(changes).returning('*');
    await trx('job_gates').where({ attempt_id: attemptId }).delete();
    return row;
  }

  /** The resolved git of a running attempt (see ResolvedGit), written just before it ends. */
  async setGit(attemptId: string, git: Record<string, unknown>, trx: Db): Promise<void> {
    await trx('job_attempts')
      .where({ id: attemptId })
      .update({ git: JSON.stringify(git) });
  }

  /** The outcome of a race's check command in the attempt's workspace (docs/worker.md, "Rival attempts"). */
  async setCheck(attemptId: string, check: Record<string, unknown>, trx: Db): Promise<void> {
    await trx('job_attempts')
      .where({ id: attemptId })
      .update({ check_result: JSON.stringify(check) });
  }

  /**
   * Takes every gate key of the job for the attempt, or reports the keys held by other jobs (the
   * caller then rolls back whatever was taken). A key another claimer is taking at this moment
   * counts as held: claimers never wait for each other, so claim batches cannot deadlock on gates.
   */
  async acquireGates(job: JobRow, attemptId: string, trx: Db): Promise<string[]> {
    const keys = gateKeysOf(job);
    if (keys.length === 0) return [];
    const scoped = keys.map((k) => scopedGate(job.project_id, k));
    const { rows: busy } = await trx.raw('SELECT k FROM unnest(?::text[]) AS k WHERE NOT pg_try_advisory_xact_lock(?::int, hashtext(k))', [
      scoped,
      GATE_LOCK_SPACE,
    ]);
    const free = scoped.filter((k) => !busy.some((b: { k: string }) => b.k === k)).sort();
    const taken: { gate_key: string }[] = free.length
      ? await trx('job_gates')
          .insert(free.map((k) => ({ gate_key: k, job_id: job.id, attempt_id: attemptId })))
          .onConflict('gate_key')
          .ignore()
          .returning('gate_key')
      : [];
    return keys.filter((_, i) => !taken.some((t) => t.gate_key === scoped[i]));
  }

  /** Attempts of the job that ended lost with their worker (JobLifecycle.workerLost). */
  async lostWithWorkers(jobId: string, trx: Db): Promise<number> {
    const row = await trx('job_attempts').where({ job_id: jobId, status: 'cancelled' }).whereLike('error', `${WORKER_LOST}:%`).count({ n: '*' }).first();
    return Number((row as { n: unknown }).n);
  }

  /** Failed attempts of the job so far: what `hints.max_attempts` limits. */
  async failures(jobId: string, trx: Db): Promise<number> {
    const row = await trx('job_attempts').where({ job_id: jobId, status: 'failed' }).count({ n: '*' }).first();
    return Number((row as { n: unknown }).n);
  }

  /** Running attempts whose lease ran out, with their jobs row-locked (jobs locked elsewhere are left for the next pass). */
  async expired(limit: number, trx: Db): Promise<AttemptRow[]> {
    const { rows } = await trx.raw(
      `SELECT a.* FROM job_attempts a JOIN jobs j ON j.id = a.job_id
       WHERE a.status = 'running' AND a.lease_expires_at <= now()
       ORDER BY a.lease_expires_at LIMIT ? FOR UPDATE OF j SKIP LOCKED`,
      [limit],
    );
    return rows;
  }

  /** The owners of running attempts whose name starts with `prefix`. */
  async runningOwners(prefix: string, db: Db): Promise<string[]> {
    const rows = await db('job_attempts')
      .distinct('lease_owner')
      .where({ status: 'running' })
      .whereLike('lease_owner', `${prefix.replace(/[\\%_]/g, '\\$&')}%`);
    return rows.map((r: { lease_owner: string }) => r.lease_owner);
  }

  /** Ends the leases of these owners' running attempts now, so the reaper takes them at its next pass. */
  async expireLeasesOf(owners: string[], db: Db): Promise<number> {
    if (owners.length === 0) return 0;
    return db('job_attempts')
      .where({ status: 'running' })
      .whereIn('lease_owner', owners)
      .where('lease_expires_at', '>', db.fn.now())
      .update({ lease_expires_at: db.fn.now() });
  }

  /** One page of the job's attempts, newest (highest number) first. */
  async page(jobId: string, { limit, offset }: Pick<ListQuery, 'limit' | 'offset'>): Promise<Page<Attempt>> {
    const attempts = this.db('job_attempts').where({ job_id: jobId });
    const [rows, counted] = await Promise.all([
      attempts.clone().orderBy('attempt_number', 'desc').limit(limit).offset(offset),
      attempts.clone().count({ n: '*' }).first(),
    ]);
    const total = Number((counted as { n: unknown }).n);
    return { data: rows.map(toAttempt), pagination: { limit, offset, count: rows.length, total, has_more: offset + rows.length < total } };
  }

  byNumber(jobId: string, attemptNumber: number, db: Db = this.db): Promise<AttemptRow | undefined> {
    return db('job_attempts').where({ job_id: jobId, attempt_number: attemptNumber }).first();
  }

  /** A race's attempts (docs/worker.md, "Rival attempts"), by lane then number. */
  raced(jobId: string): Promise<AttemptRow[]> {
    return this.db('job_attempts').where({ job_id: jobId }).whereNotNull('race_lane').orderBy(['race_lane', 'attempt_number']);
  }

  /** Marks the attempt as its race's chosen one. */
  async choose(attemptId: string, trx: Db): Promise<AttemptRow> {
    const [row] = await trx('job_attempts').where({ id: attemptId }).update({ chosen: true }).returning('*');
    return row;
  }

  /** The numbers of the job's other race attempts (not `chosenId`) that pushed their work. */
  async pushedRivals(jobId: string, chosenId: string, trx: Db): Promise<number[]> {
    const rows: { attempt_number: number }[] = await trx('job_attempts')
      .select('attempt_number')
      .where({ job_id: jobId })
      .whereNotNull('race_lane')
      .whereNot({ id: chosenId })
      .whereRaw(`(git->>'pushed')::boolean`)
      .orderBy('attempt_number');
    return rows.map((r) => r.attempt_number);
  }

  /** The id of the attempt a composite reference names, when its job is in that project. */
  async byReference(projectId: string, jobId: string, attemptNumber: number): Promise<string | undefined> {
    const row = await this.db('job_attempts')
      .join('jobs', 'jobs.id', 'job_attempts.job_id')
      .where({ 'jobs.project_id': projectId, 'job_attempts.job_id': jobId, 'job_attempts.attempt_number': attemptNumber })
      .first('job_attempts.id');
    return row?.id;
  }
}

/** The attempts read API: a job's attempts, reachable only through the job's own project. */
@injectable()
export class AttemptHistory {
  constructor(
    @inject(JobRepository) private readonly jobs: JobRepository,
    @inject(AttemptRepository) private readonly attempts: AttemptRepository,
  ) {}

  async list(projectId: string, jobId: string, page: Pick<ListQuery, 'limit' | 'offset'>): Promise<Page<Attempt>> {
    await this.requireJobIn(projectId, jobId);
    return this.attempts.page(jobId, page);
  }

  async get(projectId: string, jobId: string, attemptNumber: number): Promise<Attempt> {
    await this.requireJobIn(projectId, jobId);
    const row = await this.attempts.byNumber(jobId, attemptNumber);
    if (!row) throw new NotFound(`attempt ${attemptNumber} of job ${jobId} not found`);
    return toAttempt(row);
  }

  private async requireJobIn(projectId: string, jobId: string): Promise<void> {
    const job = await this.jobs.byId(jobId);
    if (job?.project_id !== projectId) throw new NotFound(`job ${jobId} not found`);
  }
}
