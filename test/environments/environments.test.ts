import test from 'ava';
import { EnvironmentDirectoryToken, EnvironmentSuspensionToken } from '../../core/ports/environments.ts';
import { Tokens } from '../../core/tokens.ts';
import { assertError, newUser } from '../orgs/helpers.ts';
import { envWorld, eventsOf, example, settled, sha, type EnvWorld } from './helpers.ts';

let w: EnvWorld;
const base = () => `/projects/${w.projectA}/environments`;

test.before(async () => {
  w = await envWorld('envapi', example('staging.yaml'));
  w.releases.add(w.projectA, { id: 'rel_v110', tag: 'v1.1.0', git_sha: sha('a'), manifest_hash: null, image_digests: { web: 'sha256:' + 'a'.repeat(64) } });
  w.releases.add(w.projectA, { id: 'rel_v120', tag: 'v1.2.0', git_sha: sha('b'), manifest_hash: null, image_digests: { web: 'sha256:' + 'b'.repeat(64) } });
  w.releases.add(w.projectB, { id: 'rel_other', tag: 'v9', git_sha: sha('c'), manifest_hash: null, image_digests: { web: 'sha256:' + 'c'.repeat(64) } });
});
test.after.always(() => w?.ctx.srv.stop());

test.serial('the manifest environments are records: list and get, unknown is 404, other tenants see nothing', async (t) => {
  const list = await w.owner.api.get(base());
  t.is(list.statusCode, 200);
  t.deepEqual(
    list.body.data.map((e: any) => [e.name, e.type, e.kind, e.source, e.health, e.suspended, e.current_release]),
    [['staging', 'persistent', 'staging', 'manifest', 'unknown', false, null]],
  );
  t.is((await w.owner.api.get(`${base()}/staging`)).body.name, 'staging');
  assertError(t, await w.owner.api.get(`${base()}/nope`), 404, 'environment nope not found');
  t.is((await w.outsider.api.get(`${base()}/staging`)).statusCode, 404);
  t.is((await w.outsider.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0' })).statusCode, 404);
});

test.serial('flow 3: deploy staging by release tag, then a second release, then roll back to the first', async (t) => {
  const first = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.1.0' });
  t.is(first.statusCode, 202, JSON.stringify(first.body));
  t.like(first.body, { status: 'running', direct: true, release: { id: 'rel_v110', tag: 'v1.1.0' }, previous_release: null });
  t.like(await settled(w, 'staging', first.body.id), { status: 'succeeded', error_message: null });
  const second = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0' });
  t.like(await settled(w, 'staging', second.body.id), { status: 'succeeded', previous_release: { tag: 'v1.1.0' } });
  const env = (await w.owner.api.get(`${base()}/staging`)).body;
  t.like(env, { health: 'healthy', current_release: { id: 'rel_v120', tag: 'v1.2.0', git_sha: sha('b') } });

  const rollback = await w.owner.api.post(`${base()}/staging/rollback`, {});
  t.is(rollback.statusCode, 202, JSON.stringify(rollback.body));
  t.like(await settled(w, 'staging', rollback.body.id), { status: 'succeeded', release: { tag: 'v1.1.0' }, rollback_of: first.body.id });
  t.like((await w.owner.api.get(`${base()}/staging`)).body, { current_release: { tag: 'v1.1.0' } });
  t.deepEqual(w.deployer.calls.slice(-3), ['deploy staging v1.1.0', 'deploy staging v1.2.0', 'deploy staging v1.1.0']);

  const history = await w.owner.api.get(`${base()}/staging/deploys`);
  t.deepEqual(
    history.body.data.map((d: any) => d.release.tag),
    ['v1.1.0', 'v1.2.0', 'v1.1.0'],
  );
  const events = await eventsOf(w, 'system.deploy.%');
  t.deepEqual(
    events.map((e: any) => e.type),
    [
      'system.deploy.started',
      'system.deploy.succeeded',
      'system.deploy.started',
      'system.deploy.succeeded',
      'system.deploy.started',
      'system.deploy.succeeded',
    ],
  );
  t.like(events[1].payload_json, { deploy_id: first.body.id, env_name: 'staging', release_tag: 'v1.1.0', git_sha: sha('a') });
  const health = await eventsOf(w, 'system.environment.health.changed');
  t.is(health.length, 1, 'unknown → healthy once');
  t.like(health[0].payload_json, { previous: 'unknown', health: 'healthy' });
});

test.serial('release_tag with the git_sha of that release deploys it', async (t) => {
  const agreed = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0', git_sha: sha('b') });
  t.is(agreed.statusCode, 202, JSON.stringify(agreed.body));
  t.like(await settled(w, 'staging', agreed.body.id), { status: 'succeeded', release: { id: 'rel_v120', git_sha: sha('b') } });
});

test.serial(
  'bad deploy requests: 400 naming the fields, 404 for a release of another project, 422 for a hash that is not the SHA, nothing written',
  async (t) => {
    const before = await w.db('environment_deploys').count({ n: '*' }).first();
    const none = await w.owner.api.post(`${base()}/staging/deploy`, {});
    t.is(none.statusCode, 400);
    t.regex(none.body.message, /git_sha.*manifest_hash.*release_tag/);
    const noHash = await w.owner.api.post(`${base()}/staging/deploy`, { git_sha: sha('d') });
    t.is(noHash.statusCode, 400);
    t.regex(noHash.body.message, /manifest_hash/);
    const both = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.1.0', git_sha: sha('d') });
    t.is(both.statusCode, 422);
    t.is(both.body.message, `release v1.1.0 is of commit ${sha('a')}, not git_sha ${sha('d')}: give one of them, or ones that agree`);
    t.deepEqual(both.body.fields, ['release_tag', 'git_sha']);
    const otherHash = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.1.0', git_sha: sha('a'), manifest_hash: 'h' });
    t.is(otherHash.statusCode, 422);
    t.deepEqual(otherHash.body.fields, ['release_tag', 'manifest_hash']);
    const hashAlone = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.1.0', manifest_hash: 'h' });
    t.is(hashAlone.statusCode, 400);
    const badSha = await w.owner.api.post(`${base()}/staging/deploy`, { git_sha: 'xyz', manifest_hash: 'h' });
    t.is(badSha.statusCode, 400);
    t.regex(badSha.body.message, /git_sha/);
    assertError(t, await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v9' }), 404, `release v9 not found in project ${w.projectA}`);
    const mismatch = await w.owner.api.post(`${base()}/staging/deploy`, { git_sha: sha('d'), manifest_hash: 'sha256:' + '0'.repeat(64) });
    t.is(mismatch.statusCode, 422);
    t.regex(mismatch.body.message, /manifest_hash sha256:0+ does not match git_sha d+/);
    t.deepEqual(mismatch.body.fields, ['git_sha', 'manifest_hash']);
    assertError(t, await w.owner.api.post(`${base()}/nope/deploy`, { release_tag: 'v1.2.0' }), 404, 'environment nope not found');
    t.deepEqual(await w.db('environment_deploys').count({ n: '*' }).first(), before);
  },
);

test.serial('a deploy by git_sha and manifest_hash with image digests; a failed deploy leaves the previous release serving and says so', async (t) => {
  const manifest = (await w.owner.api.get(`/projects/${w.projectA}/manifest`)).body;
  const ok = await w.owner.api.post(`${base()}/staging/deploy`, {
    git_sha: sha('e'),
    manifest_hash: manifest.manifest_hash,
    image_digests: { web: 'sha256:' + 'e'.repeat(64) },
  });
  t.is(ok.statusCode, 202, JSON.stringify(ok.body));
  t.like(await settled(w, 'staging', ok.body.id), { status: 'succeeded', release: { id: null, git_sha: sha('e') } });
  const noImages = await w.owner.api.post(`${base()}/staging/deploy`, { git_sha: sha('e'), manifest_hash: manifest.manifest_hash });
  t.is(noImages.statusCode, 422);
  t.regex(noImages.body.message, /^nothing to deploy: git_sha e+ comes without images, and a direct deploy does not build/);

  w.deployer.failNext = 'web never became healthy';
  const bad = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0' });
  const failed = await settled(w, 'staging', bad.body.id);
  t.is(failed.status, 'failed');
  t.regex(failed.error_message, /^web never became healthy \(release e+ keeps serving\)$/);
  t.like((await w.owner.api.get(`${base()}/staging`)).body, { current_release: { git_sha: sha('e') }, health: 'healthy' });
  const last = (await eventsOf(w, 'system.deploy.failed')).at(-1);
  t.like(last.payload_json, { deploy_id: bad.body.id, error_message: failed.error_message });
});

test.serial('flow 4: suspend staging → a deploy and a job naming it are refused (409 with the reason); resume → both work', async (t) => {
  const suspended = await w.owner.api.post(`${base()}/staging/suspend`, { reason: 'maintenance window' });
  t.is(suspended.statusCode, 200, JSON.stringify(suspended.body));
  t.like(suspended.body, { suspended: true, suspended_reason: 'maintenance window' });
  t.is(w.deployer.calls.at(-1), 'suspend staging');
  assertError(t, await w.owner.api.post(`${base()}/staging/suspend`, {}), 409, 'environment staging is suspended: maintenance window');
  assertError(t, await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0' }), 409, 'environment staging is suspended: maintenance window');
  assertError(t, await w.owner.api.post(`${base()}/staging/rollback`, {}), 409, 'environment staging is suspended: maintenance window');
  assertError(
    t,
    await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'migrate', env_name: 'staging' }),
    409,
    'environment staging is suspended: maintenance window',
  );
  t.is((await w.owner.api.get(`${base()}/staging/health`)).body.suspended, true, 'a suspended environment answers its last health');

  const resumed = await w.owner.api.post(`${base()}/staging/resume`);
  t.like(resumed.body, { suspended: false, suspended_reason: null, health: 'healthy' });
  assertError(t, await w.owner.api.post(`${base()}/staging/resume`), 409, 'environment staging is not suspended');
  t.is((await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'migrate', env_name: 'staging' })).statusCode, 201);
  const deploy = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0' });
  t.like(await settled(w, 'staging', deploy.body.id), { status: 'succeeded' });
  t.deepEqual(
    (await eventsOf(w, 'system.environment.%sumed')).map((e: any) => e.type),
    ['system.environment.resumed'],
  );
  t.is((await eventsOf(w, 'system.environment.suspended')).length, 1);
});

