import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { BLOCKERS_SQL, RELATED_WAITS, WAITS_FOR_RELATED } from './blockers.ts';
import type { Phase, RELATION_TYPES } from '../job/schemas.ts';
import { Conflict, Invalid, NotFound } from '../../../core/errors.ts';
import { mayNameJob, type Principal } from '../../../core/auth/principal.ts';

export type RelationType = (typeof RELATION_TYPES)[number];

/** A stored relation, read "{job_id} <relation_type> {related_job_id}". */
export interface Relation {
  job_id: string;
  related_job_id: string;
  relation_type: RelationType;
  created_at: Date;
}

/** A relation seen from one of its two jobs: `related` is the job at the other end. */
export interface RelationView extends Relation {
  related: { id: string; title: string; phase: Phase };
}

/** A job's relations split by who waits: `dependencies` it waits for, `dependents` waiting for it. */
export interface RelationsAround {
  dependencies: RelationView[];
  dependents: RelationView[];
}

/** A relation touching a job, with the job at its other end. */
export type TouchingRow = Relation & { other_id: string; other_title: string; other_phase: Phase };

/** SQL selecting a TouchingRow for every relation of the job whose id is the SQL expression `jobId`, oldest first. */
export const touchingSql = (jobId: string) => `
  SELECT r.job_id, r.related_job_id, r.relation_type, r.created_at, o.id AS other_id, o.title AS other_title, o.phase AS other_phase
  FROM job_relations r JOIN jobs o ON o.id = CASE WHEN r.job_id = ${jobId} THEN r.related_job_id ELSE r.job_id END
  WHERE r.job_id = ${jobId} OR r.related_job_id = ${jobId}
  ORDER BY r.created_at, o.id`;

/** `jobId`'s relations (TouchingRows, in their order) split by who waits. */
export function aroundOf(jobId: string, touching: TouchingRow[]): RelationsAround {
  const out: RelationsAround = { dependencies: [], dependents: [] };
  for (const { other_id, other_title, other_phase, ...relation } of touching) {
    const view = { ...relation, related: { id: other_id, title: other_title, phase: other_phase } };
    (waitsForEdge(relation).waiter === jobId ? out.dependencies : out.dependents).push(view);
  }
  return out;
}

/** Which end of a relation waits for the other, as blockers.ts defines it. */
export function waitsForEdge(r: Pick<Relation, 'job_id' | 'related_job_id' | 'relation_type'>): { waiter: string; blocker: string } {
  if ((WAITS_FOR_RELATED as readonly string[]).includes(r.relation_type)) return { waiter: r.job_id, blocker: r.related_job_id };
  if ((RELATED_WAITS as readonly string[]).includes(r.relation_type)) return { waiter: r.related_job_id, blocker: r.job_id };
  throw new Error(`unknown relation type ${r.relation_type}`);
}

@injectable()
export class RelationRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  /** Serializes relation writes of one project: the cycle check and the insert see one graph. */
  async lockProjectGraph(projectId: string, trx: Db): Promise<void> {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?), hashtext(?))', ['jobs.relations', projectId]);
  }

  jobInProject(jobId: string, projectId: string, trx: Db): Promise<{ id: string } | undefined> {
    return trx('jobs').where({ id: jobId, project_id: projectId }).first('id');
  }

  /** The relations stored between two jobs, in either direction. */
  between(a: string, b: string, trx: Db = this.db): Promise<Relation[]> {
    return trx('job_relations')
      .where((w) => w.where({ job_id: a, related_job_id: b }).orWhere({ job_id: b, related_job_id: a }))
      .orderBy('created_at')
      .select('job_id', 'related_job_id', 'relation_type', 'created_at');
  }

  async insert(relation: Omit<Relation, 'created_at'>, trx: Db): Promise<Relation> {
    const [row] = await trx('job_relations').insert(relation).returning(['job_id', 'related_job_id', 'relation_type', 'created_at']);
    return row;
  }

  /** Deletes the relations between two jobs (either direction); the number deleted. */
  deleteBetween(a: string, b: string, trx: Db): Promise<number> {
    return trx('job_relations')
      .where((w) => w.where({ job_id: a, related_job_id: b }).orWhere({ job_id: b, related_job_id: a }))
      .delete();
  }

  /** Every relation touching `jobId`, with the job at the other end, oldest first. */
  async touching(jobId: string, trx: Db = this.db): Promise<TouchingRow[]> {
    const { rows } = await trx.raw(touchingSql('?'), [jobId, jobId, jobId]);
    return rows;
  }

  /**
   * The waits-for edges reachable from `start` (each `via` waits for `node`; the start row has no
   * `via`), following BLOCKERS_SQL from job to job. UNION keeps each edge once, so it ends on cycles.
   */
  async reachableEdges(start: string, trx: Db): Promise<{ node: string; via: string | null }[]> {
    const blockersOfNode = trx.raw(BLOCKERS_SQL, [trx.raw('walk.node'), trx.raw('walk.node')]);
    const { rows } = await trx.raw(
      `WITH RECURSIVE walk(node, via) AS (
         SELECT ?::text, NULL::text
         UNION
         SELECT b.blocker_id, walk.node FROM walk CROSS JOIN LATERAL (?) b
       ) SELECT node, via FROM walk`,
      [start, blockersOfNode],
    );
    return rows;
  }
}

