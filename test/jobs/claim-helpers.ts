import type { ExecutionContext } from 'ava';
import type { Db } from '../../core/db/knex.ts';
import { Claims } from '../../plugins/jobs/claims/claims.ts';
import type { Reply, TestServerOptions } from '../support/server.ts';
import { assertError, newUser, setup, unique, type Ctx, type User } from '../orgs/helpers.ts';

/** One server per test file: an owner of org A with projects A and A2, and an outsider who owns org B. */
export interface World {
  ctx: Ctx;
  db: Db;
  claims: Claims;
  owner: User;
  outsider: User;
  projectA: string;
  projectA2: string;
  projectB: string;
}

export async function claimWorld(name: string, opts: TestServerOptions = {}): Promise<World> {
  const ctx = await setup(opts);
  const owner = await newUser(ctx, `${name}-owner`);
  const outsider = await newUser(ctx, `${name}-outsider`);
  const orgA = (await owner.api.post('/orgs', { name: unique(`${name} A`) })).body.id;
  const orgB = (await outsider.api.post('/orgs', { name: unique(`${name} B`) })).body.id;
  const slug = name.slice(0, 5);
  const projectA = (await owner.api.post('/projects', { org_id: orgA, name: 'A', slug: `${slug}a` })).body.id;
  const projectA2 = (await owner.api.post('/projects', { org_id: orgA, name: 'A2', slug: `${slug}b` })).body.id;
  const projectB = (await outsider.api.post('/projects', { org_id: orgB, name: 'B', slug: `${slug}c` })).body.id;
  const container = ctx.srv.server.app.container;
  return { ctx, db: ctx.srv.kernel.db, claims: container.resolve(Claims), owner, outsider, projectA, projectA2, projectB };
}

/** A new job (ready unless the body says otherwise) in project A, or `project`. */
export async function newJob(w: World, body: Record<string, unknown> = {}, project = w.projectA, user = w.owner): Promise<any> {
  const res = await user.api.post(`/projects/${project}/jobs`, { description: unique('work'), ...body });
  if (res.statusCode !== 201) throw new Error(`job: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Claims through the API and insists on 200; returns `{job, attempt}` with the lease token. */
export async function claimed(t: ExecutionContext, w: World, jobId: string, body: Record<string, unknown> = {}, user = w.owner) {
  const res = await user.api.post(`/jobs/${jobId}/claim`, body);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  return res.body as { job: any; attempt: { id: string; lease_token: string; attempt_number: number; [k: string]: unknown } };
}

/** Ends an attempt through the API with its lease token. */
export function complete(
  w: World,
  jobId: string,
  attempt: { id: string; lease_token: string },
  result: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  user = w.owner,
): Promise<Reply> {
  return user.api.post(`/jobs/${jobId}/attempts/${attempt.id}/complete`, { lease_token: attempt.lease_token, result, ...extra });
}

/** "{jobId} blocked_by {blockerId}", written directly (relations have their own API and tests). */
export async function blockedBy(w: World, jobId: string, blockerId: string): Promise<void> {
  await w.db('job_relations').insert({ job_id: jobId, related_job_id: blockerId, relation_type: 'blocked_by' });
}

export const jobRow = (w: World, id: string) => w.db('jobs').where({ id }).first();
export const attemptRow = (w: World, id: string) => w.db('job_attempts').where({ id }).first();
export const attemptsOf = (w: World, jobId: string) => w.db('job_attempts').where({ job_id: jobId }).orderBy('attempt_number');
/** The gate keys (unscoped) a job holds now. */
export async function gatesHeldBy(w: World, jobId: string): Promise<string[]> {
  const rows = await w.db('job_gates').where({ job_id: jobId }).orderBy('gate_key').pluck('gate_key');
  return rows.map((k: string) => k.slice(k.indexOf(':') + 1));
}

/** A 409 with exactly the Boom body and a message matching `message`. */
export const assertConflict = (t: ExecutionContext, res: Reply, message: string | RegExp) => assertError(t, res, 409, message);

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const secondsFromNow = (iso: string) => (new Date(iso).getTime() - Date.now()) / 1000;