test.serial('health is read from the deployer: a change is recorded and emitted once', async (t) => {
  w.deployer.healthOf = 'degraded';
  const read = await w.owner.api.get(`${base()}/staging/health`);
  t.like(read.body, { health: 'degraded', health_detail: [{ service: 'web', health: 'degraded', detail: 'recorded' }] });
  await w.owner.api.get(`${base()}/staging/health`);
  const changes = (await eventsOf(w, 'system.environment.health.changed')).map((e: any) => e.payload_json);
  t.like(changes.at(-1), { previous: 'healthy', health: 'degraded' });
  t.is(changes.filter((c: any) => c.health === 'degraded').length, 1);
  w.deployer.healthOf = 'healthy';
  await w.owner.api.get(`${base()}/staging/health`);
});

test.serial(
  'create is 201 then 409; ensure is 200 when it matches and 409 naming what differs; delete removes it and what runs; a persistent one needs environments:admin',
  async (t) => {
    const created = await w.owner.api.post(base(), { name: 'pr-7', kind: 'preview' });
    t.is(created.statusCode, 201, JSON.stringify(created.body));
    t.like(created.body, { name: 'pr-7', type: 'temporary', kind: 'preview', source: 'ensured' });
    const twice = await w.owner.api.post(base(), { name: 'pr-7', kind: 'preview' });
    t.is(twice.statusCode, 409);
    t.regex(twice.body.message, /environment pr-7 already exists .*ensure/);
    const same = await w.owner.api.post(`${base()}/ensure`, { name: 'pr-7', kind: 'preview' });
    t.is(same.statusCode, 200);
    t.is(same.body.id, created.body.id);
    t.is((await w.owner.api.post(`${base()}/ensure`, { name: 'pr-7' })).statusCode, 200, 'fields not given are not compared');
    const other = await w.owner.api.post(`${base()}/ensure`, { name: 'pr-7', kind: 'other', type: 'temporary' });
    t.is(other.statusCode, 409);
    t.is(other.body.message, 'environment pr-7 exists with other kind: kind "preview"');
    t.is((await w.owner.api.get(`${base()}/pr-7`)).body.kind, 'preview', 'a refused ensure changes nothing');
    const fresh = await w.owner.api.post(`${base()}/ensure`, { name: 'pr-8', kind: 'preview', pipeline_inputs: { b: 1, a: 2 } });
    t.is(fresh.statusCode, 200, 'a missing one is created, 200 as every ensure');
    t.is((await w.owner.api.post(`${base()}/ensure`, { name: 'pr-8', pipeline_inputs: { a: 2, b: 1 } })).statusCode, 200, 'key order does not matter');
    t.is((await w.owner.api.delete(`${base()}/pr-8`)).statusCode, 204);
    t.is((await w.owner.api.post(base(), { name: 'Bad_Name' })).statusCode, 400);
    t.is((await w.owner.api.post(`${base()}/ensure`, { name: 'Bad_Name' })).statusCode, 400);
    const deploy = await w.owner.api.post(`${base()}/pr-7/deploy`, { release_tag: 'v1.2.0' });
    await settled(w, 'pr-7', deploy.body.id);
    t.is((await w.owner.api.delete(`${base()}/pr-7`)).statusCode, 204);
    t.is(w.deployer.calls.at(-1), 'remove pr-7');
    t.is((await w.owner.api.get(`${base()}/pr-7`)).statusCode, 404);

    // A user bound to a role with environments:write (not :admin) deletes temporary environments only.
    const orgId = (await w.owner.api.get(`/projects/${w.projectA}`)).body.org_id;
    const role = await w.owner.api.post(`/orgs/${orgId}/access/roles`, {
      name: 'deployer',
      scope: 'project',
      permissions: ['environments:read', 'environments:write'],
    });
    const deployer = await newUser(w.ctx, 'envapi-deployer');
    const bound = await w.owner.api.post(`/orgs/${orgId}/access/bindings`, {
      role: role.body.id,
      principal_type: 'user',
      principal_id: deployer.id,
      project_id: w.projectA,
    });
    t.is(bound.statusCode, 201, JSON.stringify(bound.body));
    await deployer.api.post(base(), { name: 'pr-8' });
    t.is((await deployer.api.delete(`${base()}/pr-8`)).statusCode, 204);
    assertError(t, await deployer.api.delete(`${base()}/staging`), 403, 'environment staging is persistent: deleting it needs environments:admin');
    t.is((await w.owner.api.get(`${base()}/staging`)).statusCode, 200);
  },
);