/** The shortest waits-for path from `from` to `to` over `edges`, or null when `to` is not reachable. */
export function pathBetween(edges: { node: string; via: string | null }[], from: string, to: string): string[] | null {
  const next = new Map<string, string[]>();
  for (const { node, via } of edges) if (via !== null) next.set(via, [...(next.get(via) ?? []), node]);
  const cameFrom = new Map<string, string | null>([[from, null]]);
  for (let queue = [from]; queue.length > 0;) {
    const current = queue.shift()!;
    if (current === to) {
      const path = [current];
      for (let p = cameFrom.get(current); p; p = cameFrom.get(p)) path.unshift(p);
      return path;
    }
    for (const n of next.get(current) ?? []) {
      if (!cameFrom.has(n)) {
        cameFrom.set(n, current);
        queue.push(n);
      }
    }
  }
  return null;
}

/** The cycle `nodes` (closing edge implied) written from `first`: `first -> … -> first`. */
function cycleText(nodes: string[], first: string): string {
  const at = nodes.indexOf(first);
  const rotated = [...nodes.slice(at), ...nodes.slice(0, at), first];
  return rotated.join(' -> ');
}

export type AddResult = { relation: Relation; created: boolean };

/** Relations between jobs of one project: add (idempotent), list both directions, remove. */
@injectable()
export class JobRelations {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(RelationRepository) private readonly relations: RelationRepository,
  ) {}

  /**
   * "{jobId} <type> {relatedId}". The same relation again is returned unchanged (created false);
   * another relation between the pair is 409; self, foreign or unknown related jobs and cycles 422.
   */
  /** A job token names no job but its own, so it relates nothing (a related job it may not name reads as outside the project). */
  async add(caller: Principal, projectId: string, jobId: string, relatedId: string, type: RelationType): Promise<AddResult> {
    if (relatedId === jobId) throw new Invalid(`job ${jobId} cannot be related to itself`);
    if (!mayNameJob(caller, relatedId)) throw new Invalid(`related job ${relatedId} is not a job of this project`);
    return this.db.transaction(async (trx) => {
      await this.relations.lockProjectGraph(projectId, trx);
      if (!(await this.relations.jobInProject(relatedId, projectId, trx))) throw new Invalid(`related job ${relatedId} is not a job of this project`);
      const existing = await this.relations.between(jobId, relatedId, trx);
      const same = existing.find((r) => r.job_id === jobId && r.relation_type === type);
      if (same) return { relation: same, created: false };
      const wanted = { job_id: jobId, related_job_id: relatedId, relation_type: type };
      await this.refuseCycle(wanted, trx);
      if (existing.length > 0) {
        const [r] = existing;
        throw new Conflict(`jobs ${jobId} and ${relatedId} are already related: ${r.job_id} ${r.relation_type} ${r.related_job_id}`);
      }
      return { relation: await this.relations.insert(wanted, trx), created: true };
    });
  }

  /** 422 naming the cycle when the blocker already waits, directly or not, for the waiter. */
  private async refuseCycle(wanted: Omit<Relation, 'created_at'>, trx: Db): Promise<void> {
    const { waiter, blocker } = waitsForEdge(wanted);
    const path = pathBetween(await this.relations.reachableEdges(blocker, trx), blocker, waiter);
    if (!path) return;
    const cycle = cycleText([waiter, ...path.slice(0, -1)], wanted.job_id);
    throw new Invalid(`${wanted.job_id} ${wanted.relation_type} ${wanted.related_job_id} would close a cycle: ${cycle} (each job waits for the next)`);
  }

  async around(jobId: string, trx: Db = this.db): Promise<RelationsAround> {
    return aroundOf(jobId, await this.relations.touching(jobId, trx));
  }

  /** Removes the relation between the two jobs, whichever of them it was stored on. */
  async remove(caller: Principal, projectId: string, jobId: string, relatedId: string): Promise<void> {
    if (!mayNameJob(caller, relatedId)) throw new NotFound(`job ${jobId} has no relation to job ${relatedId}`);
    await this.db.transaction(async (trx) => {
      await this.relations.lockProjectGraph(projectId, trx);
      if ((await this.relations.deleteBetween(jobId, relatedId, trx)) === 0) throw new NotFound(`job ${jobId} has no relation to job ${relatedId}`);
    });
  }
}
