import test from 'ava';
import { assertError, memberOf, newUser, setup, unique, type Ctx, type User } from '../orgs/helpers.ts';

let ctx: Ctx;
let owner: User; // owner of org A
let member: User; // plain member of org A
let outsider: User; // owner of org B only
let projectOnly: User; // member of project A2 only
let projectA = '';
let projectA2 = '';
let projectB = '';

test.before(async () => {
  ctx = await setup();
  owner = await newUser(ctx, 'rel-owner');
  outsider = await newUser(ctx, 'rel-outsider');
  const orgA = (await owner.api.post('/orgs', { name: unique('Rel A') })).body.id;
  const orgB = (await outsider.api.post('/orgs', { name: unique('Rel B') })).body.id;
  projectA = (await owner.api.post('/projects', { org_id: orgA, name: 'A', slug: 'rela' })).body.id;
  projectA2 = (await owner.api.post('/projects', { org_id: orgA, name: 'A2', slug: 'rela2' })).body.id;
  projectB = (await outsider.api.post('/projects', { org_id: orgB, name: 'B', slug: 'relb' })).body.id;
  member = await memberOf(ctx, orgA, 'rel-member', 'member');
  projectOnly = await newUser(ctx, 'rel-project-only');
  const added = await owner.api.post(`/projects/${projectA2}/members`, { email: projectOnly.email, role: 'member' });
  if (added.statusCode !== 201) throw new Error(`project member: ${JSON.stringify(added.body)}`);
});

test.after.always(async () => {
  await ctx?.srv.stop();
});

