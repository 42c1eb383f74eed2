import { randomUUID } from 'node:crypto';
import test from 'ava';
import { assertError, newUser, setup, unique, type Ctx, type User } from '../orgs/helpers.ts';

let ctx: Ctx;
let owner: User;
let outsider: User;
let projectId = '';

test.before(async () => {
  ctx = await setup();
  owner = await newUser(ctx, 'ctx-owner');
  outsider = await newUser(ctx, 'ctx-outsider');
  const orgId = (await owner.api.post('/orgs', { name: unique('Ctx') })).body.id;
  projectId = (await owner.api.post('/projects', { org_id: orgId, name: 'Ctx', slug: 'ctxp' })).body.id;
  await outsider.api.post('/orgs', { name: unique('Elsewhere') });
});

test.after.always(async () => {
  await ctx?.srv.stop();
});

async function newJob(description: string, parentId?: string): Promise<Record<string, any>> {
  const res = await owner.api.post(`/projects/${projectId}/jobs`, { description, ...(parentId ? { parent_id: parentId } : {}) });
  if (res.statusCode !== 201) throw new Error(`job: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}
const contextOf = async (id: string) => {
  const res = await owner.api.get(`/jobs/${id}/context`);
  if (res.statusCode !== 200) throw new Error(`context: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
};
const current = async (id: string) => (await owner.api.get(`/jobs/${id}`)).body;
const db = () => ctx.srv.kernel.db;

/** An attempt row as the claimer would leave it (the claimer is not what is tested here). */
async function insertAttempt(jobId: string, attemptNumber: number, fields: Record<string, unknown> = {}) {
  const id = randomUUID();
  await db()('job_attempts').insert({ id, job_id: jobId, attempt_number: attemptNumber, status: 'succeeded', ...fields });
  return id;
}

const CONTEXT_FIELDS = ['blocked', 'children', 'effective_phase', 'job', 'latest_attempt', 'latest_rejection_reason', 'parent', 'relations', 'waiting'];

test('a lone root job: no parent, no children, no relations, nothing attempted, its own phase', async (t) => {
  const root = await newJob('alone');
  const body = await contextOf(root.id);
  t.deepEqual(Object.keys(body).sort(), CONTEXT_FIELDS);
  t.deepEqual(body, {
    job: root,
    parent: null,
    children: [],
    relations: { dependencies: [], dependents: [], blocking: [] },
    latest_attempt: null,
    latest_rejection_reason: null,
    blocked: false,
    waiting: false,
    effective_phase: 'ready',
  });
  t.is((await owner.api.patch(`/jobs/${root.id}`, { phase: 'backlog' })).statusCode, 200);
  t.is((await contextOf(root.id)).effective_phase, 'backlog');
});

test('a root lists its direct children in child-number order; a child names its parent', async (t) => {
  const root = await newJob('parent');
  const children = [];
  for (let i = 1; i <= 11; i++) children.push(await newJob(`child ${i}`, root.id));
  const grandchild = await newJob('grandchild', children[0].id);

  const rootCtx = await contextOf(root.id);
  t.deepEqual(
    rootCtx.children.map((c: { id: string }) => c.id),
    children.map((c) => c.id),
  );
  t.is(rootCtx.children[10].id, `${root.id}.11`);
  t.deepEqual(rootCtx.children[1], children[1]);

  const childCtx = await contextOf(children[0].id);
  t.deepEqual(childCtx.parent, await current(root.id));
  t.like(childCtx.job, { id: `${root.id}.1`, parent_id: root.id, depth: 1 });
  t.deepEqual(childCtx.children, [grandchild]);
  t.deepEqual((await contextOf(grandchild.id)).parent, await current(children[0].id));
});

test('latest_attempt is the highest attempt_number; waiting follows its result_status', async (t) => {
  const job = await newJob('works');
  await insertAttempt(job.id, 1, { status: 'failed', result_status: 'failed', error: 'boom', ended_at: new Date() });
  const secondId = await insertAttempt(job.id, 2, {
    result_status: 'waiting',
    result_summary: 'waiting for review of the schema',
    result_json: JSON.stringify({ svc: { status: 'waiting' } }),
    started_at: new Date('2030-01-01T00:00:00Z'),
    ended_at: new Date('2030-01-01T00:05:00Z'),
  });
  const body = await contextOf(job.id);
  t.deepEqual(body.latest_attempt, {
    id: secondId,
    attempt_number: 2,
    status: 'succeeded',
    result_status: 'waiting',
    result_summary: 'waiting for review of the schema',
    result_json: { svc: { status: 'waiting' } },
    error: null,
    git: null,
    started_at: '2030-01-01T00:00:00.000Z',
    ended_at: '2030-01-01T00:05:00.000Z',
  });
  t.like(body, { waiting: true, blocked: false, effective_phase: 'waiting' });

  await insertAttempt(job.id, 3, { status: 'running', result_status: null });
  t.like(await contextOf(job.id), { waiting: false, effective_phase: 'ready', latest_attempt: { attempt_number: 3, result_status: null, ended_at: null } });
});

test('blocked overrides waiting, and waiting returns once the blocker is cancelled', async (t) => {
  const job = await newJob('waits and is blocked');
  const blocker = await newJob('blocker');
  await insertAttempt(job.id, 1, { result_status: 'waiting' });
  t.is((await owner.api.post(`/jobs/${job.id}/dependencies`, { related_job_id: blocker.id, relation_type: 'blocked_by' })).statusCode, 201);

  const blocked = await contextOf(job.id);
  t.like(blocked, { blocked: true, waiting: true, effective_phase: 'blocked' });
  t.deepEqual(
    blocked.relations.blocking.map((r: { related: { id: string } }) => r.related.id),
    [blocker.id],
  );

  t.is((await owner.api.patch(`/jobs/${blocker.id}`, { phase: 'cancelled' })).statusCode, 200);
  const unblocked = await contextOf(job.id);
  t.like(unblocked, { blocked: false, waiting: true, effective_phase: 'waiting' });
  t.deepEqual(unblocked.relations.blocking, []);
  t.is(unblocked.relations.dependencies.length, 1);
});

test('blocking holds only the unfinished dependencies; dependents are not blockers', async (t) => {
  const job = await newJob('many relations');
  const [open, cancelled, dependent] = [await newJob('open'), await newJob('cancelled'), await newJob('dependent')];
  const relate = (related: string, relation_type: string) => owner.api.post(`/jobs/${job.id}/dependencies`, { related_job_id: related, relation_type });
  t.is((await relate(open.id, 'waits_for')).statusCode, 201);
  t.is((await relate(cancelled.id, 'blocked_by')).statusCode, 201);
  t.is((await relate(dependent.id, 'blocks')).statusCode, 201);
  t.is((await owner.api.patch(`/jobs/${cancelled.id}`, { phase: 'cancelled' })).statusCode, 200);

  const { relations, blocked } = await contextOf(job.id);
  const ids = (list: { related: { id: string } }[]) => list.map((r) => r.related.id);
  t.deepEqual(ids(relations.dependencies), [open.id, cancelled.id]);
  t.deepEqual(ids(relations.dependents), [dependent.id]);
  t.deepEqual(ids(relations.blocking), [open.id]);
  t.deepEqual(relations.blocking[0], relations.dependencies[0]);
  t.true(blocked);
  t.like(await contextOf(dependent.id), { blocked: true, effective_phase: 'blocked' });
});

test('latest_rejection_reason is the text of the latest reject', async (t) => {
  const job = await newJob('reviewed');
  const review = (action: string, text: string | null, at: string) => db()('job_reviews').insert({ job_id: job.id, action, text, created_at: at });
  await review('submit', 'first try', '2030-01-01T00:00:00Z');
  t.is((await contextOf(job.id)).latest_rejection_reason, null);
  await review('reject', 'tests are missing', '2030-01-01T01:00:00Z');
  await review('submit', 'second try', '2030-01-01T02:00:00Z');
  await review('reject', 'the migration is not reversible', '2030-01-01T03:00:00Z');
  await review('approve', 'fine now', '2030-01-01T04:00:00Z');
  t.is((await contextOf(job.id)).latest_rejection_reason, 'the migration is not reversible');
});

test('the tree nests three levels, children in child-number order', async (t) => {
  const root = await newJob('tree root');
  const kids = [];
  for (let i = 1; i <= 10; i++) kids.push(await newJob(`kid ${i}`, root.id));
  const grandkids = [await newJob('grandkid 1', kids[9].id), await newJob('grandkid 2', kids[9].id), await newJob('grandkid of 2', kids[1].id)];
  const other = await newJob('unrelated root');
  await newJob('unrelated child', other.id);

  const res = await owner.api.get(`/jobs/${root.id}/tree`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  const leaf = (job: unknown) => ({ job, children: [] });
  t.deepEqual(res.body, {
    job: root,
    children: kids.map((kid, i) => ({
      job: kid,
      children: i === 9 ? [leaf(grandkids[0]), leaf(grandkids[1])] : i === 1 ? [leaf(grandkids[2])] : [],
    })),
  });
  t.is(res.body.children[9].job.id, `${root.id}.10`);

  t.deepEqual((await owner.api.get(`/jobs/${kids[9].id}/tree`)).body, { job: kids[9], children: [leaf(grandkids[0]), leaf(grandkids[1])] });
  t.deepEqual((await owner.api.get(`/jobs/${grandkids[2].id}/tree`)).body, leaf(grandkids[2]));
});

test('context and tree are 404 for a caller outside the project and for an unknown job', async (t) => {
  const job = await newJob('private');
  for (const path of ['context', 'tree']) {
    assertError(t, await outsider.api.get(`/jobs/${job.id}/${path}`), 404, `job ${job.id} not found`);
    assertError(t, await owner.api.get(`/jobs/ctxp-00000000/${path}`), 404, 'job ctxp-00000000 not found');
    assertError(t, await owner.api.get(`/jobs/NOT-A-JOB/${path}`), 400, /"job_id"/);
  }
});
