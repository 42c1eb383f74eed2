import test from 'ava';
import { LaneClaims } from '../../plugins/jobs/races/lane-claims.ts';
import { git, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

/**
 * Choosing a race's attempt deletes its rivals' branches from the project's repository
 * (docs/worker.md, "Rival attempts"). What a rival's attempt recorded about its git is a worker's
 * report of work a hostile agent shaped: the names deleted are the rivals' own `svc/<job>-attempt-<n>`,
 * never a branch the record names, so a record saying it pushed to `main` cannot get `main` deleted.
 */
let w: WorkerWorld;
test.before(async () => {
  // No worker and no orchestrator: the test claims the lanes itself.
  w = await workerWorld('wrbr', { overrides: { roles: ['api'] } });
});
test.after.always(() => w?.stop());

const branches = () => git(w.bare, 'branch', '--format=%(refname:short)').split('\n').filter(Boolean).sort();

test('a rival whose recorded git names main: main stays, only the rivals’ own branches go', async (t) => {
  const job = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'race me' });
  const jobId = job.body.id as string;
  t.is((await w.api.post(`/jobs/${jobId}/attempts`, { variants: [{ harness: 'harness_a' }, { harness: 'harness_b' }] })).statusCode, 201);
  const claimed = await w.srv.server.app.container.resolve(LaneClaims).claim('test', 2, 60);
  t.is(claimed.length, 2);
  for (const { attempt } of claimed) {
    const done = await w.api.post(`/jobs/${jobId}/attempts/${attempt.id}/complete`, {
      lease_token: attempt.lease_token,
      result: { status: 'success', summary: 'x' },
    });
    t.is(done.statusCode, 200, JSON.stringify(done.body));
  }
  const [rival, chosen] = claimed.map((c) => c.attempt).sort((a, b) => a.attempt_number - b.attempt_number);
  const main = git(w.bare, 'rev-parse', 'main');
  // The rival's branch as its worker would have pushed it, and a record that claims main instead.
  git(w.bare, 'branch', `svc/${jobId}-attempt-${rival.attempt_number}`, main);
  await w.srv.kernel
    .db('job_attempts')
    .where({ id: rival.id })
    .update({ git: JSON.stringify({ resolved_branch: 'main', pushed: true }) });

  const choice = await w.api.post(`/jobs/${jobId}/attempts/${chosen.attempt_number}/choose`);
  t.is(choice.statusCode, 200, JSON.stringify(choice.body));
  t.deepEqual(choice.body.cleanup, { branches: [`svc/${jobId}-attempt-${rival.attempt_number}`], deleted: true, error: null });
  t.deepEqual(branches(), ['main']);
  t.is(git(w.bare, 'rev-parse', 'main'), main);
});
