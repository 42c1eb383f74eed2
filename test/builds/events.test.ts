import test from 'ava';
import { buildWorld, settled, twoServiceRepo, TWO_SERVICES, type BuildWorld } from './helpers.ts';

/** system.build.* and system.release.created on the event spine, and a trigger that reacts to them. */
let w: BuildWorld;
let projectId: string;
let repo: ReturnType<typeof twoServiceRepo>;
let hash: string;

const MANIFEST = `${TWO_SERVICES}
  announce:
    trigger: { system: { event: build.completed } }
    steps:
      - { name: say, action: { type: release, with: { tag: announced } } }
`;

test.before(async () => {
  w = await buildWorld({ overrides: { roles: ['api', 'orchestrator', 'worker'] } });
  repo = twoServiceRepo(MANIFEST);
  projectId = await w.project(repo.url);
  hash = (await w.admin.post(`/projects/${projectId}/manifest`, { ref: repo.sha })).body.manifest_hash;
});
test.after.always(() => w?.s.stop());

async function eventsOf(type: string): Promise<any[]> {
  const res = await w.admin.get(`/projects/${projectId}/events?type=${type}&limit=100`);
  return res.body.data.reverse();
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no ${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test.serial('a build emits started and completed with its digests; a reused one completed with reused_from; a release, release.created', async (t) => {
  w.builder.next = 'images';
  const created = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash });
  const done = await settled(w.admin, created.body.id);
  const digests = Object.fromEntries((await w.admin.get(`/builds/${created.body.id}/artifacts`)).body.data.map((a: any) => [a.service_name, a.digest]));

  const started = (await eventsOf('system.build.started')).filter((e) => e.payload_json.build_id === created.body.id);
  t.is(started.length, 1);
  t.like(started[0], {
    source: 'system',
    ref_sha: repo.sha,
    project_id: projectId,
    payload_json: { run_id: done.latest_run.id, status: 'building', backend: 'buildx', image_digests: null },
  });
  const completed = (await eventsOf('system.build.completed')).filter((e) => e.payload_json.build_id === created.body.id);
  t.is(completed.length, 1);
  t.like(completed[0].payload_json, { status: 'completed', git_sha: repo.sha, manifest_hash: hash, reused_from: null, error_class: null });
  t.deepEqual(completed[0].payload_json.image_digests, digests);

  // The system trigger on build.completed matched it and started its pipeline.
  const routed = await until('routing', async () => {
    const e = (await w.admin.get(`/projects/${projectId}/events/${completed[0].id}`)).body;
    return e.routing ? e : undefined;
  });
  t.deepEqual(
    routed.routing.matched.map((m: any) => `${m.kind} ${m.name}`),
    ['pipeline announce'],
  );
  t.regex(routed.routing.matched[0].run_id, /^prun_/);

  const again = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash });
  t.is(again.body.status, 'completed');
  const reused = (await eventsOf('system.build.completed')).find((e) => e.payload_json.build_id === again.body.id);
  t.like(reused?.payload_json, { status: 'completed', reused_from: done.latest_run.id, run_id: again.body.latest_run.id });
  t.deepEqual(reused?.payload_json.image_digests, digests);
  t.deepEqual(
    (await eventsOf('system.build.started')).filter((e) => e.payload_json.build_id === again.body.id),
    [],
    'nothing was built',
  );

  const release = await w.admin.post(`/projects/${projectId}/releases`, { build_id: created.body.id, tag: 'v-events' });
  t.is(release.statusCode, 201);
  const releaseEvent = (await eventsOf('system.release.created')).find((e) => e.payload_json.tag === 'v-events');
  t.like(releaseEvent, { ref_sha: repo.sha, payload_json: { release_id: release.body.id, build_id: created.body.id, git_sha: repo.sha } });
  t.deepEqual(releaseEvent.payload_json.image_digests, digests);
  // The same release again (same commit and images) answers the one there is: no second release, no second event.
  t.is((await w.admin.post(`/projects/${projectId}/releases`, { build_id: created.body.id, tag: 'v-events' })).statusCode, 200);
  t.is((await eventsOf('system.release.created')).filter((e) => e.payload_json.tag === 'v-events').length, 1);
});

test.serial('a failed build emits failed with its class, stage and message; a cancelled one, cancelled', async (t) => {
  w.builder.next = 'fail';
  const created = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, force_rebuild: true });
  await settled(w.admin, created.body.id);
  const failed = (await eventsOf('system.build.failed')).find((e) => e.payload_json.build_id === created.body.id);
  t.like(failed?.payload_json, { status: 'failed', error_class: 'build_error', failed_stage: '[build 2/3] RUN false', image_digests: null });
  t.regex(failed?.payload_json.error_message, /^api: process/);
  t.false('log_tail' in failed.payload_json);

  w.builder.next = 'hang';
  const hanging = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, force_rebuild: true });
  await until('building', async () => ((await w.admin.get(`/builds/${hanging.body.id}`)).body.status === 'building' ? true : undefined));
  t.is((await w.admin.post(`/builds/${hanging.body.id}/cancel`, {})).statusCode, 200);
  const cancelled = (await eventsOf('system.build.cancelled')).find((e) => e.payload_json.build_id === hanging.body.id);
  t.like(cancelled?.payload_json, { status: 'cancelled', error_message: 'cancelled by request' });
});
