import test from 'ava';
import type { World } from '../jobs/claim-helpers.ts';
import { jobRow } from '../jobs/claim-helpers.ts';
import { RoleServices } from '../../core/roles.ts';
import { newId } from '../../core/ids.ts';
import { EventRouter } from '../../plugins/events/router.ts';
import { eventWorld, eventually, postEvent, routed, syncManifest } from './helpers.ts';

const MANIFEST = `
pipelines:
  ship:
    trigger: { vcshost: { event: push, branch: 'release/*' } }
    steps:
      - { name: build, run: make build }
  staging:
    trigger: { event: { type: manual.stage } }
    steps:
      - { name: deploy, run: make deploy }
  button:
    trigger: { manual: true }
    steps:
      - { name: go, run: echo go }
workflows:
  review:
    trigger: { event: pull_request, action: [opened, synchronize], base_branch: main }
    steps:
      - { name: look, agent: { name: reviewer } }
  on-fail:
    trigger: { system: { event: job.failed } }
    steps:
      - { name: triage, run: echo triage }
  chat:
    trigger: { chatapp: { event: message, channel: deploys } }
    steps:
      - { name: answer, run: echo hi }
  custom:
    trigger: { event: { type: 'app.*', source: app } }
    steps:
      - { name: handle, run: echo handle }
  empty:
    trigger: { event: { type: manual.empty } }
    steps: []
environments:
  staging: {}
`;

let w: World;
test.before(async () => {
  w = await eventWorld('evrouting', true);
  await syncManifest(w, MANIFEST);
});
test.after.always(() => w?.ctx.srv.stop());

const matchedNames = (event: any) => event.routing.matched.map((m: any) => `${m.kind} ${m.name}`);
const reasonFor = (event: any, name: string) => event.routing.not_matched.find((d: any) => d.name === name)?.reason;

test.serial('a push to release/* starts the pipeline run with the payload as inputs at the pushed ref; the others say why not', async (t) => {
  const payload = { ref: 'refs/heads/release/1.4', commits: [{ id: 'c1' }], repository: { name: 'app' }, sender: { login: 'dev' }, head_commit: { id: 'c1' } };
  const event = await routed(w, (await postEvent(w, { type: 'vcshost.push', source: 'vcshost', ref_branch: 'release/1.4', payload })).id);
  t.is(event.status, 'completed', JSON.stringify(event));
  t.deepEqual(matchedNames(event), ['pipeline ship']);
  const [match] = event.routing.matched;
  t.like(match, { trigger: 'vcshost.push', matched: true });
  t.regex(match.run_id, /^prun_/);
  const run = (await w.owner.api.get(`/projects/${w.projectA}/runs/${match.run_id}`)).body;
  t.like(run, { pipeline_name: 'ship', ref: 'release/1.4', created_by: w.owner.id });
  t.deepEqual(run.inputs, payload);
  t.is(reasonFor(event, 'button'), 'manual: runs only when started explicitly');
  t.is(reasonFor(event, 'review'), 'event type is vcshost.push, not vcshost.pull_request');
  t.is(event.routing.manifest_hash, (await w.owner.api.get(`/projects/${w.projectA}/manifest`)).body.manifest_hash);
  t.is(event.routing.not_matched.length, 7, 'every other trigger, each with its reason');

  const other = await routed(w, (await postEvent(w, { type: 'vcshost.push', payload: { ref: 'refs/heads/main' } })).id);
  t.deepEqual(other.routing.matched, []);
  t.is(reasonFor(other, 'ship'), "branch 'main' does not match 'release/*'");
  t.is(other.status, 'completed');
});

test.serial('a pull request opened against main invokes the workflow: payload in hints.request_json, the event for if conditions', async (t) => {
  const payload = { action: 'opened', number: 12, pull_request: { base: { ref: 'main' }, head: { ref: 'feature/x' }, title: 'X' } };
  const event = await routed(w, (await postEvent(w, { type: 'vcshost.pull_request', payload })).id);
  t.deepEqual(matchedNames(event), ['workflow review']);
  const root = await jobRow(w, event.routing.matched[0].job_id);
  t.like(root.hints, { workflow_name: 'review', request_json: JSON.stringify(payload), event_id: event.id });
  t.is(root.created_by, w.owner.id, "the event's actor creates the work");
  const closed = await routed(w, (await postEvent(w, { type: 'vcshost.pull_request', payload: { ...payload, action: 'closed' } })).id);
  t.is(reasonFor(closed, 'review'), "action 'closed' is not one of opened, synchronize");
});

