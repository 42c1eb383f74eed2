import test from 'ava';
import { buildWorld, twoServiceRepo, type BuildWorld } from './helpers.ts';

let w: BuildWorld;
let projectId: string;
let repo: ReturnType<typeof twoServiceRepo>;
let hash: string;

test.before(async () => {
  w = await buildWorld();
  repo = twoServiceRepo();
  projectId = await w.project(repo.url);
  hash = (await w.admin.post(`/projects/${projectId}/manifest/validate`, { ref: repo.sha })).body.manifest_hash;
});
test.after.always(() => w?.s.stop());

const BLD = /^bld_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const count = async (table: string) => Number((await w.s.kernel.db(table).count({ n: '*' }).first())!.n);

test.serial('create syncs the manifest at the SHA when missing, answers 201 with the spec and a pending run', async (t) => {
  const res = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, services: ['web', 'api'] });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.regex(res.body.id, BLD);
  t.like(res.body, { project_id: projectId, git_sha: repo.sha, manifest_hash: hash, status: 'pending', registry: null });
  t.deepEqual(res.body.services, ['api', 'web'], 'stored sorted, so reuse compares like with like');
  t.like(res.body.latest_run, { build_id: res.body.id, status: 'pending', backend: 'buildx', error_class: null, reused_from: null });
  t.is(Number((await w.s.kernel.db('manifests').where({ project_id: projectId, git_sha: repo.sha }).count({ n: '*' }).first())!.n), 1);

  t.deepEqual((await w.admin.get(`/builds/${res.body.id}`)).body, res.body);
  const list = await w.member.get(`/projects/${projectId}/builds?git_sha=${repo.sha}`);
  t.is(list.statusCode, 200);
  t.is(list.body.data[0].id, res.body.id);
  const runs = await w.member.get(`/builds/${res.body.id}/runs`);
  t.is(runs.body.data.length, 1);
  t.deepEqual((await w.member.get(`/builds/${res.body.id}/artifacts`)).body, { data: [] });
});

test('bad input is a 400 naming the field', async (t) => {
  for (const [body, field] of [
    [{ git_sha: 'abc', manifest_hash: hash }, 'git_sha'],
    [{ git_sha: repo.sha }, 'manifest_hash'],
    [{ git_sha: repo.sha, manifest_hash: hash, colour: 'red' }, 'colour'],
    [{ git_sha: repo.sha, manifest_hash: hash, services: [] }, 'services'],
  ] as const) {
    const res = await w.admin.post(`/projects/${projectId}/builds`, body);
    t.is(res.statusCode, 400, field);
    t.regex(res.body.message, new RegExp(field), field);
  }
});

test('a manifest_hash that does not match is a 422 naming both hashes, and writes nothing', async (t) => {
  const before = await count('build_specs');
  const wrong = `sha256:${'0'.repeat(64)}`;
  const res = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: wrong });
  t.is(res.statusCode, 422);
  t.true(res.body.message.includes(wrong) && res.body.message.includes(hash), res.body.message);
  t.is(await count('build_specs'), before);
});

test('a SHA the repository does not have is a 422 clone_error; an unknown service a 422', async (t) => {
  const missing = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: 'f'.repeat(40), manifest_hash: hash });
  t.is(missing.statusCode, 422);
  t.regex(missing.body.message, /^clone_error: /);
  const unknown = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, services: ['nope'] });
  t.is(unknown.statusCode, 422);
  t.regex(unknown.body.message, /nope/);
});

test('permissions and tenant isolation: members read, only admins build; another org sees nothing', async (t) => {
  const created = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, services: ['api'] });
  const id = created.body.id;
  t.is((await w.member.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash })).statusCode, 403);
  t.is((await w.member.post(`/builds/${id}/cancel`, {})).statusCode, 403);
  t.is((await w.member.post(`/projects/${projectId}/releases`, { build_id: id })).statusCode, 403);
  t.is((await w.member.get(`/projects/${projectId}/releases`)).statusCode, 200);
  for (const path of [`/builds/${id}`, `/builds/${id}/runs`, `/builds/${id}/artifacts`, `/builds/${id}/logs`, `/projects/${projectId}/builds`]) {
    t.is((await w.outsider.get(path)).statusCode, 404, path);
  }
  t.is((await w.outsider.post(`/builds/${id}/cancel`, {})).statusCode, 404);
  t.is((await w.admin.get(`/builds/bld_01h455vb4pex5vsknk084sn02q`)).statusCode, 404);
  await w.admin.post(`/builds/${id}/cancel`, {});
});

test.serial('cancel ends the active run; a finished build is a 409; a rerun makes a new run', async (t) => {
  const created = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, services: ['web'] });
  const id = created.body.id;
  const again = await w.admin.post(`/builds/${id}/runs`, {});
  t.is(again.statusCode, 409, 'one active run per build');
  const cancelled = await w.admin.post(`/builds/${id}/cancel`, {});
  t.is(cancelled.statusCode, 200);
  t.like(cancelled.body, { status: 'cancelled', latest_run: { status: 'cancelled' } });
  t.truthy(cancelled.body.latest_run.completed_at);
  t.is((await w.admin.post(`/builds/${id}/cancel`, {})).statusCode, 409);
  const rerun = await w.admin.post(`/builds/${id}/runs`, { force_rebuild: true });
  t.is(rerun.statusCode, 201);
  t.like(rerun.body, { build_id: id, status: 'pending', force_rebuild: true });
  t.is((await w.admin.get(`/builds/${id}/runs`)).body.pagination.total, 2);
  await w.admin.post(`/builds/${id}/cancel`, {});
});

test('a release needs a successful build of the same project; a failed release writes no row', async (t) => {
  const created = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, services: ['api', 'web'] });
  const before = await count('releases');
  const res = await w.admin.post(`/projects/${projectId}/releases`, { build_id: created.body.id, tag: 'v-none' });
  t.is(res.statusCode, 422);
  t.regex(res.body.message, /no successful run/);
  const other = await w.project();
  const cross = await w.admin.post(`/projects/${other}/releases`, { build_id: created.body.id });
  t.is(cross.statusCode, 404);
  t.is(await count('releases'), before);
  t.is((await w.admin.get(`/releases/v-none?project_id=${projectId}`)).statusCode, 404);
  t.is((await w.admin.get(`/releases/v-none`)).statusCode, 400, 'project_id is required');
  await w.admin.post(`/builds/${created.body.id}/cancel`, {});
});
