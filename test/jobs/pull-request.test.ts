import test from 'ava';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fakeCodeHost } from '../support/fake-hosts.ts';
import { pullRequest } from '../fixtures/vcshost/deliveries.ts';
import { deliver, hubSignature } from '../integrations/helpers.ts';
import { until, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

/**
 * Pull requests from finished work (POST /jobs/{job_id}/pull-request): a worker runs a script job
 * whose change is committed and pushed to its branch on a file:// repository, the job is proposed to
 * a fake code host's REST API, and the host's signed deliveries (closed/merged, reviews) come back
 * to the job through the inbound webhook.
 */
const SECRET = 'pr-hook-secret';
let w: WorkerWorld;
let host: Awaited<ReturnType<typeof fakeCodeHost>>;
let repo: string;

test.before(async () => {
  host = await fakeCodeHost({ tokens: new Set(['ghp_project']), repos: new Map() });
  w = await workerWorld('prjobs', { overrides: { adapters: { vcshost: { use: 'hub', options: { api_url: `${host.url}/api/v3` } } } } });
  // The project's repository is <scratch>/origin.git: owner/name is the scratch folder and "origin".
  repo = `${path.basename(w.scratch)}/origin`;
  host.state.repos.set(repo, new Set(['main']));
  for (const [name, value] of [
    ['GIT_TOKEN', 'ghp_project'],
    ['VCSHOST_WEBHOOK_SECRET', SECRET],
  ]) {
    const res = await w.api.post(`/projects/${w.projectId}/secrets`, { name, value });
    if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  }
});
test.after.always(async () => {
  await w?.stop();
  await host?.close();
});

/** A job whose script's change is committed and pushed, awaiting review; its branch is known to the code host. */
async function workInReview(review: 'human' | 'none' = 'human', push = 'on_success'): Promise<any> {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
    title: 'Add the greeting',
    description: 'pr',
    review_required: review,
    git: { branch: 'agent/${job_id}', commit: 'auto', push },
    hints: { step: { kind: 'script', script: { run: "printf 'hello\\n' > greeting.txt" } } },
  });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const job = await until(async () => {
    const j = (await w.api.get(`/jobs/${res.body.id}`)).body;
    return ['review', 'done', 'cancelled'].includes(j.phase) ? j : null;
  }, 'the job to finish');
  if (job.resolved_git?.resolved_branch) host.state.repos.get(repo)!.add(job.resolved_git.resolved_branch);
  return job;
}

function send(event: string, body: object) {
  const raw = JSON.stringify(body);
  return deliver(w.srv.server, `/integrations/vcshost/events/${w.projectId}`, raw, {
    'x-github-event': event,
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': hubSignature(SECRET, raw),
  });
}

const prDelivery = (action: string, number: number, merged = false) => {
  const body = pullRequest(action, number);
  return { ...body, pull_request: { ...body.pull_request, merged, state: action === 'closed' ? 'closed' : 'open', updated_at: new Date().toISOString() } };
};
const reviewDelivery = (number: number, state: string, text: string) => ({
  ...prDelivery('submitted', number),
  action: 'submitted',
  review: { id: Math.floor(Math.random() * 1e9), state, body: text, user: { login: 'reviewer', id: 7 } },
});

test.serial('a job in review becomes a pull request from its pushed branch, with its summary; asking again opens nothing more', async (t) => {
  const job = await workInReview();
  t.is(job.phase, 'review');
  const opened = await w.api.post(`/jobs/${job.id}/pull-request`, {});
  t.is(opened.statusCode, 201, JSON.stringify(opened.body));
  t.like(opened.body.pull_request, { state: 'open', head: job.resolved_git.resolved_branch, base: 'main', review: null });
  t.regex(opened.body.pull_request.url, /\d+$/);
  const sent = host.requests.find((r) => r.path === `/api/v3/repos/${repo}/pulls`)!;
  t.is(sent.headers.authorization, 'Bearer ghp_project', "the project's git token opens it");
  t.like(sent.body, { title: 'Add the greeting', head: job.resolved_git.resolved_branch, base: 'main' });
  t.regex(sent.body.body, new RegExp(`job ${job.id}`));

  const again = await w.api.post(`/jobs/${job.id}/pull-request`, { title: 'another' });
  t.is(again.statusCode, 200);
  t.is(again.body.pull_request.number, opened.body.pull_request.number);
  t.is(host.requests.filter((r) => r.path.endsWith('/pulls')).length, 1);
  t.deepEqual((await w.api.get(`/jobs/${job.id}`)).body.pull_request, opened.body.pull_request);
});

