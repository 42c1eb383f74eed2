import test from 'ava';
import { as, bootstrapAdmin, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { ManifestReaderToken } from '../../core/ports/manifest.ts';
import { SIMPLE, tempRepo } from './helpers.ts';

let s: TestServer;
let admin: ReturnType<typeof as>;
let member: ReturnType<typeof as>;
let orgId = '';

test.before(async () => {
  s = await startTestServer();
  const adminToken = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, adminToken);
  orgId = (await admin.post('/orgs', { name: 'Manifest Org' })).body.id;
  member = as(s.server, await userInOrg(s.server, adminToken, orgId, 'member@example.com', 'member'));
});
test.after.always(async () => {
  await s?.stop();
});

let slugs = 0;
async function newProject(repoUrl?: string): Promise<string> {
  const res = await admin.post('/projects', { org_id: orgId, name: `P${++slugs}`, slug: `mani${slugs}`, ...(repoUrl ? { repo_url: repoUrl } : {}) });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}
const versions = async (projectId: string) => Number((await s.kernel.db('manifests').where({ project_id: projectId }).count({ n: '*' }).first())!.n);

test('404 before any sync; sync from YAML stores and answers the manifest; GET returns the current one', async (t) => {
  const projectId = await newProject();
  const none = await admin.get(`/projects/${projectId}/manifest`);
  t.is(none.statusCode, 404);
  t.is(none.body.message, `no manifest has been synced for project ${projectId}`);

  const synced = await admin.post(`/projects/${projectId}/manifest`, { yaml: SIMPLE });
  t.is(synced.statusCode, 200, JSON.stringify(synced.body));
  t.like(synced.body, { project_id: projectId, git_sha: null, ref: null, yaml: SIMPLE });
  t.regex(synced.body.manifest_hash, /^sha256:[0-9a-f]{64}$/);
  t.deepEqual(synced.body.parsed.workflows.review.steps[0], { name: 'lint', script: { run: 'npm run lint' }, depends_on: [] });
  const { warnings, ...stored } = synced.body;
  t.deepEqual(warnings, [], 'nothing ignored');
  t.deepEqual((await admin.get(`/projects/${projectId}/manifest`)).body, stored, 'GET answers what the sync stored');
  const reader = s.kernel.container.resolve(ManifestReaderToken);
  t.is((await reader.current(projectId))?.manifest_hash, synced.body.manifest_hash);
  t.is((await reader.byHash(projectId, synced.body.manifest_hash))?.yaml, SIMPLE);
  t.is(await reader.byHash(projectId, 'sha256:nope'), null);
});

test('every version is stored; the same content in another key order or spacing has the same hash', async (t) => {
  const projectId = await newProject();
  const first = await admin.post(`/projects/${projectId}/manifest`, { yaml: 'registry: none\nworkflows: { w: { steps: [ { name: a, run: x } ] } }\n' });
  const second = await admin.post(`/projects/${projectId}/manifest`, {
    yaml: '# same\nworkflows:\n  w:\n    steps:\n      - run: x\n        name: a\nregistry:    none\n',
  });
  const third = await admin.post(`/projects/${projectId}/manifest`, { yaml: 'registry: svc\n' });
  t.is(first.body.manifest_hash, second.body.manifest_hash);
  t.not(second.body.manifest_hash, third.body.manifest_hash);
  t.is(await versions(projectId), 3);
  t.is((await admin.get(`/projects/${projectId}/manifest`)).body.manifest_hash, third.body.manifest_hash);
});

test('an invalid manifest is 422 with every problem and stores nothing; validate answers without storing', async (t) => {
  const projectId = await newProject();
  const bad = `
workflows:
  w:
    steps:
      - { name: a, run: x, depends_on: [b] }
      - { name: b, run: y, depends_on: [a] }
      - { name: a, run: z }
      - { name: c }
`;
  const res = await admin.post(`/projects/${projectId}/manifest`, { yaml: bad });
  t.is(res.statusCode, 422);
  t.is(res.body.error, 'Unprocessable Entity');
  t.deepEqual(res.body.errors, [
    { path: 'workflows.w.steps[3]', message: 'Workflow step must define exactly one of action, script, agent, or run' },
    { path: 'workflows.w.steps[2].name', message: "Duplicate step name 'a' in workflow 'w'" },
    { path: 'workflows.w.steps[0].depends_on', message: "Cycle detected in workflow 'w': a -> b -> a" },
  ]);
  t.is(res.body.message, 'invalid manifest: workflows.w.steps[3]: Workflow step must define exactly one of action, script, agent, or run (and 2 more)');
  t.is(await versions(projectId), 0);

  const invalid = await admin.post(`/projects/${projectId}/manifest/validate`, { yaml: bad });
  t.is(invalid.statusCode, 200);
  t.false(invalid.body.valid);
  t.is(invalid.body.errors.length, 3);
  const valid = await admin.post(`/projects/${projectId}/manifest/validate`, { yaml: SIMPLE });
  t.like(valid.body, { valid: true, errors: [] });
  t.regex(valid.body.manifest_hash, /^sha256:/);
  t.is(await versions(projectId), 0);
  t.is((await admin.post(`/projects/${projectId}/manifest`, { yaml: 'a', ref: 'main' })).statusCode, 400);
});

