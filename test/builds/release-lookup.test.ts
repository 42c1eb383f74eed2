import test from 'ava';
import { buildWorld, settled, twoServiceRepo, type BuildWorld } from './helpers.ts';

/** GET /releases/{tag}: a tag with ?project_id=, or a rel_ id alone. */
let w: BuildWorld;
let projectId: string;
let release: any;

test.before(async () => {
  w = await buildWorld({ worker: true });
  const repo = twoServiceRepo();
  projectId = await w.project(repo.url);
  const hash = (await w.admin.post(`/projects/${projectId}/manifest`, { ref: repo.sha })).body.manifest_hash;
  w.builder.next = 'images';
  const build = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash });
  await settled(w.admin, build.body.id);
  const released = await w.admin.post(`/projects/${projectId}/releases`, { build_id: build.body.id, tag: 'v2.0.0' });
  if (released.statusCode !== 201) throw new Error(`release: ${released.statusCode} ${JSON.stringify(released.body)}`);
  release = released.body;
});
test.after.always(() => w?.s.stop());

test('a rel_ id alone resolves the release; with project_id it must be its project', async (t) => {
  const byId = await w.member.get(`/releases/${release.id}`);
  t.is(byId.statusCode, 200, JSON.stringify(byId.body));
  t.deepEqual(byId.body, release);
  t.deepEqual((await w.member.get(`/releases/${release.id}?project_id=${projectId}`)).body, release);
  t.deepEqual((await w.member.get(`/releases/v2.0.0?project_id=${projectId}`)).body, release);

  const other = await w.project();
  const elsewhere = await w.admin.get(`/releases/${release.id}?project_id=${other}`);
  t.is(elsewhere.statusCode, 404);
  t.is(elsewhere.body.message, `release ${release.id} not found in project ${other}`);
});

test('a tag alone is 400 naming project_id; an unknown id is 404; an outsider gets 404 for a real one', async (t) => {
  const tagAlone = await w.member.get('/releases/v2.0.0');
  t.is(tagAlone.statusCode, 400);
  t.regex(tagAlone.body.message, /"project_id" is required/);
  const unknown = await w.member.get('/releases/rel_01h455vb4pex5vsknk084sn02q');
  t.is(unknown.statusCode, 404);
  t.is(unknown.body.message, 'release rel_01h455vb4pex5vsknk084sn02q not found');
  const hidden = await w.outsider.get(`/releases/${release.id}`);
  t.is(hidden.statusCode, 404);
  t.is(hidden.body.message, `release ${release.id} not found`);
});