test.serial('chatapp and custom triggers; several events of one project are routed in order', async (t) => {
  const chat = await postEvent(w, { type: 'chatapp.message', source: 'chatapp', payload: { text: 'ship', channel: 'deploys', user: 'U1', ts: '1.0' } });
  const app = await postEvent(w, { type: 'app.user.signup', source: 'app', actor_type: 'app', actor_id: 'app-1', payload: { user: 'u' } });
  const notApp = await postEvent(w, { type: 'app.user.signup', payload: {} });
  t.deepEqual(matchedNames(await routed(w, chat.id)), ['workflow chat']);
  const appEvent = await routed(w, app.id);
  t.deepEqual(matchedNames(appEvent), ['workflow custom']);
  t.is((await jobRow(w, appEvent.routing.matched[0].job_id)).created_by, 'app-1');
  t.is(reasonFor(await routed(w, notApp.id), 'custom'), 'event source manual is not app');
});

test.serial('routing errors fail the event with the reason; the other matches still start', async (t) => {
  const event = await routed(w, (await postEvent(w, { type: 'manual.empty' })).id);
  t.is(event.status, 'failed');
  t.is(event.error, 'workflow empty: workflow empty has no steps');
  t.deepEqual(event.routing.matched, [{ kind: 'workflow', name: 'empty', matched: true, trigger: 'event manual.empty', error: 'workflow empty has no steps' }]);

  const badEnv = await routed(w, (await postEvent(w, { type: 'manual.stage', env_name: 'nowhere' })).id);
  t.is(badEnv.status, 'failed');
  t.is(
    badEnv.error,
    "pipeline staging: environment 'nowhere' does not exist: the manifest does not define it and it was not created through the API or env-ensure",
  );
  const goodEnv = await routed(w, (await postEvent(w, { type: 'manual.stage', env_name: 'staging' })).id);
  t.is(goodEnv.status, 'completed');
  t.like((await w.owner.api.get(`/projects/${w.projectA}/runs/${goodEnv.routing.matched[0].run_id}`)).body, { env_name: 'staging', pipeline_name: 'staging' });
});

test.serial('over the monthly budget (refuse), a triggered pipeline or workflow does not start: the event fails with the budget reason', async (t) => {
  const { org_id: org } = await w.db('projects').where({ id: w.projectA }).first('org_id');
  t.is((await w.owner.api.patch(`/orgs/${org}/billing`, { monthly_budget: 0, budget_mode: 'refuse' })).statusCode, 200); // 0 spent is at the budget
  const runsBefore = (await w.db('pipeline_runs').where({ project_id: w.projectA })).length;
  try {
    const over = `org ${org} is over its monthly budget: 0 USD spent since`;
    const pipeline = await routed(w, (await postEvent(w, { type: 'manual.stage', env_name: 'staging' })).id);
    t.is(pipeline.status, 'failed');
    t.true(pipeline.error.startsWith(`pipeline staging: ${over}`), pipeline.error);
    const workflow = await routed(w, (await postEvent(w, { type: 'app.user.signup', source: 'app', payload: {} })).id);
    t.is(workflow.status, 'failed');
    t.true(workflow.error.startsWith(`workflow custom: ${over}`), workflow.error);
    t.is((await w.db('pipeline_runs').where({ project_id: w.projectA })).length, runsBefore, 'no run started');
  } finally {
    await w.owner.api.patch(`/orgs/${org}/billing`, { monthly_budget: null });
  }
});

test.serial('a project without a manifest: completed, nothing matched', async (t) => {
  const event = await routed(w, (await postEvent(w, { type: 'vcshost.push', payload: { ref: 'refs/heads/release/1' } }, w.projectA2)).id, w.projectA2);
  t.like(event, { status: 'completed', error: null });
  t.deepEqual(event.routing, { manifest_hash: null, routed_at: event.routing.routed_at, matched: [], not_matched: [] });
});