test('sync from the project repository: default branch, a tag, a SHA; errors for missing file, ref and repo_url', async (t) => {
  const repo = tempRepo();
  const first = repo.commit(SIMPLE, 'first');
  repo.tag('v1');
  const second = repo.commit('registry: none\n', 'second');
  const projectId = await newProject(repo.url);

  const head = await admin.post(`/projects/${projectId}/manifest`, {});
  t.is(head.statusCode, 200, JSON.stringify(head.body));
  t.like(head.body, { git_sha: second, ref: 'main', yaml: 'registry: none\n' });
  const tagged = await admin.post(`/projects/${projectId}/manifest`, { ref: 'v1' });
  t.like(tagged.body, { git_sha: first, ref: 'v1', yaml: SIMPLE });
  const bySha = await admin.post(`/projects/${projectId}/manifest`, { ref: first });
  t.like(bySha.body, { git_sha: first, manifest_hash: tagged.body.manifest_hash });

  const third = repo.commit('registry: svc\n', 'third'); // the mirror is refreshed on every sync
  t.like((await admin.post(`/projects/${projectId}/manifest`, {})).body, { git_sha: third });
  t.is(await versions(projectId), 4);

  const missingRef = await admin.post(`/projects/${projectId}/manifest`, { ref: 'nope' });
  t.is(missingRef.statusCode, 422);
  t.is(missingRef.body.message, `ref 'nope' not found in ${repo.url}`);
  const other = tempRepo();
  const bare = other.commit(null, 'no manifest');
  const otherProject = await newProject(other.url);
  const noFile = await admin.post(`/projects/${otherProject}/manifest/validate`, {});
  t.is(noFile.statusCode, 422);
  t.is(noFile.body.message, `.svc/manifest.yaml not found at main (${bare}) in ${other.url}`);
  const noRepo = await newProject();
  const res = await admin.post(`/projects/${noRepo}/manifest`, {});
  t.is(res.statusCode, 422);
  t.regex(res.body.message, /has no repo_url/);
  t.is(await versions(otherProject), 0);
});

test('members read the manifest and definitions but cannot sync (403 naming manifest:write)', async (t) => {
  const projectId = await newProject();
  await admin.post(`/projects/${projectId}/manifest`, { yaml: SIMPLE });
  t.is((await member.get(`/projects/${projectId}/manifest`)).statusCode, 200);
  t.is((await member.post(`/projects/${projectId}/manifest/validate`, { yaml: SIMPLE })).statusCode, 200);
  t.is((await member.get(`/projects/${projectId}/workflows`)).statusCode, 200);
  const denied = await member.post(`/projects/${projectId}/manifest`, { yaml: SIMPLE });
  t.is(denied.statusCode, 403);
  t.is(denied.body.message, 'missing permission manifest:write');
  t.is(await versions(projectId), 1);
  t.is((await as(s.server).get(`/projects/${projectId}/manifest`)).statusCode, 401);
});

test('x-svc.defaults reach job creation under explicit fields', async (t) => {
  const projectId = await newProject();
  const before = await admin.post(`/projects/${projectId}/jobs`, { description: 'before' });
  t.is(before.body.priority, 2);
  await admin.post(`/projects/${projectId}/manifest`, { yaml: SIMPLE });
  const job = await member.post(`/projects/${projectId}/jobs`, { description: 'with defaults', hints: { timeout_seconds: 60 } });
  t.is(job.statusCode, 201, JSON.stringify(job.body));
  t.like(job.body, { priority: 1, labels: ['from-manifest'], hints: { worker_type: 'node-worker', timeout_seconds: 60 } });
  const explicit = await admin.post(`/projects/${projectId}/jobs`, { description: 'explicit', priority: 4, labels: [] });
  t.like(explicit.body, { priority: 4, labels: [] });
});

