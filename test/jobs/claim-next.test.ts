import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { Claims, type Claimed } from '../../plugins/jobs/claims/claims.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { unique } from '../orgs/helpers.ts';
import { blockedBy, claimWorld, newJob, type World } from './claim-helpers.ts';

// claimNext takes any claimable job in the database: every test here runs alone (serial).
let w: World;
let replica: TestServer;
test.before(async () => {
  w = await claimWorld('batch');
  // A second server on the same database: claimers in two processes' worth of pools.
  replica = await startTestServer({ database: { url: w.ctx.srv.kernel.databaseUrl, drop: async () => {} } });
});
test.after.always(async () => {
  await replica?.stop();
  await w?.ctx.srv.stop();
});

/** Leaves nothing claimable behind for the next test. */
test.afterEach.always(async () => {
  await w.db('jobs').whereIn('phase', ['ready', 'active']).update({ phase: 'cancelled', closed_at: w.db.fn.now() });
  await w.db('job_gates').delete();
});

const create = (n: number, body: (i: number) => Record<string, unknown>) => {
  const out: Promise<any>[] = [];
  for (let i = 0; i < n; i++) out.push(newJob(w, { title: `job ${i}`, ...body(i) }));
  return Promise.all(out);
};

test.serial('claimNext: priority then age order; skips deferred, blocked and gate-held jobs; one job per gate in a batch', async (t) => {
  const [gate, held] = [unique('g'), unique('g')];
  const jobs: Record<string, any> = {};
  for (const [name, body] of [
    ['p3', { priority: 3 }],
    ['p0-old', { priority: 0 }],
    ['p2', { priority: 2 }],
    ['p0-new', { priority: 0 }],
    ['deferred', { priority: 0, defer_until: new Date(Date.now() + 60_000).toISOString() }],
    ['blocked', { priority: 0 }],
    ['gate-1', { priority: 1, hints: { gates: [gate] } }],
    ['gate-2', { priority: 1, hints: { gates: [gate] } }],
    ['holder', { priority: 4, hints: { gates: [held] } }],
    ['waits-for-held', { priority: 0, hints: { gates: [held] } }],
    ['idea', { phase: 'idea', priority: 0 }],
  ] as const)
    jobs[name] = await newJob(w, body);
  await blockedBy(w, jobs.blocked.id, jobs.p3.id);
  const holder = await w.claims.claim(jobs.holder.id, 'someone-else');
  t.is(holder.job.phase, 'active');

  const batch = await w.claims.claimNext('orchestrator-1', 10, { leaseSeconds: 30 });
  const order = ['p0-old', 'p0-new', 'gate-1', 'p2', 'p3'];
  t.deepEqual(
    batch.map((c) => c.job.id),
    order.map((n) => jobs[n].id),
  );
  for (const c of batch) {
    t.like(c.job, { phase: 'active', assignee: 'orchestrator-1' });
    t.like(c.attempt, { attempt_number: 1, status: 'running', lease_owner: 'orchestrator-1' });
  }
  t.deepEqual(await w.claims.claimNext('orchestrator-1', 10), [], 'the rest stay ready, each for its reason');
  t.like(await w.db('jobs').where({ id: jobs['gate-2'].id }).first(), { phase: 'ready' });
  t.is(Number((await w.db('job_attempts').whereIn('job_id', [jobs['gate-2'].id, jobs['waits-for-held'].id]).count({ n: '*' }).first())!.n), 0);
});

test.serial('claimNext: a limit of n claims at most n', async (t) => {
  await create(5, () => ({}));
  t.is((await w.claims.claimNext('o', 2)).length, 2);
  t.is((await w.claims.claimNext('o', 10)).length, 3);
});

