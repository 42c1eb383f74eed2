import test from 'ava';
import { buildWorld, settled, twoServiceRepo, type BuildWorld } from './helpers.ts';

let w: BuildWorld;
let projectId: string;
let repo: ReturnType<typeof twoServiceRepo>;
let hash: string;

test.before(async () => {
  w = await buildWorld({ worker: true });
  repo = twoServiceRepo();
  projectId = await w.project(repo.url);
  hash = (await w.admin.post(`/projects/${projectId}/manifest`, { ref: repo.sha })).body.manifest_hash;
});
test.after.always(() => w?.s.stop());

const create = (body: Record<string, unknown> = {}) => w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, ...body });

test.serial('a build runs: the services with build config are built, artifacts recorded, a release names their digests', async (t) => {
  w.builder.next = 'images';
  const created = await create({ inputs: { platforms: ['linux/amd64'] } });
  const done = await settled(w.admin, created.body.id);
  t.like(done, { status: 'completed', latest_run: { status: 'completed', error_class: null, reused_from: null } });
  t.truthy(done.latest_run.started_at);
  const request = w.builder.requests.at(-1)!;
  t.is(request.gitSha, repo.sha);
  t.is(request.repoUrl, repo.url);
  t.deepEqual(request.platforms, ['linux/amd64']);
  t.is(request.push, null, 'registry none pushes nothing');
  t.deepEqual(
    request.services.map((s) => [s.service, s.context, s.dockerfile]),
    [
      ['api', 'api', 'Dockerfile'],
      ['web', 'web', 'Dockerfile'],
    ],
    'db has no build config',
  );
  const slug = (await w.admin.get(`/projects/${projectId}`)).body.slug;
  t.is(request.services[0].image_ref, `${slug}/api:local`, 'registry none: the images stay in the engine, tagged for local development');
  const artifacts = (await w.member.get(`/builds/${created.body.id}/artifacts`)).body.data;
  t.deepEqual(
    artifacts.map((a: any) => a.service_name),
    ['api', 'web'],
  );
  t.like(artifacts[0], { platforms: ['linux/amd64'], size_bytes: 1234, run_id: done.latest_run.id });

  const release = await w.admin.post(`/projects/${projectId}/releases`, { build_id: created.body.id, tag: 'v1.0.0', version: '1.0.0' });
  t.is(release.statusCode, 201, JSON.stringify(release.body));
  t.deepEqual(release.body.image_digests, { api: artifacts[0].digest, web: artifacts[1].digest });
  t.like(release.body, { project_id: projectId, git_sha: repo.sha, manifest_hash: hash, build_id: created.body.id, tag: 'v1.0.0', version: '1.0.0' });
  const again = await w.admin.post(`/projects/${projectId}/releases`, { build_id: created.body.id, tag: 'v1.0.0' });
  t.is(again.statusCode, 200, 'the same build under its tag again: that release, not a conflict');
  t.deepEqual(again.body, release.body);
  t.deepEqual((await w.member.get(`/releases/v1.0.0?project_id=${projectId}`)).body, release.body);
  t.deepEqual((await w.member.get(`/releases/${release.body.id}?project_id=${projectId}`)).body, release.body);
  t.is((await w.outsider.get(`/releases/v1.0.0?project_id=${projectId}`)).statusCode, 404);
  const byPort = await w.s.kernel.container.resolve((await import('../../core/ports/releases.ts')).ReleasesToken).byTag(projectId, 'v1.0.0');
  t.like(byPort, { id: release.body.id, image_digests: release.body.image_digests, git_sha: repo.sha });
  t.is(byPort!.images.api, `${slug}/api@${artifacts[0].digest}`);

  // Untagged: sha-<12 hex> of the commit, and releasing the same build again is that release, not a duplicate tag.
  const untagged = await w.admin.post(`/projects/${projectId}/releases`, { build_id: created.body.id });
  t.is(untagged.statusCode, 201, JSON.stringify(untagged.body));
  t.is(untagged.body.tag, `sha-${repo.sha.slice(0, 12)}`);
  const untaggedAgain = await w.admin.post(`/projects/${projectId}/releases`, { build_id: created.body.id });
  t.is(untaggedAgain.statusCode, 200, JSON.stringify(untaggedAgain.body));
  t.deepEqual(untaggedAgain.body, untagged.body);
});

