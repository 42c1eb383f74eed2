import test from 'ava';
import { buildWorld, twoServiceRepo, type BuildWorld } from './helpers.ts';

let w: BuildWorld;
let projectId: string;
let repo: ReturnType<typeof twoServiceRepo>;

test.before(async () => {
  w = await buildWorld({ overrides: { roles: ['api', 'orchestrator', 'worker'], worker: { heartbeat_seconds: 1, log_flush_ms: 20 } } });
  repo = twoServiceRepo();
  projectId = await w.project(repo.url);
  await w.admin.post(`/projects/${projectId}/manifest`, { ref: repo.sha });
});
test.after.always(() => w?.s.stop());

async function runEnded(runId: string): Promise<any> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const run = (await w.admin.get(`/projects/${projectId}/runs/${runId}`)).body;
    if (['succeeded', 'failed', 'cancelled'].includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const resultOf = async (jobId: string) => {
  const attempts = (await w.admin.get(`/projects/${projectId}/jobs/${jobId}/attempts`)).body.data;
  return attempts[0];
};

test.serial('a build → release pipeline runs end to end; the release step finds the build step’s build by itself', async (t) => {
  w.builder.next = 'images';
  const started = await w.admin.post(`/projects/${projectId}/pipelines/ship/run`, { ref: repo.sha });
  t.is(started.statusCode, 201, JSON.stringify(started.body));
  const run = await runEnded(started.body.id);
  t.is(run.status, 'succeeded', JSON.stringify(run));
  const buildStep = await resultOf(run.steps.find((s: any) => s.name === 'build').job_id);
  const releaseStep = await resultOf(run.steps.find((s: any) => s.name === 'release').job_id);
  t.is(buildStep.result_status, 'success');
  const receipt = (await w.admin.get(`/jobs/${run.steps.find((s: any) => s.name === 'build').job_id}/receipt`)).body;
  t.truthy(receipt);

  const builds = (await w.admin.get(`/projects/${projectId}/builds`)).body.data;
  t.is(builds.length, 1);
  t.like(builds[0], { git_sha: repo.sha, status: 'completed' });
  const releases = (await w.admin.get(`/projects/${projectId}/releases`)).body.data;
  t.is(releases.length, 1);
  t.like(releases[0], { build_id: builds[0].id, git_sha: repo.sha, tag: `sha-${repo.sha.slice(0, 12)}` });
  t.deepEqual(Object.keys(releases[0].image_digests), ['api', 'web']);
  t.is(releaseStep.result_status, 'success');
});

test.serial('a failed build fails its step with the build error class, and the release step does not run', async (t) => {
  w.builder.next = 'fail';
  const releasesBefore = (await w.admin.get(`/projects/${projectId}/releases`)).body.pagination.total;
  const started = await w.admin.post(`/projects/${projectId}/pipelines/forced/run`, { ref: repo.sha });
  const run = await runEnded(started.body.id);
  t.is(run.status, 'failed');
  const attempt = await resultOf(run.steps.find((s: any) => s.name === 'build').job_id);
  t.is(attempt.result_status, 'failed');
  t.regex(attempt.error, /^build bld_\S+ failed \(build_error\): api: process/);
  t.not(run.steps.find((s: any) => s.name === 'release').status, 'succeeded');
  t.is((await w.admin.get(`/projects/${projectId}/releases`)).body.pagination.total, releasesBefore);
  t.is(w.builder.requests.at(-1)!.services.length, 1, 'the step asked for api only, and was not reused');
});