test.serial('concurrency: 4 claimNext callers on two servers and an API claimer over 300 jobs: each claimed once, one running job per gate', async (t) => {
  const gates = [unique('ga'), unique('gb'), unique('gc'), unique('gd')];
  // Every third job takes a gate; every tenth takes two (so batches contend on pairs too).
  const jobs = await create(300, (i) => ({
    priority: i % 5,
    ...(i % 3 === 0 ? { hints: { gates: i % 10 === 0 ? [gates[i % 4], gates[(i + 1) % 4]] : [gates[i % 4]] } } : {}),
  }));
  const ids = new Set(jobs.map((j) => j.id));
  const gateJobs = jobs.filter((j) => j.hints.gates).length;

  const violations: unknown[] = [];
  let running = true;
  const monitor = (async () => {
    while (running) {
      const { rows } = await w.db.raw(
        `SELECT k, array_agg(j.id) AS jobs FROM jobs j, jsonb_array_elements_text(coalesce(j.hints->'gates', '[]')) k
         WHERE j.phase = 'active' AND j.project_id = ? GROUP BY k HAVING count(*) > 1`,
        [w.projectA],
      );
      violations.push(...rows);
      await sleep(2);
    }
  })();

  const left = async () =>
    Number(
      (await w
        .db('jobs')
        .whereIn('id', [...ids])
        .whereNot({ phase: 'done' })
        .count({ n: '*' })
        .first())!.n,
    );
  const finish = (claims: Claims, c: Claimed) => claims.complete(c.job.id, c.attempt.id, { lease_token: c.attempt.lease_token, result: { status: 'success' } });
  async function claimer(claims: Claims, owner: string): Promise<string[]> {
    const mine: string[] = [];
    const deadline = Date.now() + 60_000; // fail, never hang, if a job is stuck
    while ((await left()) > 0 && Date.now() < deadline) {
      const batch = await claims.claimNext(owner, 7, { leaseSeconds: 120 });
      mine.push(...batch.map((c) => c.job.id));
      await Promise.all(batch.map((c) => finish(claims, c)));
      if (batch.length === 0) await sleep(3);
    }
    return mine;
  }
  async function apiClaimer(): Promise<string[]> {
    const mine: string[] = [];
    for (const job of jobs.slice().reverse()) {
      const res = await w.owner.api.post(`/jobs/${job.id}/claim`, { owner: 'api-agent' });
      if (res.statusCode !== 200) continue; // 409: taken, blocked on a gate, or done already
      mine.push(job.id);
      const { attempt } = res.body;
      await w.owner.api.post(`/jobs/${job.id}/attempts/${attempt.id}/complete`, { lease_token: attempt.lease_token, result: { status: 'success' } });
    }
    return mine;
  }

  const replicaClaims = replica.server.app.container.resolve(Claims);
  const results = await Promise.all([
    claimer(w.claims, 'orch-a1'),
    claimer(w.claims, 'orch-a2'),
    claimer(replicaClaims, 'orch-b1'),
    claimer(replicaClaims, 'orch-b2'),
    apiClaimer(),
  ]);
  running = false;
  await monitor;

  const all = results.flat();
  t.is(all.length, 300, 'claims handed out');
  t.is(new Set(all).size, 300, 'no job claimed twice');
  t.true(all.every((id) => ids.has(id)));
  t.true(results.slice(0, 4).filter((r) => r.length > 0).length >= 2, `work spread over claimers: ${results.map((r) => r.length)}`);
  t.deepEqual(violations, [], 'never two active jobs on one gate');
  const attempts = await w
    .db('job_attempts')
    .whereIn('job_id', [...ids])
    .select('job_id', 'attempt_number', 'status');
  t.is(attempts.length, 300);
  t.true(attempts.every((a) => a.attempt_number === 1 && a.status === 'succeeded'));
  t.is(await left(), 0);
  t.is(Number((await w.db('job_gates').count({ n: '*' }).first())!.n), 0, 'every gate released');
  t.log(`claims per caller: ${results.map((r) => r.length).join(', ')}; ${gateJobs} gated jobs`);
});