test.serial('a second build of the same commit, manifest and services reuses the artifacts, unless force_rebuild', async (t) => {
  w.builder.next = 'images';
  const asked = w.builder.requests.length;
  const answered = await create();
  t.like(answered.body, { status: 'completed' }, 'reuse answers in the request itself');
  const reused = await settled(w.admin, answered.body.id);
  t.like(reused, { status: 'completed' });
  t.truthy(reused.latest_run.reused_from);
  t.is(w.builder.requests.length, asked, 'the builder was not asked');
  const logs = (await w.admin.get(`/builds/${reused.id}/logs`)).body.data;
  t.regex(logs[0].line, /^reusing the artifacts of run brun_/);
  t.is((await w.admin.get(`/builds/${reused.id}/artifacts`)).body.data.length, 2);

  const forced = await settled(w.admin, (await create({ force_rebuild: true })).body.id);
  t.like(forced, { status: 'completed', latest_run: { reused_from: null, force_rebuild: true } });
  t.is(w.builder.requests.length, asked + 1);
  const subset = await settled(w.admin, (await create({ services: ['api'] })).body.id);
  t.is(subset.latest_run.reused_from, null, 'other services: no reuse');
  t.is(w.builder.requests.at(-1)!.services.length, 1);

  // Re-releasing: a build that reused the released images is that release; other images under the tag are refused.
  const rereleased = await w.admin.post(`/projects/${projectId}/releases`, { build_id: reused.id, tag: 'v1.0.0' });
  t.is(rereleased.statusCode, 200);
  const original = (await w.admin.get(`/releases/v1.0.0?project_id=${projectId}`)).body;
  t.is(rereleased.body.id, original.id);
  const before = Number((await w.s.kernel.db('releases').count({ n: '*' }).first())!.n);
  const taken = await w.admin.post(`/projects/${projectId}/releases`, { build_id: subset.id, tag: 'v1.0.0' });
  t.is(taken.statusCode, 409);
  t.is(taken.body.message, `release tag 'v1.0.0' already exists in project ${projectId} for other images of this commit`);
  t.is(Number((await w.s.kernel.db('releases').count({ n: '*' }).first())!.n), before, 'nothing written');
});

test.serial('a failed build keeps its class, the failed stage and the last 30 lines of output', async (t) => {
  w.builder.next = 'fail';
  const failed = await settled(w.admin, (await create({ force_rebuild: true })).body.id);
  t.like(failed.latest_run, { status: 'failed', error_class: 'build_error', failed_stage: '[build 2/3] RUN false' });
  t.is(failed.latest_run.log_tail.length, 30);
  t.is(failed.latest_run.log_tail.at(-1), `build failed (build_error): ${failed.latest_run.error_message}`);
  t.is(failed.latest_run.log_tail[0], 'step line 12');
  t.is((await w.admin.post(`/projects/${projectId}/releases`, { build_id: failed.id })).statusCode, 422);
});