test.serial("billing seam and analytics: suspend every environment of an org with a reason, in the caller's transaction; statuses by health", async (t) => {
  const container = w.ctx.srv.server.app.container;
  const orgId = (await w.owner.api.get(`/projects/${w.projectA}`)).body.org_id;
  await w.owner.api.post(`/projects/${w.projectA2}/environments`, { name: 'qa', type: 'persistent' });
  const directory = container.resolve(EnvironmentDirectoryToken);
  const statuses = await directory.ofProjects([w.projectA, w.projectA2]);
  t.deepEqual(statuses.map((e) => e.status).sort(), ['healthy', 'unknown']);
  const db = container.resolve(Tokens.Db);
  const rolledBack = await db
    .transaction(async (trx) => {
      t.is(await container.resolve(EnvironmentSuspensionToken).suspendOrg(orgId, 'balance below threshold', trx), 2);
      throw new Error('roll back');
    })
    .catch((e: Error) => e.message);
  t.is(rolledBack, 'roll back');
  t.like((await w.owner.api.get(`${base()}/staging`)).body, { suspended: false });
  const suspended = await db.transaction((trx) => container.resolve(EnvironmentSuspensionToken).suspendOrg(orgId, 'balance below threshold', trx));
  t.is(suspended, 2);
  t.like((await w.owner.api.get(`${base()}/staging`)).body, { suspended: true, suspended_reason: 'balance below threshold' });
  for (const path of [`${base()}/staging`, `/projects/${w.projectA2}/environments/qa`]) t.is((await w.owner.api.post(`${path}/resume`, {})).statusCode, 200);
});

