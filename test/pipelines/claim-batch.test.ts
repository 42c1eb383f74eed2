import test from 'ava';
import type { World } from '../jobs/claim-helpers.ts';
import { getRun, pipelineWorld, startRun, statuses } from './helpers.ts';

// claimNext claims whatever is ready in the database: this file's world holds only its own runs.
let w: World;
test.before(async () => {
  w = await pipelineWorld('pbatch');
});
test.after.always(() => w?.ctx.srv.stop());

test.serial('steps claimed in a batch (the dispatcher path) move their runs too', async (t) => {
  const one = await startRun(w, 'ship', { only_steps: ['build', 'test'] });
  const two = await startRun(w, 'ship', { only_steps: ['build'] });
  const batch = await w.claims.claimNext('batch-claimer', 10);
  t.deepEqual(batch.map((c) => c.job.hints.pipeline_run_id).sort(), [one.id, two.id].sort(), 'only the unblocked first steps');
  t.deepEqual(statuses(await getRun(w, one.id)), { build: 'running', test: 'pending' });
  t.is((await getRun(w, two.id)).status, 'running');
  for (const { job, attempt } of batch) {
    await w.claims.complete(job.id, attempt.id, { lease_token: attempt.lease_token, result: { status: 'success' } });
  }
  t.is((await getRun(w, two.id)).status, 'succeeded');
  const next = await w.claims.claimNext('batch-claimer', 10);
  t.deepEqual(
    next.map((c) => c.job.hints.step_name),
    ['test'],
  );
  t.deepEqual(statuses(await getRun(w, one.id)), { build: 'succeeded', test: 'running' });
});