test.serial('services with build config but no image produced: failed with guidance, not a success', async (t) => {
  w.builder.next = 'none';
  const done = await settled(w.admin, (await create({ force_rebuild: true })).body.id);
  t.like(done.latest_run, { status: 'failed', error_class: 'build_error' });
  t.regex(done.latest_run.error_message, /produced no image for api, web: check each service's build.context/);
});

test.serial('a builder that is not available fails with resource_error naming the backend and why', async (t) => {
  w.builder.unavailable = 'no Docker engine answers /usr/bin/docker';
  try {
    const done = await settled(w.admin, (await create({ force_rebuild: true })).body.id);
    t.like(done.latest_run, { status: 'failed', error_class: 'resource_error' });
    t.is(done.latest_run.error_message, "builder 'buildx' is not available here: no Docker engine answers /usr/bin/docker");
  } finally {
    w.builder.unavailable = null;
  }
});

test.serial('cancel aborts a building run; the run stays cancelled without artifacts', async (t) => {
  w.builder.next = 'hang';
  const id = (await create({ force_rebuild: true })).body.id;
  const deadline = Date.now() + 10_000;
  while ((await w.admin.get(`/builds/${id}`)).body.status !== 'building') {
    if (Date.now() > deadline) return t.fail('never building');
    await new Promise((r) => setTimeout(r, 30));
  }
  const cancelled = await w.admin.post(`/builds/${id}/cancel`, {});
  t.is(cancelled.statusCode, 200);
  await new Promise((r) => setTimeout(r, 300));
  const after = (await w.admin.get(`/builds/${id}`)).body;
  t.like(after.latest_run, { status: 'cancelled' });
  t.deepEqual((await w.admin.get(`/builds/${id}/artifacts`)).body.data, []);
  t.is(w.builder.requests.at(-1)!.signal.aborted, true, 'the builder was told to stop');
});

/** What a crash leaves: a building run of `buildId` whose work item is leased to a runner that stopped beating, after `attempts`. */
async function orphan(buildId: string, runId: string, attempts: number) {
  const db = w.s.kernel.db;
  await db('build_runs').insert({ id: runId, build_id: buildId, status: 'building', backend: 'buildx', runner_ref: 'gone:1', started_at: new Date() });
  await db('build_logs').insert({ run_id: runId, seq: 1, stream: 'stdout', line: 'the first runner got this far' });
  await db('work_items').insert({
    queue: 'builds',
    key: runId,
    payload: '{}',
    status: 'running',
    attempts,
    max_attempts: 3,
    lease_token: db.raw('gen_random_uuid()'),
    lease_owner: 'gone:1',
    lease_expires_at: new Date(Date.now() - 1_000),
  });
}

async function ended(runId: string) {
  const db = w.s.kernel.db;
  const deadline = Date.now() + 15_000;
  let row;
  while (['pending', 'building'].includes((row = await db('build_runs').where({ id: runId }).first()).status)) {
    if (Date.now() > deadline) throw new Error('never recovered');
    await new Promise((r) => setTimeout(r, 50));
  }
  return row;
}

test.serial('a run whose runner died is taken over and built again by another runner, its log going on', async (t) => {
  w.builder.next = 'images';
  const id = (await create({ force_rebuild: true })).body.id;
  await settled(w.admin, id);
  w.builder.next = 'images';
  await orphan(id, 'brun_01h455vb4pex5vsknk084sn02r', 1);
  const row = await ended('brun_01h455vb4pex5vsknk084sn02r');
  t.like(row, { status: 'completed' });
  const lines = await w.s.kernel.db('build_logs').where({ run_id: row.id }).orderBy('seq').select('seq', 'line');
  t.is(lines[0].line, 'the first runner got this far');
  t.regex(lines[1].line, /building it again here \(attempt 2\)/);
  t.deepEqual(
    lines.map((l) => l.seq),
    lines.map((_, i) => i + 1),
  );
  t.like(await w.s.kernel.db('work_items').where({ queue: 'builds', key: row.id }).first(), { status: 'done', attempts: 2 });
});

test.serial('a run whose runners died on every attempt fails with resource_error naming the last one', async (t) => {
  const id = (await create({ force_rebuild: true })).body.id;
  await settled(w.admin, id);
  await orphan(id, 'brun_01h455vb4pex5vsknk084sn02q', 3);
  const row = await ended('brun_01h455vb4pex5vsknk084sn02q');
  t.like(row, { status: 'failed', error_class: 'resource_error' });
  t.regex(row.error_message, /gone:1 stopped while building/);
  t.like(await w.s.kernel.db('work_items').where({ queue: 'builds', key: row.id }).first(), { status: 'dead' });
});

test.serial('logs follow as server-sent events with Last-Event-ID resume, ending with the run status', async (t) => {
  w.builder.next = 'images';
  const id = (await create({ force_rebuild: true })).body.id;
  await settled(w.admin, id);
  const full = await w.admin.get(`/builds/${id}/logs?follow=true`);
  t.is(full.statusCode, 200);
  const events = String(full.body)
    .split('\n\n')
    .filter((f) => f.startsWith('id:') || f.startsWith('event:'));
  t.regex(events.at(-1)!, /^event: end\ndata: \{"run_id":"brun_[^"]+","status":"completed"/);
  const resumed = await w.s.server.inject({
    method: 'GET',
    url: `/builds/${id}/logs`,
    headers: { authorization: `Bearer ${w.adminToken}`, accept: 'text/event-stream', 'last-event-id': '40' },
  });
  const ids = [...resumed.payload.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  t.true(ids.length > 0 && ids.every((n) => n > 40), JSON.stringify(ids));
  const page = await w.admin.get(`/builds/${id}/logs?after_seq=39&limit=2`);
  t.deepEqual(
    page.body.data.map((l: any) => l.seq),
    [40, 41],
  );
});