test.serial('concurrency: claimers that never finish still take each job once; gates stay exclusive', async (t) => {
  const gate = unique('g');
  await create(120, (i) => (i % 4 === 0 ? { hints: { gates: [gate] } } : {}));
  const grab = async (owner: string) => {
    const got: string[] = [];
    for (let batch = await w.claims.claimNext(owner, 9); batch.length; batch = await w.claims.claimNext(owner, 9)) got.push(...batch.map((c) => c.job.id));
    return got;
  };
  const results = await Promise.all(['c1', 'c2', 'c3', 'c4', 'c5'].map(grab));
  const all = results.flat();
  t.is(new Set(all).size, all.length);
  t.is(all.length, 91, '90 ungated jobs and one of the 30 sharing the gate');
  t.is(Number((await w.db('job_gates').count({ n: '*' }).first())!.n), 1);
});

test.serial('claimNext: a mixed batch (gated and gate-less, priorities, deferred, blocked, a retry) claims the right jobs in claim order', async (t) => {
  const [gate, other] = [unique('g'), unique('g')];
  const jobs: Record<string, any> = {};
  for (const [name, body] of [
    ['gated-p0', { priority: 0, hints: { gates: [gate] } }],
    ['free-p0', { priority: 0 }],
    ['deferred', { priority: 0, defer_until: new Date(Date.now() + 60_000).toISOString() }],
    ['blocked', { priority: 0 }],
    ['free-p1', { priority: 1 }],
    ['gated-p1', { priority: 1, hints: { gates: [other] } }],
    ['same-gate-p1', { priority: 1, hints: { gates: [gate] } }],
    ['retry-p2', { priority: 2 }],
    ['free-p4', { priority: 4 }],
  ] as const)
    jobs[name] = await newJob(w, body);
  await blockedBy(w, jobs.blocked.id, jobs['free-p4'].id);
  const first = await w.claims.claim(jobs['retry-p2'].id, 'earlier');
  await w.claims.release(jobs['retry-p2'].id, first.attempt.id, first.attempt.lease_token);

  // 5 picks: same-gate-p1 loses the gate gated-p0 took in this batch; its slot goes to retry-p2.
  const batch = await w.claims.claimNext('mixed', 5, { leaseSeconds: 60 });
  t.deepEqual(
    batch.map((c) => c.job.id),
    ['gated-p0', 'free-p0', 'free-p1', 'gated-p1', 'retry-p2'].map((n) => jobs[n].id),
  );
  const {
    rows: [{ now }],
  } = await w.db.raw('SELECT now() AS now');
  for (const c of batch) {
    t.like(c.job, { phase: 'active', assignee: 'mixed' });
    t.like(await w.db('jobs').where({ id: c.job.id }).first(), { phase: 'active', assignee: 'mixed' });
    t.like(c.attempt, { job_id: c.job.id, attempt_number: c.job.id === jobs['retry-p2'].id ? 2 : 1, status: 'running', lease_owner: 'mixed', ended_at: null });
    t.regex(c.attempt.lease_token, /^[0-9a-f-]{36}$/);
    t.true(Math.abs(c.attempt.lease_expires_at!.getTime() - now.getTime() - 60_000) < 5_000);
  }
  t.is(
    Number(
      (await w
        .db('attempt_receipts')
        .whereIn(
          'attempt_id',
          batch.map((c) => c.attempt.id),
        )
        .count({ n: '*' })
        .first())!.n,
    ),
    0,
    'no receipt until an attempt ends',
  );
  t.deepEqual(
    (await w.claims.claimNext('mixed', 10)).map((c) => c.job.id),
    [jobs['free-p4'].id],
    'deferred, blocked and same-gate jobs stay ready',
  );
  for (const n of ['deferred', 'blocked', 'same-gate-p1']) t.like(await w.db('jobs').where({ id: jobs[n].id }).first(), { phase: 'ready', assignee: null });
});