test.serial('git.ref_policy env: a job naming an environment without a current release is a 422; with one it is accepted', async (t) => {
  await w.owner.api.post(base(), { name: 'fresh' });
  const refused = await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'x', env_name: 'fresh', git: { ref_policy: 'env' } });
  t.is(refused.statusCode, 422);
  t.like(refused.body, {
    message: 'git.ref_policy env: environment fresh has no current release SHA (deploy a release to it first)',
    fields: ['git.ref_policy', 'env_name'],
  });
  const ok = await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'x', env_name: 'staging', git: { ref_policy: 'env' } });
  t.is(ok.statusCode, 201, JSON.stringify(ok.body));
});

test.serial('a manifest sync adds and updates environments; one removed from it that never ran goes', async (t) => {
  const yaml = `${example('staging.yaml')}  scratch: { type: temporary, kind: preview }\n`;
  t.is((await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml })).statusCode, 200);
  t.like((await w.owner.api.get(`${base()}/scratch`)).body, { type: 'temporary', kind: 'preview', source: 'manifest' });
  t.is((await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml: example('staging.yaml') })).statusCode, 200);
  t.is((await w.owner.api.get(`${base()}/scratch`)).statusCode, 404);
  t.is((await w.owner.api.get(`${base()}/staging`)).statusCode, 200, 'staging has a release: kept');
});

