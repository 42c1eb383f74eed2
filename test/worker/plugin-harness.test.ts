import path from 'node:path';
import test from 'ava';
import { attemptsOf, finished, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * A seventh harness added through config alone (examples/harness-plugin) runs a job end to end:
 * the job names it in `harness`, the worker invokes its stand-in CLI and reads its stream.
 */
const EXAMPLE = path.resolve('examples/harness-plugin');
let w: WorkerWorld;

test.before(async () => {
  process.env.ACME_API_KEY = 'acme-test-key';
  w = await workerWorld('wplugin', { overrides: { harnesses: { plugins: [EXAMPLE], acme: { command: path.join(EXAMPLE, 'bin/acme-agent') } } } });
});
test.after.always(async () => {
  await w?.stop();
});

test('a job naming the plugin harness runs it: result, usage under the chosen model', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Tidy the README', harness: 'acme', model: 'acme-small' });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await finished(w, created.body.id);
  t.is(job.phase, 'done');
  const [attempt] = await attemptsOf(w, job.id);
  t.like(attempt, { status: 'succeeded', result_summary: 'acme did it' });
  const receipt = await w.api.get(`/jobs/${job.id}/attempts/${attempt.id}/receipt`);
  t.true(JSON.stringify(receipt.body.llm).includes('acme-small'), JSON.stringify(receipt.body.llm));
});

test('a harness this server does not have is refused at create, naming the field, and nothing is created', async (t) => {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Unknown harness', harness: 'zeta' });
  t.is(res.statusCode, 400);
  t.regex(res.body.message, /^harness: unknown harness 'zeta' \(known: .*acme/);
  // The other test creates a job at the same time, so look for this one by its description.
  const jobs = (await w.api.get(`/projects/${w.projectId}/jobs`)).body.data;
  t.false(jobs.some((j: { description: string }) => j.description === 'Unknown harness'));
});
