/**
 * Builds for real: BuildKit in the local engine (the buildx builder), pushing to Debian's
 * docker-registry on loopback configured for token auth with svc as its realm; digests checked
 * with the registry's own API. The base image is made here with `docker import` (nothing pulled).
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { settled, twoServiceRepo } from '../builds/helpers.ts';
import { BUILD_BASE_IMAGE as BASE_IMAGE, DOCKER_CLI, ensureBuildBaseImage } from './images.ts';
import { freePort, startTokenRegistry, type TokenRegistry } from './registry.ts';

const KEY = 'internal-key-for-the-build-test';
const work = mkdtempSync(path.join(tmpdir(), 'svc-builds-docker-'));
let registry: TokenRegistry | null = null;
let registryHost = '';
let s: TestServer;
let admin: ReturnType<typeof as>;
let adminToken = '';
let orgId = '';

test.before(async () => {
  ensureBuildBaseImage();
  // The server must be listening for the registry's realm; the key file is written before either starts.
  const port = await freePort();
  registry = await startTokenRegistry(work, `http://127.0.0.1:${port}`);
  registryHost = registry.host;
  const keyFile = registry.keyFile;
  s = await startTestServer({
    overrides: {
      roles: ['api', 'worker'],
      server: { port },
      builds: { internal_api_key: KEY, native_registry: registryHost, poll_ms: 100, token: { key_file: keyFile } },
    },
  });
  adminToken = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, adminToken);
  orgId = (await admin.post('/orgs', { name: 'Docker Builds' })).body.id;
});

/** Image references this file's builds left in the shared engine. */
const built = new Set<string>();

test.after.always(async () => {
  if (built.size > 0) execFileSync(DOCKER_CLI, ['image', 'rm', '--force', ...built], { stdio: 'ignore' });
  registry?.stop();
  await s?.stop();
  rmSync(work, { recursive: true, force: true });
});

let slugs = 0;
async function project(repoUrl: string): Promise<{ id: string; slug: string }> {
  const res = await admin.post('/projects', { org_id: orgId, name: `D${++slugs}`, slug: `dkb${slugs}${process.pid % 100}`, repo_url: repoUrl });
  return { id: res.body.id, slug: res.body.slug };
}

async function registryToken(projectId: string, service: string): Promise<string> {
  const res = await fetch(`${s.url}/internal/registry/token`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ project_id: projectId, service, actions: ['pull'] }),
  });
  return (await res.json()).token;
}

const manifestOf = (repository: string, tag: string, token: string) =>
  fetch(`http://${registryHost}/v2/${repository}/manifests/${tag}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/vnd.docker.distribution.manifest.v2+json' },
  });

const NATIVE = (dockerfileApi = 'Dockerfile') => `
registry: svc
services:
  api:
    build: { context: api, dockerfile: ${dockerfileApi} }
  web:
    build: { context: web }
`;

test.serial('two services are built with BuildKit, pushed to the token-auth registry, and their digests are the registry’s', async (t) => {
  const repo = twoServiceRepo(NATIVE());
  const p = await project(repo.url);
  const hash = (await admin.post(`/projects/${p.id}/manifest`, { ref: repo.sha })).body.manifest_hash;
  const created = await admin.post(`/projects/${p.id}/builds`, { git_sha: repo.sha, manifest_hash: hash });
  t.is(created.statusCode, 201, JSON.stringify(created.body));

  // Follow the logs while it builds: lines arrive, then the end event.
  const stream = await fetch(`${s.url}/builds/${created.body.id}/logs`, { headers: { authorization: `Bearer ${adminToken}`, accept: 'text/event-stream' } });
  const text = await stream.text();
  t.regex(text, /event: log\n/);
  t.regex(text, /event: end\ndata: \{"run_id":"brun_[^"]+","status":"completed"/);

  const done = await settled(admin, created.body.id, 120_000);
  t.like(done, { status: 'completed' }, JSON.stringify(done.latest_run));
  const artifacts = (await admin.get(`/builds/${created.body.id}/artifacts`)).body.data;
  t.deepEqual(
    artifacts.map((a: any) => [a.service_name, a.image_ref]),
    [
      ['api', `${registryHost}/${p.slug}/api:sha-${repo.sha}`],
      ['web', `${registryHost}/${p.slug}/web:sha-${repo.sha}`],
    ],
  );
  for (const a of artifacts) {
    built.add(a.image_ref);
    const res = await manifestOf(`${p.slug}/${a.service_name}`, `sha-${repo.sha}`, await registryToken(p.id, a.service_name));
    t.is(res.status, 200);
    t.is(res.headers.get('docker-content-digest'), a.digest, a.service_name);
    t.true(a.size_bytes > 0);
    t.deepEqual(a.platforms, ['linux/amd64']);
  }

  const release = await admin.post(`/projects/${p.id}/releases`, { build_id: created.body.id, tag: 'v1' });
  t.is(release.statusCode, 201);
  t.deepEqual(release.body.image_digests, { api: artifacts[0].digest, web: artifacts[1].digest });

  // The same commit again: reused, without the engine.
  const started = Date.now();
  const again = await admin.post(`/projects/${p.id}/builds`, { git_sha: repo.sha, manifest_hash: hash });
  const reused = await settled(admin, again.body.id, 30_000);
  t.like(reused, { status: 'completed' });
  t.is(reused.latest_run.reused_from, done.latest_run.id);
  t.log(`reuse answered in ${Date.now() - started} ms`);

  // A token for another project's repository does not reach this one.
  const other = await project(repo.url);
  const foreign = await manifestOf(`${p.slug}/api`, `sha-${repo.sha}`, await registryToken(other.id, 'api'));
  t.is(foreign.status, 401);
  t.regex(await foreign.text(), /insufficient_scope|UNAUTHORIZED/);
});

test.serial('a broken Dockerfile fails with build_error, the failed stage and the last 30 lines', async (t) => {
  const repo = twoServiceRepo(NATIVE('Broken.Dockerfile'));
  writeFileSync(
    path.join(repo.dir, 'api', 'Broken.Dockerfile'),
    `FROM ${BASE_IMAGE} AS build\nRUN echo preparing\nRUN for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35; do echo noisy line $i; done && false\n`,
  );
  const sha = repo.commit(NATIVE('Broken.Dockerfile'), 'broken');
  const p = await project(repo.url);
  const hash = (await admin.post(`/projects/${p.id}/manifest`, { ref: sha })).body.manifest_hash;
  const created = await admin.post(`/projects/${p.id}/builds`, { git_sha: sha, manifest_hash: hash });
  const done = await settled(admin, created.body.id, 120_000);
  t.like(done.latest_run, { status: 'failed', error_class: 'build_error' });
  t.regex(done.latest_run.failed_stage, /^\[3\/3\] RUN for i in/);
  t.is(done.latest_run.log_tail.length, 30);
  t.true(done.latest_run.log_tail.some((l: string) => /noisy line 35/.test(l)));
  t.regex(done.latest_run.error_message, /^api: /);
});
