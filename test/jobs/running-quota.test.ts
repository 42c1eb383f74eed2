/**
 * Issue 29, item 6: limits.org.running_attempts. The claimer (a batch claim and a claim of one job)
 * starts no attempt for an org that already runs its quota; its jobs stay ready and are claimed
 * once a slot frees, and other orgs are not held back. Exact under concurrent claimers (two
 * servers, several claimers each): a per-org advisory lock is taken before the org's running
 * attempts are counted.
 */
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { Claims, type Claimed } from '../../plugins/jobs/claims/claims.ts';
import { as, startTestServer, type TestServer } from '../support/server.ts';
import { claimWorld, newJob, complete, type World } from './claim-helpers.ts';

const QUOTA = 2;
const org = { queued_jobs: 10_000, running_attempts: QUOTA, webhooks: 100, environments: 200 };

// claimNext takes any claimable job in the database: every test here runs alone (serial).
let w: World;
let replica: TestServer;
test.before(async () => {
  w = await claimWorld('quota', { overrides: { limits: { org } } });
  replica = await startTestServer({ database: { url: w.ctx.srv.kernel.databaseUrl, drop: async () => {} }, overrides: { limits: { org } } });
});
test.after.always(async () => {
  await replica?.stop();
  await w?.ctx.srv.stop();
});
test.afterEach.always(async () => {
  await w.db('job_attempts').where({ status: 'running' }).update({ status: 'cancelled', ended_at: w.db.fn.now() });
  await w.db('jobs').whereIn('phase', ['ready', 'active']).update({ phase: 'cancelled', closed_at: w.db.fn.now() });
});

const many = (n: number, project: string) =>
  Promise.all(Array.from({ length: n }, (_, i) => newJob(w, { title: `job ${i}` }, project, project === w.projectB ? w.outsider : w.owner)));
/** Running attempts of the jobs of these projects. */
async function running(projects: string[]): Promise<number> {
  const { rows } = await w.db.raw(
    `SELECT count(*)::int AS n FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE a.status = 'running' AND j.project_id = ANY(?)`,
    [projects],
  );
  return rows[0].n;
}
const finish = (claims: Claims, c: Claimed) => claims.complete(c.job.id, c.attempt.id, { lease_token: c.attempt.lease_token, result: { status: 'success' } });

test.serial(
  'a batch claim starts only the quota of one org (over both its projects); the rest stay ready until a slot frees; another org is not held back',
  async (t) => {
    const a = [...(await many(3, w.projectA)), ...(await many(2, w.projectA2))];
    const b = await many(1, w.projectB);
    // A's jobs come first in claim order; its three past the quota do not take the batch's places.
    const first = await w.claims.claimNext('orch', QUOTA + 1);
    const ofA = first.filter((c) => a.some((j) => j.id === c.job.id));
    const ofB = first.filter((c) => b.some((j) => j.id === c.job.id));
    t.is(ofA.length, QUOTA, 'org A: its quota');
    t.is(ofB.length, 1, 'org B: its ready job');
    t.is(await running([w.projectA, w.projectA2]), QUOTA);
    const readyA = await w
      .db('jobs')
      .whereIn(
        'id',
        a.map((j) => j.id),
      )
      .where({ phase: 'ready' })
      .count({ n: '*' })
      .first();
    t.is(Number(readyA!.n), 5 - QUOTA, 'the others stay ready');
    t.deepEqual(await w.claims.claimNext('orch', 10), [], 'nothing more while A is at its quota');

    // One of A's attempts ends: exactly one more of A's jobs starts.
    await finish(w.claims, ofA[0]);
    const next = await w.claims.claimNext('orch', 10);
    t.is(next.length, 1);
    t.true(a.some((j) => j.id === next[0].job.id));
    t.is(await running([w.projectA, w.projectA2]), QUOTA);

    // The claim of one job answers 429 naming the quota, and writes nothing.
    const waiting = a.find((j) => ![...ofA, ...next].some((c) => c.job.id === j.id))!;
    const refused = await w.owner.api.post(`/jobs/${waiting.id}/claim`, {});
    t.is(refused.statusCode, 429, JSON.stringify(refused.body));
    t.is(
      refused.body.message,
      `quota exceeded: org ${(await w.owner.api.get(`/projects/${w.projectA}`)).body.org_id} has 2 running attempts (limits.org.running_attempts 2)`,
    );
    t.like(await w.db('jobs').where({ id: waiting.id }).first(), { phase: 'ready' });
    t.is(Number((await w.db('job_attempts').where({ job_id: waiting.id }).count({ n: '*' }).first())!.n), 0);
    // Released: the single-job claim goes through.
    await w.claims.release(next[0].job.id, next[0].attempt.id, next[0].attempt.lease_token);
    const res = await w.owner.api.post(`/jobs/${waiting.id}/claim`, {});
    t.is(res.statusCode, 200, JSON.stringify(res.body));
    t.is(await running([w.projectA, w.projectA2]), QUOTA);
    // Org B's claim of one job is not held back.
    const moreB = await newJob(w, {}, w.projectB, w.outsider);
    t.is((await w.outsider.api.post(`/jobs/${moreB.id}/claim`, {})).statusCode, 200);
  },
);

