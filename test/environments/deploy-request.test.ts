import test from 'ava';
import { envWorld, eventsOf, settled, sha, type EnvWorld } from './helpers.ts';

/** Deploys by git_sha + manifest_hash: image_tag covers the built services only; without images a direct deploy says how to go on. */
const YAML = `
services:
  api:
    build: { context: . }
    image: registry.example.com/acme/api
    ports: [8080]
  db:
    image: postgres:16
environments:
  staging:
    type: persistent
`;
const UNNAMED = `
services:
  api:
    build: { context: . }
    ports: [8080]
environments:
  staging:
    type: persistent
`;

let w: EnvWorld;
let hash: string;
const deploy = (body: Record<string, unknown>) => w.owner.api.post(`/projects/${w.projectA}/environments/staging/deploy`, body);

test.before(async () => {
  w = await envWorld('envdeployreq', YAML);
  hash = (await w.owner.api.get(`/projects/${w.projectA}/manifest`)).body.manifest_hash;
});
test.after.always(() => w?.ctx.srv.stop());

test.serial('image_tag names the images of the services a build makes; a third-party image is left as the manifest says', async (t) => {
  const res = await deploy({ git_sha: sha('a'), manifest_hash: hash, image_tag: 'v3' });
  t.is(res.statusCode, 202, JSON.stringify(res.body));
  t.deepEqual(res.body.release.image_digests, {}, 'a tag is no digest');
  t.is(res.body.release.image_tag, 'v3');
  t.deepEqual(res.body.release.images, { api: 'registry.example.com/acme/api:v3' });
  t.like(await settled(w, 'staging', res.body.id), { status: 'succeeded' });
  const recorded = (await w.owner.api.get(`/projects/${w.projectA}/environments/staging/deploys/${res.body.id}`)).body;
  t.like(recorded.release, { image_digests: {}, image_tag: 'v3', images: { api: 'registry.example.com/acme/api:v3' } });
  const started = (await eventsOf(w, 'system.deploy.started')).at(-1);
  const payload = typeof started.payload_json === 'string' ? JSON.parse(started.payload_json) : started.payload_json;
  t.like(payload, { image_digests: {}, image_tag: 'v3', images: { api: 'registry.example.com/acme/api:v3' } });
});

test.serial('without images, a direct deploy is 422 saying that it does not build and how to deploy instead; nothing is recorded', async (t) => {
  const before = (await w.owner.api.get(`/projects/${w.projectA}/environments/staging/deploys`)).body.pagination.total;
  const res = await deploy({ git_sha: sha('b'), manifest_hash: hash, direct: true });
  t.is(res.statusCode, 422);
  t.is(
    res.body.message,
    `nothing to deploy: git_sha ${sha('b')} comes without images, and a direct deploy does not build; give "image_digests" (skips the build) or "image_tag", deploy a release of a build ("release_tag"), or give environment staging a pipeline with a build step (its "pipeline" in the manifest) and deploy through it`,
  );
  t.deepEqual(res.body.fields, ['image_digests']);
  t.is((await w.owner.api.get(`/projects/${w.projectA}/environments/staging/deploys`)).body.pagination.total, before);
});

test.serial('image_tag with a built service that has no image name is 422 naming the service', async (t) => {
  const synced = await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml: UNNAMED });
  t.is(synced.statusCode, 200, JSON.stringify(synced.body));
  const res = await deploy({ git_sha: sha('c'), manifest_hash: synced.body.manifest_hash, image_tag: 'v4' });
  t.is(res.statusCode, 422);
  t.is(res.body.message, '"image_tag" needs each built service\'s "image" in the manifest, and api has none: give "image_digests" instead');
  t.deepEqual(res.body.fields, ['image_tag']);
});

test.serial("a deploy of a release runs and records the services of the release's manifest, not the project's current one", async (t) => {
  w.releases.add(w.projectA, { id: 'rel_old', tag: 'old', git_sha: sha('e'), manifest_hash: hash, image_digests: { api: 'sha256:' + 'e'.repeat(64) } });
  const current = await w.owner.api.post(`/projects/${w.projectA}/manifest`, {
    yaml: `${YAML.replace('  db:\n    image: postgres:16\n', '  cache:\n    image: redis:7\n')}`,
  });
  t.is(current.statusCode, 200, JSON.stringify(current.body));
  t.not(current.body.manifest_hash, hash);
  const res = await deploy({ release_tag: 'old', direct: true });
  t.is(res.statusCode, 202, JSON.stringify(res.body));
  const done = await settled(w, 'staging', res.body.id);
  t.is(done.status, 'succeeded', JSON.stringify(done));
  t.deepEqual(done.services.map((s: { service: string }) => s.service).sort(), ['api', 'db']);
});
