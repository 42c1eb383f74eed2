import test, { type ExecutionContext } from 'ava';
import { assertConflict, blockedBy, claimed, claimWorld, complete, jobRow, newJob, type World } from './claim-helpers.ts';

let w: World;
test.before(async () => {
  w = await claimWorld('rollup');
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

/** A workflow root with steps a → b (b waits for a) and c, as a workflow invocation lays them out. */
async function workflow(hints: Record<string, unknown> = {}) {
  const root = await newJob(w, { hints: { workflow_name: 'ship' } });
  const step = (name: string) => newJob(w, { description: name, parent_id: root.id, hints: { workflow_name: 'ship', ...hints } });
  const [a, b, c] = [await step('a'), await step('b'), await step('c')];
  await blockedBy(w, b.id, a.id);
  return { root, a, b, c };
}

async function run(t: ExecutionContext, jobId: string, status: 'success' | 'failed') {
  const { attempt } = await claimed(t, w, jobId);
  t.is((await complete(w, jobId, attempt, { status, summary: status })).statusCode, 200);
}

test.serial('the root of a workflow is never claimed: by the API (409) nor by the claimer', async (t) => {
  const { root, a, c } = await workflow();
  assertConflict(t, await w.owner.api.post(`/jobs/${root.id}/claim`, {}), `job ${root.id} is the root of workflow ship: it completes when its steps do`);
  const batch = await w.claims.claimNext('rollup-claimer', 50);
  const ids = batch.map((c) => c.job.id);
  t.false(ids.includes(root.id));
  t.true(ids.includes(a.id) && ids.includes(c.id));
  for (const { job, attempt } of batch) await w.owner.api.post(`/jobs/${job.id}/release`, { attempt_id: attempt.id, lease_token: attempt.lease_token });
});

test.serial('the root is done when every step is done, and not before', async (t) => {
  const { root, a, b, c } = await workflow();
  await run(t, a.id, 'success');
  await run(t, c.id, 'success');
  t.is((await jobRow(w, root.id)).phase, 'ready');
  await run(t, b.id, 'success');
  const done = await jobRow(w, root.id);
  t.is(done.phase, 'done');
  t.truthy(done.closed_at);
});

test.serial('a failed step fails the root and cancels the steps waiting for it; independent steps run on', async (t) => {
  const { root, a, b, c } = await workflow();
  await run(t, a.id, 'failed');
  const failed = await jobRow(w, root.id);
  t.is(failed.phase, 'cancelled');
  t.regex(failed.close_reason, new RegExp(`^step ${a.id} did not complete: attempt 1 failed`));
  const dependent = await jobRow(w, b.id);
  t.is(dependent.phase, 'cancelled');
  t.is(dependent.close_reason, `step ${a.id} did not complete`);
  t.is((await jobRow(w, c.id)).phase, 'ready', 'c does not wait for a');
});

test.serial('a step closed as skipped counts as complete', async (t) => {
  const { root, a, b, c } = await workflow();
  const skip = await w.owner.api.patch(`/jobs/${c.id}`, { phase: 'cancelled', close_reason: 'skipped' });
  t.is(skip.statusCode, 200);
  t.is((await jobRow(w, root.id)).phase, 'ready');
  await run(t, a.id, 'success');
  await run(t, b.id, 'success');
  t.is((await jobRow(w, root.id)).phase, 'done');
});

test.serial('ordinary parents (no workflow) are claimed and finish on their own', async (t) => {
  const parent = await newJob(w);
  await newJob(w, { parent_id: parent.id });
  const { attempt } = await claimed(t, w, parent.id);
  t.is((await complete(w, parent.id, attempt, { status: 'success', summary: 'ok' })).statusCode, 200);
  t.is((await jobRow(w, parent.id)).phase, 'done');
});