test.serial('concurrent claimers on two servers never pass the quota, and every job of the org still runs', async (t) => {
  const jobs = await many(24, w.projectA);
  await many(6, w.projectB);
  const ids = new Set(jobs.map((j) => j.id));
  let most = 0;
  let watching = true;
  const monitor = (async () => {
    while (watching) {
      most = Math.max(most, await running([w.projectA, w.projectA2]));
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
  const claimer = async (claims: Claims, owner: string) => {
    const deadline = Date.now() + 60_000;
    let mine = 0;
    while ((await left()) > 0 && Date.now() < deadline) {
      const batch = await claims.claimNext(owner, 5);
      mine += batch.length;
      // Hold the attempts a moment, so claimers meet at the quota.
      await sleep(5);
      for (const c of batch) await finish(claims, c);
      if (!batch.length) await sleep(2);
    }
    return mine;
  };
  const apiClaimer = async () => {
    let mine = 0;
    for (const job of jobs.slice().reverse()) {
      const res = await w.owner.api.post(`/jobs/${job.id}/claim`, { owner: 'api' });
      if (res.statusCode !== 200) {
        t.true([409, 429].includes(res.statusCode), JSON.stringify(res.body));
        continue;
      }
      mine++;
      await complete(w, job.id, res.body.attempt, { status: 'success' });
    }
    return mine;
  };
  const replicaClaims = replica.server.app.container.resolve(Claims);
  const counts = await Promise.all([
    claimer(w.claims, 'a1'),
    claimer(w.claims, 'a2'),
    claimer(replicaClaims, 'b1'),
    claimer(replicaClaims, 'b2'),
    apiClaimer(),
  ]);
  watching = false;
  await monitor;
  t.is(await left(), 0, 'every job of the org ran');
  t.true(most <= QUOTA, `at most ${QUOTA} running at once, saw ${most}`);
  t.is(most, QUOTA, 'the quota was reached');
  t.log(`claims per claimer: ${counts.join(', ')}`);
});

test.serial('simultaneous claims of single jobs on two servers: exactly the quota gets 200, the others 429', async (t) => {
  const jobs = await many(6, w.projectA);
  const replies = await Promise.all(jobs.map((j, i) => (i % 2 ? as(replica.server, w.owner.token) : w.owner.api).post(`/jobs/${j.id}/claim`, {})));
  t.is(replies.filter((r) => r.statusCode === 200).length, QUOTA, JSON.stringify(replies.map((r) => r.statusCode)));
  t.true(replies.every((r) => r.statusCode === 200 || r.statusCode === 429));
  t.is(await running([w.projectA]), QUOTA);
});

test.serial("a review's reject starts an attempt too: at the quota it is 429 and the job stays in review", async (t) => {
  const [reviewed, ...others] = await many(3, w.projectA);
  const claimed = await w.owner.api.post(`/jobs/${reviewed.id}/claim`, {});
  t.is(claimed.statusCode, 200, JSON.stringify(claimed.body));
  t.is((await w.owner.api.post(`/jobs/${reviewed.id}/submit`, { summary: 'have a look' })).statusCode, 200);
  for (const job of others) t.is((await w.owner.api.post(`/jobs/${job.id}/claim`, {})).statusCode, 200);
  const refused = await w.owner.api.post(`/jobs/${reviewed.id}/reject`, { reason: 'again' });
  t.is(refused.statusCode, 429, JSON.stringify(refused.body));
  t.regex(refused.body.message, /has 2 running attempts \(limits\.org\.running_attempts 2\)$/);
  t.like(await w.db('jobs').where({ id: reviewed.id }).first(), { phase: 'review' });
  t.is(Number((await w.db('job_reviews').where({ job_id: reviewed.id, action: 'reject' }).count({ n: '*' }).first())!.n), 0, 'no reject logged');
  const c = (await w.db('job_attempts').where({ job_id: others[0].id, status: 'running' }).first())!;
  await w.claims.release(others[0].id, c.id, c.lease_token);
  t.is((await w.owner.api.post(`/jobs/${reviewed.id}/reject`, { reason: 'again' })).statusCode, 200, 'a slot freed');
});
