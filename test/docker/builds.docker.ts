/**
 * Builds for real, driven over HTTP as a user would: examples/manifests/build-release.yaml's
 * `build → release` pipeline on BuildKit in the local engine (the buildx builder), pushing to
 * Debian's docker-registry on loopback configured for token auth with svc as its realm; digests
 * checked with the registry's own API. The base image is made with `docker import` (nothing pulled).
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { twoServiceRepo } from '../builds/helpers.ts';
import { freePort, startRegistry, tokenKeyPair, type Registry } from './registry.ts';
import { BUILD_BASE_IMAGE as BASE_IMAGE, DOCKER_CLI, ensureBuildBaseImage } from './images.ts';

const KEY = 'internal-key-for-the-build-test';
const work = mkdtempSync(path.join(tmpdir(), 'svc-builds-docker-'));
let registry: Registry | null = null;
let registryHost = '';
let s: TestServer;
let adminToken = '';
let orgId = '';

test.before(async () => {
  ensureBuildBaseImage();
  // The server must be listening for the registry's realm; the key file is written before either starts.
  const { keyFile, certFile } = tokenKeyPair(work);
  const port = await freePort();
  registry = await startRegistry(path.join(work, 'registry'), { token: { realm: `http://127.0.0.1:${port}`, certFile } });
  registryHost = registry.host;
  s = await startTestServer({
    overrides: {
      roles: ['api', 'orchestrator', 'worker'],
      server: { port },
      builds: { internal_api_key: KEY, native_registry: registryHost, poll_ms: 100, token: { key_file: keyFile } },
    },
  });
  adminToken = (await bootstrapAdmin(s.server)).token;
  orgId = (await call('POST', '/orgs', { name: 'Docker Builds' })).body.id;
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
  const res = await call('POST', '/projects', { org_id: orgId, name: `D${++slugs}`, slug: `dkb${slugs}${process.pid % 100}`, repo_url: repoUrl });
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

/** The REST API over HTTP, as the admin. */
async function call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${s.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 150_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const EXAMPLE = readFileSync(new URL('../../examples/manifests/build-release.yaml', import.meta.url), 'utf8');

/** Runs the example's `ship` pipeline at `sha` with a version; the ended run and the build its build step made. */
async function ship(projectId: string, sha: string, version: string, follow: boolean) {
  const started = await call('POST', `/projects/${projectId}/pipelines/ship/run`, { ref: sha, inputs: { version } });
  if (started.status !== 201) throw new Error(`pipeline run: ${started.status} ${JSON.stringify(started.body)}`);
  const known = new Set<string>();
  const build = await until('the build step’s build', async () => {
    const builds = (await call('GET', `/projects/${projectId}/builds?git_sha=${sha}`)).body.data as any[];
    return builds.find((b) => b.latest_run && new Date(b.created_at).getTime() >= Date.parse(started.body.created_at) - 1000 && !known.has(b.id));
  });
  // Follow its logs while it builds: lines arrive as they are written, then the end event.
  let followed: { firstLineAt: number | null; text: string } | null = null;
  if (follow) {
    const stream = await fetch(`${s.url}/builds/${build.id}/logs`, { headers: { authorization: `Bearer ${adminToken}`, accept: 'text/event-stream' } });
    let text = '';
    let firstLineAt: number | null = null;
    for await (const chunk of stream.body as AsyncIterable<Uint8Array>) {
      text += Buffer.from(chunk).toString('utf8');
      if (firstLineAt === null && text.includes('event: log\n')) firstLineAt = Date.now();
    }
    followed = { firstLineAt, text };
  }
  const run = await until('the pipeline run’s end', async () => {
    const r = (await call('GET', `/projects/${projectId}/pipelines/ship/runs/${started.body.id}`)).body;
    return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : undefined;
  });
  return { run, build: (await call('GET', `/builds/${build.id}`)).body, followed };
}

test.serial('a build → release pipeline builds two services with BuildKit; the release’s digests are in the registry; a second run reuses them', async (t) => {
  const repo = twoServiceRepo(EXAMPLE);
  const p = await project(repo.url);
  t.is((await call('POST', `/projects/${p.id}/manifest`, { ref: repo.sha })).status, 200);

  const first = await ship(p.id, repo.sha, '1.0.0', true);
  t.is(first.run.status, 'succeeded', JSON.stringify(first.run));
  t.like(first.build, { status: 'completed', latest_run: { reused_from: null } });
  t.regex(first.followed!.text, /id: \d+\nevent: log\ndata: /);
  t.regex(first.followed!.text, /event: end\ndata: \{"run_id":"brun_[^"]+","status":"completed"/);
  t.true(first.followed!.firstLineAt! < Date.parse(first.build.latest_run.completed_at), 'a line arrived before the build ended');

  const release = await call('GET', `/releases/v1.0.0?project_id=${p.id}`);
  t.is(release.status, 200);
  t.like(release.body, { build_id: first.build.id, git_sha: repo.sha, version: '1.0.0' });
  const artifacts = (await call('GET', `/builds/${first.build.id}/artifacts`)).body.data;
  for (const a of artifacts) built.add(a.image_ref);
  t.deepEqual(
    artifacts.map((a: any) => [a.service_name, a.image_ref]),
    [
      ['api', `${registryHost}/${p.slug}/api:sha-${repo.sha}`],
      ['web', `${registryHost}/${p.slug}/web:sha-${repo.sha}`],
    ],
  );
  t.deepEqual(release.body.image_digests, Object.fromEntries(artifacts.map((a: any) => [a.service_name, a.digest])));
  for (const a of artifacts) {
    // The registry's own API answers the released digest, for the tag and for the digest itself.
    const token = await registryToken(p.id, a.service_name);
    const byTag = await manifestOf(`${p.slug}/${a.service_name}`, `sha-${repo.sha}`, token);
    t.is(byTag.status, 200);
    t.is(byTag.headers.get('docker-content-digest'), release.body.image_digests[a.service_name], a.service_name);
    t.is((await manifestOf(`${p.slug}/${a.service_name}`, release.body.image_digests[a.service_name], token)).status, 200);
    t.true(a.size_bytes > 0);
    t.deepEqual(a.platforms, ['linux/amd64']);
  }

  // The same commit again: the build step is answered by build reuse, the release names the same digests.
  const second = await ship(p.id, repo.sha, '1.0.1', false);
  t.is(second.run.status, 'succeeded', JSON.stringify(second.run));
  t.not(second.build.id, first.build.id);
  t.like(second.build, { status: 'completed', latest_run: { reused_from: first.build.latest_run.id } });
  const again = await call('GET', `/releases/v1.0.1?project_id=${p.id}`);
  t.like(again.body, { build_id: second.build.id, version: '1.0.1' });
  t.deepEqual(again.body.image_digests, release.body.image_digests);

  // A token for another project's repository does not reach this one.
  const other = await project(repo.url);
  const foreign = await manifestOf(`${p.slug}/api`, `sha-${repo.sha}`, await registryToken(other.id, 'api'));
  t.is(foreign.status, 401);
  t.regex(await foreign.text(), /insufficient_scope|UNAUTHORIZED/);
});

test.serial('a broken Dockerfile fails the build step with build_error, the failed stage and the last 30 lines; nothing is released', async (t) => {
  const broken = EXAMPLE.replace('build: { context: api }', 'build: { context: api, dockerfile: Broken.Dockerfile }');
  t.not(broken, EXAMPLE);
  const repo = twoServiceRepo(broken);
  writeFileSync(
    path.join(repo.dir, 'api', 'Broken.Dockerfile'),
    `FROM ${BASE_IMAGE} AS build\nRUN echo preparing\nRUN for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35; do echo noisy line $i; done && false\n`,
  );
  const sha = repo.commit(broken, 'broken');
  const p = await project(repo.url);
  t.is((await call('POST', `/projects/${p.id}/manifest`, { ref: sha })).status, 200);
  const { run, build } = await ship(p.id, sha, '2.0.0', false);
  t.is(run.status, 'failed');
  const buildJob = run.steps.find((st: any) => st.name === 'build').job_id;
  const attempt = (await call('GET', `/projects/${p.id}/jobs/${buildJob}/attempts`)).body.data[0];
  t.regex(attempt.error, new RegExp(`^build ${build.id} failed \\(build_error\\): api: `));
  t.like(build.latest_run, { status: 'failed', error_class: 'build_error' });
  t.regex(build.latest_run.failed_stage, /^\[3\/3\] RUN for i in/);
  t.is(build.latest_run.log_tail.length, 30);
  t.true(build.latest_run.log_tail.some((l: string) => /noisy line 35/.test(l)));
  t.regex(build.latest_run.error_message, /^api: /);
  t.is((await call('GET', `/projects/${p.id}/releases`)).body.pagination.total, 0);
});