test('workflows and pipelines are listed from the current manifest; unknown names are 404', async (t) => {
  const projectId = await newProject();
  t.deepEqual((await admin.get(`/projects/${projectId}/workflows`)).body.data, []);
  await admin.post(`/projects/${projectId}/manifest`, { yaml: SIMPLE });
  const list = await member.get(`/projects/${projectId}/workflows`);
  t.deepEqual(
    list.body.data.map((w: { name: string }) => w.name),
    ['review', 'nightly'],
  );
  t.like(list.body.pagination, { total: 2, count: 2, has_more: false });
  const paged = await member.get(`/projects/${projectId}/workflows?limit=1&offset=1`);
  t.deepEqual(
    paged.body.data.map((w: { name: string }) => w.name),
    ['nightly'],
  );
  const one = await member.get(`/projects/${projectId}/workflows/review`);
  t.like(one.body, { name: 'review', db_access: 'read_only' });
  t.deepEqual(one.body.steps[1], { name: 'check', agent: { name: 'reviewer' }, depends_on: ['lint'] });
  const missing = await member.get(`/projects/${projectId}/workflows/ghost`);
  t.is(missing.statusCode, 404);
  t.is(missing.body.message, `workflow 'ghost' not found in the current manifest of project ${projectId}`);
  const pipelines = await member.get(`/projects/${projectId}/pipelines`);
  t.deepEqual(
    pipelines.body.data.map((p: { name: string }) => p.name),
    ['release'],
  );
  const release = await member.get(`/projects/${projectId}/pipelines/release`);
  t.deepEqual(release.body.steps[1], { name: 'deploy', action: { type: 'deploy', with: { env_name: 'prod' } }, depends_on: ['build'] });
  t.is((await member.get(`/projects/${projectId}/pipelines/nope`)).body.message, `pipeline 'nope' not found in the current manifest of project ${projectId}`);
});

test("workflows and pipelines list in the order the manifest writes them, not the database's key order", async (t) => {
  const projectId = await newProject();
  const yaml = `
workflows:
  zeta-the-long-one: { steps: [{ name: a, run: echo a }] }
  b: { steps: [{ name: a, run: echo a }] }
  alpha: { steps: [{ name: a, run: echo a }] }
pipelines:
  release-to-production: { steps: [{ name: a, run: echo a }] }
  qa: { steps: [{ name: a, run: echo a }] }
`;
  t.is((await admin.post(`/projects/${projectId}/manifest`, { yaml })).statusCode, 200);
  t.deepEqual(
    (await member.get(`/projects/${projectId}/workflows`)).body.data.map((w: { name: string }) => w.name),
    ['zeta-the-long-one', 'b', 'alpha'],
  );
  t.deepEqual(
    (await member.get(`/projects/${projectId}/workflows?offset=1&limit=1`)).body.data.map((w: { name: string }) => w.name),
    ['b'],
  );
  t.deepEqual(
    (await member.get(`/projects/${projectId}/pipelines`)).body.data.map((p: { name: string }) => p.name),
    ['release-to-production', 'qa'],
  );
});

test('a soft-deleted project takes no new manifest (422) but its current one stays readable', async (t) => {
  const projectId = await newProject();
  await admin.post(`/projects/${projectId}/manifest`, { yaml: SIMPLE });
  await admin.delete(`/projects/${projectId}`);
  const res = await admin.post(`/projects/${projectId}/manifest`, { yaml: SIMPLE });
  t.is(res.statusCode, 422);
  t.is(res.body.message, `project ${projectId} is deleted`);
  t.is((await admin.get(`/projects/${projectId}/manifest`)).statusCode, 200);
  t.is(await versions(projectId), 1);
});

test("another tool's manifest keys (a top-level name, ingress, services.*.replicas) are accepted with a warning each and left out of parsed; a misspelt key of svc's own is still refused", async (t) => {
  const project = await newProject();
  const foreign = `name: my-app
ingress: { host: app.example.com }
services:
  api:
    image: registry.example.com/api:1
    replicas: 3
`;
  const synced = await admin.post(`/projects/${project}/manifest`, { yaml: foreign });
  t.is(synced.statusCode, 200, JSON.stringify(synced.body));
  t.deepEqual(synced.body.warnings, [
    { path: 'name', message: "'name' in the manifest is not used by svc and is ignored" },
    { path: 'ingress', message: "'ingress' in the manifest is not used by svc and is ignored" },
    { path: 'services.api.replicas', message: "'replicas' in services.api is not used by svc and is ignored" },
  ]);
  t.deepEqual(synced.body.parsed, { services: { api: { image: 'registry.example.com/api:1' } } });
  const validated = await admin.post(`/projects/${project}/manifest/validate`, { yaml: foreign });
  t.like(validated.body, { valid: true, errors: [], manifest_hash: synced.body.manifest_hash });
  t.is(validated.body.warnings.length, 3);
  // The same manifest without the ignored keys is the same manifest.
  const plain = await admin.post(`/projects/${project}/manifest/validate`, { yaml: 'services:\n  api:\n    image: registry.example.com/api:1\n' });
  t.is(plain.body.manifest_hash, synced.body.manifest_hash);
  t.deepEqual(plain.body.warnings, []);

  const typo = await admin.post(`/projects/${project}/manifest`, { yaml: 'servces:\n  api: { image: x }\nname: my-app\n' });
  t.is(typo.statusCode, 422);
  t.deepEqual(typo.body.errors, [{ path: 'servces', message: "Unknown key 'servces' in the manifest; did you mean 'services'?" }]);
  t.is(await versions(project), 1, 'the refused sync stored nothing');
});