test.serial('a failed job emits system.job.failed, which triggers on-fail; a job of on-fail failing never triggers on-fail again', async (t) => {
  const job = (await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'doomed', hints: { mutation_id: 'm-9', request_id: 'r-9' } })).body;
  const { attempt } = (await w.owner.api.post(`/jobs/${job.id}/claim`, {})).body;
  await w.owner.api.post(`/jobs/${job.id}/attempts/${attempt.id}/complete`, {
    lease_token: attempt.lease_token,
    result: { status: 'failed', reason: 'boom' },
    result_json: { exit_code: 3 },
  });
  const failed = await eventually(
    () => w.db('events').where({ type: 'system.job.failed' }).whereRaw("payload_json->>'job_id' = ?", [job.id]).first(),
    5_000,
    'system.job.failed',
  );
  const event = await routed(w, failed.id);
  t.like(event, { source: 'system', actor_type: 'system', mutation_id: 'm-9', request_id: 'r-9' });
  t.deepEqual(matchedNames(event), ['workflow on-fail']);
  const triage = await jobRow(w, event.routing.matched[0].job_id);
  t.is(triage.created_by, 'system');
  t.is(JSON.parse(triage.hints.request_json).job_id, job.id);

  // The triage job fails too: its system.job.failed names workflow on-fail, which it must not trigger.
  const claim = (await w.owner.api.post(`/jobs/${triage.id}/claim`, {})).body;
  await w.owner.api.post(`/jobs/${triage.id}/attempts/${claim.attempt.id}/complete`, {
    lease_token: claim.attempt.lease_token,
    result: { status: 'failed', reason: 'again' },
  });
  const second = await eventually(
    () => w.db('events').where({ type: 'system.job.failed' }).whereRaw("payload_json->>'job_id' = ?", [triage.id]).first(),
    5_000,
    'second failure',
  );
  const looped = await routed(w, second.id);
  t.deepEqual(looped.routing.matched, []);
  t.is(reasonFor(looped, 'on-fail'), 'anti-recursion: the event came from workflow on-fail itself');
});

test.serial('an event whose router stopped mid-way is routed again once its lease ran out; after the last allowed claim it fails', async (t) => {
  const stuck = await postEvent(w, { type: 'manual.stage', env_name: 'staging' });
  await routed(w, stuck.id);
  const hopeless = await postEvent(w, { type: 'manual.nothing' });
  await routed(w, hopeless.id);
  const fresh = await postEvent(w, { type: 'manual.nothing' });
  await routed(w, fresh.id);
  // As if a router had claimed each and stopped: the event pending, its work item running under a lease.
  const abandon = async (id: string, attempts: number, lease: string) => {
    await w.db('events').where({ id }).update({ status: 'pending', routing: null });
    await w
      .db('work_items')
      .where({ queue: 'events', key: id })
      .update({
        status: 'running',
        attempts,
        lease_owner: 'a-router-that-died',
        lease_token: w.db.raw('gen_random_uuid()'),
        lease_expires_at: w.db.raw(`now() + interval '${lease}'`),
        finished_at: null,
      });
  };
  await abandon(stuck.id, 1, '-1 second');
  await abandon(hopeless.id, 3, '-1 second');
  await abandon(fresh.id, 1, '1 hour');

  const again = await routed(w, stuck.id);
  t.is(again.status, 'completed');
  t.regex(again.routing.matched[0].run_id, /^prun_/);
  const failed = await routed(w, hopeless.id);
  t.is(failed.status, 'failed');
  t.regex(failed.error, /^routing did not finish after 3 claims/);
  t.like(await w.db('work_items').where({ queue: 'events', key: hopeless.id }).first(), { status: 'dead' });
  t.is((await w.owner.api.get(`/projects/${w.projectA}/events/${fresh.id}`)).body.status, 'pending', 'a live lease is left alone');
  await w.db('events').where({ id: fresh.id }).update({ status: 'completed' });
});

test.serial('a pending event stored without its work item is queued by the sweep and routed', async (t) => {
  const router = w.ctx.srv.server.app.container
    .resolve(RoleServices)
    .of('orchestrator')
    .find((s) => s instanceof EventRouter) as EventRouter;
  // Written past emitEvent (as through a pool nobody attached the routing to), two minutes ago.
  const id = newId('evt');
  await w.db('events').insert({
    id,
    project_id: w.projectA,
    type: 'manual.stage',
    source: 'manual',
    env_name: 'staging',
    payload_json: '{}',
    status: 'pending',
    created_at: w.db.raw("now() - interval '2 minutes'"),
  });
  t.is(await router.sweep(), 1);
  const event = await routed(w, id);
  t.is(event.status, 'completed');
  t.regex(event.routing.matched[0].run_id, /^prun_/);
  t.is(await router.sweep(), 0, 'an event with its item is left alone');
});

