/**
 * Builds for real, the paths beside the native registry: an own registry (Debian's docker-registry
 * with htpasswd basic auth) logged in with the project's REGISTRY_USERNAME / REGISTRY_PASSWORD
 * secrets and its pull secret; a wrong password; a build over its time limit (the builder is
 * stopped); a private repository checked out with the project's GIT_TOKEN.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { settled, twoServiceRepo } from '../builds/helpers.ts';
import { privateGitServer } from '../builds/git-http.ts';
import { RegistryPullSecretsToken } from '../../core/ports/registry.ts';
import { manifestDigest, startRegistry, type Registry } from './registry.ts';
import { BUILD_BASE_IMAGE, DOCKER_CLI, ensureBuildBaseImage } from './images.ts';

const USER = 'builder';
const PASSWORD = 'Pa55-for-the-own-registry';
const work = mkdtempSync(path.join(tmpdir(), 'svc-build-registry-'));
let registry: Registry | null = null;
let s: TestServer;
let admin: ReturnType<typeof as>;
let orgId = '';
const built = new Set<string>();

test.before(async () => {
  ensureBuildBaseImage();
  registry = await startRegistry(path.join(work, 'registry'), { htpasswd: { username: USER, password: PASSWORD } });
  s = await startTestServer({ overrides: { roles: ['api', 'worker'], builds: { poll_ms: 100 } } });
  const token = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, token);
  orgId = (await admin.post('/orgs', { name: 'Own Registry' })).body.id;
});

test.after.always(async () => {
  if (built.size > 0) execFileSync(DOCKER_CLI, ['image', 'rm', '--force', ...built], { stdio: 'ignore' });
  registry?.stop();
  await s?.stop();
  rmSync(work, { recursive: true, force: true });
});

let slugs = 0;
async function project(repoUrl: string, secrets: Record<string, string>): Promise<{ id: string; slug: string }> {
  const res = await admin.post('/projects', { org_id: orgId, name: `R${++slugs}`, slug: `dkr${slugs}${process.pid % 100}`, repo_url: repoUrl });
  for (const [name, value] of Object.entries(secrets)) {
    const set = await admin.post(`/projects/${res.body.id}/secrets`, { name, value });
    if (set.statusCode !== 201) throw new Error(`secret ${name}: ${JSON.stringify(set.body)}`);
  }
  return { id: res.body.id, slug: res.body.slug };
}

const OWN = (host: string) => `
registry: { host: "${host}", namespace: team }
services:
  api:
    build: { context: api }
  web:
    build: { context: web }
`;

async function buildOf(repo: { url: string; sha: string }, p: { id: string }) {
  const hash = (await admin.post(`/projects/${p.id}/manifest`, { ref: repo.sha })).body.manifest_hash;
  const created = await admin.post(`/projects/${p.id}/builds`, { git_sha: repo.sha, manifest_hash: hash });
  if (created.statusCode !== 201) throw new Error(JSON.stringify(created.body));
  return created.body.id as string;
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

test.serial('an own registry: pushed with the project’s REGISTRY_USERNAME / REGISTRY_PASSWORD; the pull secret logs in to it', async (t) => {
  const host = registry!.host;
  const repo = twoServiceRepo(OWN(host));
  const p = await project(repo.url, { REGISTRY_USERNAME: USER, REGISTRY_PASSWORD: PASSWORD });
  const buildId = await buildOf(repo, p);
  const done = await settled(admin, buildId, 150_000);
  t.like(done, { status: 'completed' }, JSON.stringify(done.latest_run));
  const artifacts = (await admin.get(`/builds/${buildId}/artifacts`)).body.data;
  for (const a of artifacts) built.add(a.image_ref);
  t.deepEqual(
    artifacts.map((a: any) => a.image_ref),
    [`${host}/team/api:sha-${repo.sha}`, `${host}/team/web:sha-${repo.sha}`],
  );

  const secret = await s.kernel.container.resolve(RegistryPullSecretsToken).forProject(p.id);
  t.deepEqual(Object.keys(secret!.auths), [host]);
  // The docker-config's credential is what the registry itself accepts, and it answers the built digests.
  for (const a of artifacts) {
    const answer = await manifestDigest(host, `team/${a.service_name}`, `sha-${repo.sha}`, `Basic ${secret!.auths[host].auth}`);
    t.deepEqual(answer, { status: 200, digest: a.digest }, a.service_name);
  }
  t.is((await manifestDigest(host, 'team/api', `sha-${repo.sha}`, basic(USER, 'wrong'))).status, 401);

  const logs = (await admin.get(`/builds/${buildId}/logs?limit=1000`)).body.data.map((l: any) => l.line).join('\n');
  t.false(logs.includes(PASSWORD));
  t.false(logs.includes(Buffer.from(`${USER}:${PASSWORD}`).toString('base64')));
});

test.serial('a wrong registry password fails the build with auth_error; the password is in neither the message nor the logs', async (t) => {
  const wrong = 'not-the-Pa55word';
  const repo = twoServiceRepo(OWN(registry!.host));
  const p = await project(repo.url, { REGISTRY_USERNAME: USER, REGISTRY_PASSWORD: wrong });
  const buildId = await buildOf(repo, p);
  const done = await settled(admin, buildId, 150_000);
  built.add(`${registry!.host}/team/api:sha-${repo.sha}`); // built, then refused by the registry
  t.like(done.latest_run, { status: 'failed', error_class: 'auth_error' });
  t.regex(done.latest_run.error_message, new RegExp(`^api: push to ${registry!.host.replace(/\./g, '\\.')} failed: `));
  const logs = (await admin.get(`/builds/${buildId}/logs?limit=1000`)).body.data.map((l: any) => l.line).join('\n');
  for (const text of [JSON.stringify(done), logs]) {
    t.false(text.includes(wrong));
    t.false(text.includes(Buffer.from(`${USER}:${wrong}`).toString('base64')));
  }
});

test.serial('a build over builds.timeout_seconds fails with timeout_error, and its builder is stopped', async (t) => {
  // A server of its own, with a time limit the other builds here could not keep on a busy machine.
  const limited = await startTestServer({ overrides: { roles: ['api', 'worker'], builds: { poll_ms: 100, timeout_seconds: 5 } } });
  try {
    const api = as(limited.server, (await bootstrapAdmin(limited.server)).token);
    const org = (await api.post('/orgs', { name: 'Slow' })).body.id;
    const manifest = 'registry: none\nservices:\n  api:\n    build: { context: api }\n';
    const repo = twoServiceRepo(manifest);
    writeFileSync(path.join(repo.dir, 'api', 'Dockerfile'), `FROM ${BUILD_BASE_IMAGE}\nRUN echo waiting && sleep 4321\n`);
    const sha = repo.commit(manifest, 'slow');
    const slug = `dks${process.pid % 100}`;
    const projectId = (await api.post('/projects', { org_id: org, name: 'Slow', slug, repo_url: repo.url })).body.id;
    const hash = (await api.post(`/projects/${projectId}/manifest`, { ref: sha })).body.manifest_hash;
    const created = await api.post(`/projects/${projectId}/builds`, { git_sha: sha, manifest_hash: hash });
    const done = await settled(api, created.body.id, 120_000);
    t.like(done.latest_run, { status: 'failed', error_class: 'timeout_error' });
    t.regex(done.latest_run.error_message, /did not finish within 5 s \(builds\.timeout_seconds\)/);
    // The CLI was ended, and BuildKit cancelled the step with it: no `sleep 4321` is left running.
    const processes = () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n');
    const sleeping = () => processes().filter((l) => /^sleep 4321/.test(l.trim()));
    const deadline = Date.now() + 30_000;
    while (sleeping().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 500));
    t.deepEqual(sleeping(), []);
    t.deepEqual(
      processes().filter((l) => l.includes(`${slug}/api:local`)),
      [],
      'no docker build of the run is left',
    );
  } finally {
    await limited.stop();
  }
});

test.serial('a private repository is checked out with the project’s GIT_TOKEN; with a wrong one the run is a clone_error that shows no token', async (t) => {
  const token = 'ghp_the-private-repository-token';
  const wrong = 'ghp_a-revoked-token';
  const manifest = 'registry: none\nservices:\n  api:\n    build: { context: api }\n';
  const repo = twoServiceRepo(manifest);
  const git = await privateGitServer(repo.dir, token);
  try {
    const p = await project(git.url, { GIT_TOKEN: token });
    const buildId = await buildOf({ url: git.url, sha: repo.sha }, p);
    const done = await settled(admin, buildId, 150_000);
    t.like(done, { status: 'completed' }, JSON.stringify(done.latest_run));
    for (const a of (await admin.get(`/builds/${buildId}/artifacts`)).body.data) built.add(a.image_ref);

    t.is((await admin.delete(`/projects/${p.id}/secrets/GIT_TOKEN`)).statusCode, 204);
    t.is((await admin.post(`/projects/${p.id}/secrets`, { name: 'GIT_TOKEN', value: wrong })).statusCode, 201);
    const rerun = await admin.post(`/builds/${buildId}/runs`, { force_rebuild: true });
    t.is(rerun.statusCode, 201, JSON.stringify(rerun.body));
    const failed = await settled(admin, buildId, 150_000);
    t.like(failed.latest_run, { status: 'failed', error_class: 'clone_error' });
    t.regex(failed.latest_run.error_message, new RegExp(`^could not clone ${git.url.replace(/[.]/g, '\\.')}: `));
    const logs = (await admin.get(`/builds/${buildId}/logs?run_id=${rerun.body.id}&limit=1000`)).body.data.map((l: any) => l.line).join('\n');
    for (const text of [JSON.stringify(failed), logs]) {
      for (const secret of [token, wrong, Buffer.from(`x-access-token:${wrong}`).toString('base64')]) t.false(text.includes(secret));
    }
    t.true(git.seen.refused > 0);
  } finally {
    await git.stop();
  }
});