test.serial('the routes are in /openapi.json', async (t) => {
  const doc = (await w.owner.api.get('/openapi.json')).body;
  for (const path of ['', '/{env}', '/{env}/deploy', '/{env}/rollback', '/{env}/suspend', '/{env}/resume', '/{env}/health', '/{env}/deploys']) {
    t.truthy(doc.paths[`/projects/{project_id}/environments${path}`], path);
  }
});

test.serial('a deploy while another one runs is a 409, however long it runs (no abandoning: its work item ends it); once it ended the next goes', async (t) => {
  const env = await w.db('environments').where({ project_id: w.projectA, name: 'staging' }).first();
  const release = JSON.stringify({ id: null, tag: null, git_sha: null, manifest_hash: null, image_digests: {} });
  const row = { environment_id: env.id, project_id: w.projectA, status: 'running', release, direct: true };
  await w.db('environment_deploys').insert({ id: 'dep_01m000000000000000000000aa', ...row });
  assertError(
    t,
    await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0' }),
    409,
    'environment staging is already being deployed (dep_01m000000000000000000000aa)',
  );
  await w
    .db('environment_deploys')
    .where({ id: 'dep_01m000000000000000000000aa' })
    .update({ created_at: new Date(Date.now() - 31 * 60_000) });
  t.is((await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0' })).statusCode, 409, 'a deploy running 31 minutes still runs');
  await w.db('environment_deploys').where({ id: 'dep_01m000000000000000000000aa' }).update({ status: 'failed', completed_at: new Date() });
  const next = await w.owner.api.post(`${base()}/staging/deploy`, { release_tag: 'v1.2.0' });
  t.is(next.statusCode, 202);
  t.like(await settled(w, 'staging', next.body.id), { status: 'succeeded' });
});