/** A new ready job in `project` (project A by default). */
async function newJob(title: string, project = projectA, api = owner.api): Promise<string> {
  const res = await api.post(`/projects/${project}/jobs`, { description: title });
  if (res.statusCode !== 201) throw new Error(`job: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body.id;
}
const newJobs = (n: number) => Promise.all(Array.from({ length: n }, (_, i) => newJob(`job ${i + 1}`)));
const relate = (job: string, related: string, type: string, api = owner.api) =>
  api.post(`/jobs/${job}/dependencies`, { related_job_id: related, relation_type: type });
/** The stored relations touching any of `ids` (tests in this file run concurrently, so each looks at its own jobs). */
const relationRows = (...ids: string[]) =>
  ctx.srv.kernel
    .db('job_relations')
    .whereIn('job_id', ids)
    .orWhereIn('related_job_id', ids)
    .orderBy(['job_id', 'related_job_id'])
    .select('job_id', 'related_job_id', 'relation_type', 'created_at');
const relationsOf = async (...ids: string[]) => (await relationRows(...ids)).length;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

for (const [type, aWaits] of [
  ['blocked_by', true],
  ['waits_for', true],
  ['blocks', false],
  ['conditional_blocks', false],
] as const) {
  test(`"a ${type} b": 201, and ${aWaits ? 'a waits for b' : 'b waits for a'} in dependencies and context`, async (t) => {
    const [a, b] = await newJobs(2);
    const [waiter, blocker] = aWaits ? [a, b] : [b, a];
    const res = await relate(a, b, type);
    t.is(res.statusCode, 201, JSON.stringify(res.body));
    t.deepEqual(Object.keys(res.body).sort(), ['created_at', 'job_id', 'related_job_id', 'relation_type']);
    t.like(res.body, { job_id: a, related_job_id: b, relation_type: type });
    t.regex(res.body.created_at, ISO);

    const item = (other: string) => ({ ...res.body, related: { id: other, title: 'job ' + (other === a ? 1 : 2), phase: 'ready' } });
    t.deepEqual((await owner.api.get(`/jobs/${waiter}/dependencies`)).body, { dependencies: [item(blocker)], dependents: [] });
    t.deepEqual((await owner.api.get(`/jobs/${blocker}/dependencies`)).body, { dependencies: [], dependents: [item(waiter)] });

    const waiterCtx = (await owner.api.get(`/jobs/${waiter}/context`)).body;
    t.deepEqual(waiterCtx.relations, { dependencies: [item(blocker)], dependents: [], blocking: [item(blocker)] });
    t.like(waiterCtx, { blocked: true, effective_phase: 'blocked' });
    const blockerCtx = (await owner.api.get(`/jobs/${blocker}/context`)).body;
    t.deepEqual(blockerCtx.relations, { dependencies: [], dependents: [item(waiter)], blocking: [] });
    t.like(blockerCtx, { blocked: false, effective_phase: 'ready' });

    // A cancelled blocker no longer blocks; the relation stays listed.
    t.is((await owner.api.patch(`/jobs/${blocker}`, { phase: 'cancelled' })).statusCode, 200);
    const after = (await owner.api.get(`/jobs/${waiter}/context`)).body;
    t.like(after, { blocked: false, effective_phase: 'ready' });
    t.deepEqual(after.relations.blocking, []);
    t.is(after.relations.dependencies[0].related.phase, 'cancelled');
  });
}

test('the same relation again is 200 with the stored relation, and writes nothing', async (t) => {
  const [a, b] = await newJobs(2);
  const first = await relate(a, b, 'waits_for');
  t.is(first.statusCode, 201);
  const again = await relate(a, b, 'waits_for');
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, first.body);
  t.is(await relationsOf(a, b), 1);
});

test('another relation between the same pair, either way round, is 409 and changes nothing', async (t) => {
  const [a, b] = await newJobs(2);
  t.is((await relate(a, b, 'blocked_by')).statusCode, 201);
  const before = await relationRows(a, b);
  const already = `jobs ${a} and ${b} are already related: ${a} blocked_by ${b}`;
  assertError(t, await relate(a, b, 'waits_for'), 409, already);
  assertError(t, await relate(b, a, 'blocks'), 409, `jobs ${b} and ${a} are already related: ${a} blocked_by ${b}`);
  assertError(t, await relate(b, a, 'conditional_blocks'), 409, `jobs ${b} and ${a} are already related: ${a} blocked_by ${b}`);
  t.deepEqual(await relationRows(a, b), before);
});

test('a self-relation is 422 and writes nothing', async (t) => {
  const [a] = await newJobs(1);
  for (const type of ['blocked_by', 'blocks']) assertError(t, await relate(a, a, type), 422, `job ${a} cannot be related to itself`);
  t.is(await relationsOf(a), 0);
});

test('a related job of another project, another org, or none at all is 422 with the same message', async (t) => {
  const [a] = await newJobs(1);
  const sameOrg = await newJob('elsewhere', projectA2);
  const otherOrg = await newJob('foreign', projectB, outsider.api);
  const missing = 'rela-0123abcd';
  for (const related of [sameOrg, otherOrg, missing]) {
    assertError(t, await relate(a, related, 'blocked_by'), 422, `related job ${related} is not a job of this project`);
    assertError(t, await relate(a, related, 'blocks'), 422, `related job ${related} is not a job of this project`);
  }
  t.is(await relationsOf(a, sameOrg, otherOrg), 0);
});

test('bad input is 400 naming the field, and writes nothing', async (t) => {
  const [a, b] = await newJobs(2);
  assertError(t, await relate(a, b, 'depends_on'), 400, /"relation_type" must be one of \[blocked_by, blocks, waits_for, conditional_blocks\]/);
  assertError(t, await relate(a, 'not a job', 'blocks'), 400, /"related_job_id"/);
  assertError(t, await owner.api.post(`/jobs/${a}/dependencies`, { related_job_id: b }), 400, /"relation_type" is required/);
  assertError(t, await owner.api.delete(`/jobs/${a}/dependencies/NOPE`), 400, /"related_job_id"/);
  t.is(await relationsOf(a, b), 0);
});

test('a 2-cycle is 422 naming it', async (t) => {
  const [a, b] = await newJobs(2);
  t.is((await relate(a, b, 'blocked_by')).statusCode, 201);
  assertError(t, await relate(b, a, 'blocked_by'), 422, `${b} blocked_by ${a} would close a cycle: ${b} -> ${a} -> ${b} (each job waits for the next)`);
  assertError(t, await relate(a, b, 'blocks'), 422, `${a} blocks ${b} would close a cycle: ${a} -> ${b} -> ${a} (each job waits for the next)`);
  t.is(await relationsOf(a, b), 1);
});

test('a 3-cycle mixing blocked_by, blocks and conditional_blocks is 422 naming it; a diamond is fine', async (t) => {
  const [a, b, c, d] = await newJobs(4);
  t.is((await relate(a, b, 'blocked_by')).statusCode, 201); // a waits for b
  t.is((await relate(c, b, 'blocks')).statusCode, 201); // b waits for c
  const before = await relationRows(a, b, c, d);
  assertError(t, await relate(a, c, 'blocks'), 422, `${a} blocks ${c} would close a cycle: ${a} -> ${b} -> ${c} -> ${a} (each job waits for the next)`);
  assertError(t, await relate(c, a, 'waits_for'), 422, `${c} waits_for ${a} would close a cycle: ${c} -> ${a} -> ${b} -> ${c} (each job waits for the next)`);
  assertError(
    t,
    await relate(a, c, 'conditional_blocks'),
    422,
    `${a} conditional_blocks ${c} would close a cycle: ${a} -> ${b} -> ${c} -> ${a} (each job waits for the next)`,
  );
  t.deepEqual(await relationRows(a, b, c, d), before);
  // a waits for b and d, both wait for c: several paths, no cycle.
  t.is((await relate(d, a, 'blocks')).statusCode, 201);
  t.is((await relate(d, c, 'waits_for')).statusCode, 201);
  t.is((await relate(a, c, 'blocked_by')).statusCode, 201);
  t.deepEqual(
    (await owner.api.get(`/jobs/${c}/dependencies`)).body.dependents.map((r: { related: { id: string } }) => r.related.id),
    [b, d, a],
  );
});

test('concurrent opposing inserts: exactly one succeeds, the other names the cycle', async (t) => {
  for (let round = 0; round < 5; round++) {
    const [a, b] = await newJobs(2);
    const results = await Promise.all([relate(a, b, 'blocked_by'), relate(b, a, 'blocked_by')]);
    t.deepEqual(results.map((r) => r.statusCode).sort(), [201, 422]);
    t.regex(results.find((r) => r.statusCode === 422)!.body.message, /would close a cycle: (\S+) -> (\S+) -> \1 /);
    t.is(await relationsOf(a, b), 1);
  }
});

test('concurrent inserts that together close a 3-cycle: exactly one succeeds', async (t) => {
  for (let round = 0; round < 5; round++) {
    const [a, b, c] = await newJobs(3);
    t.is((await relate(a, b, 'blocked_by')).statusCode, 201);
    const results = await Promise.all([relate(b, c, 'blocked_by'), relate(a, c, 'blocks')]);
    t.deepEqual(results.map((r) => r.statusCode).sort(), [201, 422]);
    t.regex(results.find((r) => r.statusCode === 422)!.body.message, /would close a cycle: \S+ -> \S+ -> \S+ -> \S+ \(/);
    t.is(await relationsOf(a, b, c), 2);
  }
});

test('DELETE removes the relation from either job: 204, then 404', async (t) => {
  const [a, b] = await newJobs(2);
  t.is((await relate(a, b, 'blocks')).statusCode, 201);
  const removed = await owner.api.delete(`/jobs/${b}/dependencies/${a}`);
  t.is(removed.statusCode, 204);
  t.is(removed.body, null);
  t.deepEqual((await owner.api.get(`/jobs/${a}/dependencies`)).body, { dependencies: [], dependents: [] });
  assertError(t, await owner.api.delete(`/jobs/${a}/dependencies/${b}`), 404, `job ${a} has no relation to job ${b}`);
  t.is((await relate(a, b, 'waits_for')).statusCode, 201, 'the pair can be related anew');
});

test('a member of the org reads and writes relations; a caller outside the project gets 404 on every route', async (t) => {
  const [a, b] = await newJobs(2);
  t.is((await relate(a, b, 'blocked_by', member.api)).statusCode, 201);
  t.is((await member.api.get(`/jobs/${a}/dependencies`)).body.dependencies.length, 1);
  t.is((await member.api.get(`/jobs/${a}/context`)).statusCode, 200);
  t.is((await member.api.get(`/jobs/${a}/tree`)).statusCode, 200);

  const c = await newJob('third');
  const before = await relationRows(a, b, c);
  for (const stranger of [outsider, projectOnly]) {
    const notFound = `job ${a} not found`;
    assertError(t, await relate(a, c, 'blocks', stranger.api), 404, notFound);
    assertError(t, await stranger.api.get(`/jobs/${a}/dependencies`), 404, notFound);
    assertError(t, await stranger.api.delete(`/jobs/${a}/dependencies/${b}`), 404, notFound);
    assertError(t, await stranger.api.get(`/jobs/${a}/context`), 404, notFound);
    assertError(t, await stranger.api.get(`/jobs/${a}/tree`), 404, notFound);
  }
  t.deepEqual(await relationRows(a, b, c), before);
  t.is((await member.api.delete(`/jobs/${a}/dependencies/${b}`)).statusCode, 204);
});

test('an unknown job is 404 on every route', async (t) => {
  const [b] = await newJobs(1);
  const missing = 'rela-89abcdef';
  const notFound = `job ${missing} not found`;
  assertError(t, await relate(missing, b, 'blocks'), 404, notFound);
  assertError(t, await owner.api.get(`/jobs/${missing}/dependencies`), 404, notFound);
  assertError(t, await owner.api.delete(`/jobs/${missing}/dependencies/${b}`), 404, notFound);
  assertError(t, await owner.api.get(`/jobs/${missing}/context`), 404, notFound);
  assertError(t, await owner.api.get(`/jobs/${missing}/tree`), 404, notFound);
});