test.serial('merged on the code host: the job in review is done; a redelivery changes nothing more', async (t) => {
  const job = await workInReview();
  const { number } = (await w.api.post(`/jobs/${job.id}/pull-request`, null)).body.pull_request;
  const merged = await send('pull_request', prDelivery('closed', number, true));
  t.is(merged.statusCode, 201, JSON.stringify(merged.body));
  const done = (await w.api.get(`/jobs/${job.id}`)).body;
  t.is(done.phase, 'done');
  t.is(done.review_status, 'approved');
  t.is(done.pull_request.state, 'merged');
  t.is((await send('pull_request', prDelivery('closed', number, true))).statusCode, 201);
  t.is((await w.api.get(`/jobs/${job.id}`)).body.phase, 'done');
});

test.serial('changes requested: the job goes back to ready with the review as its rejection, and a worker runs it again', async (t) => {
  const job = await workInReview();
  const { number } = (await w.api.post(`/jobs/${job.id}/pull-request`, {})).body.pull_request;
  const res = await send('pull_request_review', reviewDelivery(number, 'changes_requested', 'Say hello to the world, not just hello.'));
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.is(res.body.type, 'vcshost.pull_request_review');
  const context = (await w.api.get(`/jobs/${job.id}/context`)).body;
  t.is(context.latest_rejection_reason, 'Say hello to the world, not just hello.');
  const again = await until(async () => {
    const j = (await w.api.get(`/jobs/${job.id}`)).body;
    return j.phase === 'review' && j.review_status === 'pending' ? j : null;
  }, 'a second attempt to finish');
  t.is(again.pull_request.review, 'changes_requested');
  const attempts = (await w.api.get(`/projects/${w.projectId}/jobs/${job.id}/attempts`)).body.data;
  t.is(attempts.length, 2);

  const approved = await send('pull_request_review', reviewDelivery(number, 'approved', 'Looks good.'));
  t.is(approved.statusCode, 201);
  const done = (await w.api.get(`/jobs/${job.id}`)).body;
  t.like(done, { phase: 'done', review_status: 'approved' });
  t.is(done.pull_request.review, 'approved');
});

test.serial('a job with unpushed work, one still running, an unknown job and bad input are refused and open nothing', async (t) => {
  const before = host.requests.length;
  const unpushed = await workInReview('none', 'never');
  const res = await w.api.post(`/jobs/${unpushed.id}/pull-request`, {});
  t.is(res.statusCode, 422);
  t.regex(res.body.message, /not pushed/);
  const idle = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'never runs', phase: 'backlog' });
  t.is((await w.api.post(`/jobs/${idle.body.id}/pull-request`, {})).statusCode, 409);
  t.is((await w.api.post(`/jobs/nope-00000000/pull-request`, {})).statusCode, 404);
  const bad = await w.api.post(`/jobs/${unpushed.id}/pull-request`, { title: 42 });
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /title/);
  t.is(host.requests.length, before);
});

test.serial('the code host refusing (no such base branch) is 422 with its message; the job keeps no pull request', async (t) => {
  const job = await workInReview();
  const res = await w.api.post(`/jobs/${job.id}/pull-request`, { base: 'does-not-exist' });
  t.is(res.statusCode, 422, JSON.stringify(res.body));
  t.regex(res.body.message, /refused/);
  t.is((await w.api.get(`/jobs/${job.id}`)).body.pull_request, null);
});

test.serial("another project's delivery about the same number changes nothing here", async (t) => {
  const job = await workInReview();
  const { number } = (await w.api.post(`/jobs/${job.id}/pull-request`, {})).body.pull_request;
  const other = await w.api.post('/projects', { org_id: w.orgId, name: 'other', slug: 'otherpr' });
  await w.api.post(`/projects/${other.body.id}/secrets`, { name: 'VCSHOST_WEBHOOK_SECRET', value: SECRET });
  const raw = JSON.stringify(prDelivery('closed', number, true));
  const res = await deliver(w.srv.server, `/integrations/vcshost/events/${other.body.id}`, raw, {
    'x-github-event': 'pull_request',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': hubSignature(SECRET, raw),
  });
  t.is(res.statusCode, 201);
  const still = (await w.api.get(`/jobs/${job.id}`)).body;
  t.is(still.phase, 'review');
  t.is(still.pull_request.state, 'open');
});