test.serial('system.job.attempt.completed for every ended attempt, with the spec payload', async (t) => {
  const thread = (await w.owner.api.post(`/projects/${w.projectA}/threads`, { title: 'team' })).body.id;
  const job = (await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'fine', hints: { coordination: { thread_id: thread }, max_attempts: 2 } }))
    .body;
  const first = (await w.owner.api.post(`/jobs/${job.id}/claim`, {})).body;
  await w.owner.api.post(`/jobs/${job.id}/attempts/${first.attempt.id}/complete`, {
    lease_token: first.attempt.lease_token,
    result: { status: 'failed', reason: 'flaky' },
  });
  const second = (await w.owner.api.post(`/jobs/${job.id}/claim`, {})).body;
  await w.owner.api.post(`/jobs/${job.id}/attempts/${second.attempt.id}/complete`, {
    lease_token: second.attempt.lease_token,
    result: { status: 'success', summary: 'ok' },
  });
  const events = await w.db('events').where({ type: 'system.job.attempt.completed' }).whereRaw("payload_json->>'job_id' = ?", [job.id]).orderBy('created_at');
  t.is(events.length, 2);
  const payloads = events.map((e: any) => e.payload_json);
  for (const p of payloads) {
    t.deepEqual(Object.keys(p).sort(), ['assignee', 'attempt_id', 'duration_ms', 'execution_type', 'job_id', 'status', 'thread_id']);
    t.like(p, { job_id: job.id, assignee: w.owner.id, thread_id: thread, execution_type: 'agent' });
    t.true(Number.isInteger(p.duration_ms) && p.duration_ms >= 0);
  }
  t.deepEqual(
    payloads.map((p: any) => [p.attempt_id, p.status]),
    [
      [first.attempt.id, 'failed'],
      [second.attempt.id, 'succeeded'],
    ],
  );
  t.is(
    await w.db('events').where({ type: 'system.job.failed' }).whereRaw("payload_json->>'job_id' = ?", [job.id]).first(),
    undefined,
    'a retried failure is not the job failing',
  );
});

test.serial('system.job.completed when a job reaches done: after its successful attempt, or only at approval when it needs review', async (t) => {
  const completedOf = (jobId: string) => w.db('events').where({ type: 'system.job.completed' }).whereRaw("payload_json->>'job_id' = ?", [jobId]);
  const job = (await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'finish', hints: { mutation_id: 'm-c', request_id: 'r-c' } })).body;
  const { attempt } = (await w.owner.api.post(`/jobs/${job.id}/claim`, {})).body;
  await w.owner.api.post(`/jobs/${job.id}/attempts/${attempt.id}/complete`, {
    lease_token: attempt.lease_token,
    result: { status: 'success', summary: 'all good' },
  });
  const [event] = await completedOf(job.id);
  t.like(event, { source: 'system', actor_type: 'system', mutation_id: 'm-c', request_id: 'r-c' });
  t.deepEqual(event.payload_json, {
    job_id: job.id,
    attempt_id: attempt.id,
    status: 'done',
    result_summary: 'all good',
    close_reason: null,
    mutation_id: 'm-c',
    request_id: 'r-c',
    metadata: { project_id: w.projectA },
  });

  const reviewed = (await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'check me', review_required: 'human' })).body;
  const claim = (await w.owner.api.post(`/jobs/${reviewed.id}/claim`, {})).body;
  await w.owner.api.post(`/jobs/${reviewed.id}/attempts/${claim.attempt.id}/complete`, {
    lease_token: claim.attempt.lease_token,
    result: { status: 'success', summary: 'please look' },
  });
  t.is((await completedOf(reviewed.id)).length, 0, 'in review, not done yet');
  t.is((await w.owner.api.post(`/jobs/${reviewed.id}/approve`, {})).statusCode, 200);
  const approved = await completedOf(reviewed.id);
  t.is(approved.length, 1);
  t.like(approved[0].payload_json, { attempt_id: claim.attempt.id, result_summary: 'please look', status: 'done' });
});
