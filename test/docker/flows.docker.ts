/**
 * The environment flows of docs/environments.md end to end on the real engine: one server (api,
 * orchestrator, worker) building with BuildKit into Debian's docker-registry (token auth, svc as
 * realm) and deploying with the Docker deployer; everything driven over HTTP, the code host's
 * signed webhooks, the compiled CLI, and a local HTTP server standing for a webhook subscriber and
 * the chat API. The manifests are examples/manifests/'s.
 *   1. push-to-staging.yaml: a push to main → build → release → deploy staging (+ chat, webhooks)
 *   2. pull-request-previews.yaml: pull request opened → pr-<n> previewed; closed → removed
 *   3. and 4. staging.yaml: `svc env deploy --release-tag`, `svc env rollback`; health
 *      reconciliation; suspend refuses deploys and jobs, resume allows them; the `job` action
 */
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server as HttpServer } from 'node:http';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { tempRepo } from '../manifest/helpers.ts';
import { settled as buildSettled } from '../builds/helpers.ts';
import { example } from '../environments/helpers.ts';
import { pullRequest, push } from '../fixtures/vcshost/deliveries.ts';
import { hubSignature } from '../integrations/helpers.ts';
import { cliUser, showRun, tempHome } from '../cli/helpers.ts';
import { containersLabelled, docker } from './helpers.ts';
import { DOCKER_CLI, ensureBuildBaseImage, BUILD_BASE_IMAGE } from './images.ts';
import { freePort, startTokenRegistry, type TokenRegistry } from './registry.ts';

const KEY = 'internal-key-for-the-flows-test';
const HOOK_SECRET = 'flows-code-host-secret';
const SUBSCRIBER_SECRET = 'flows-subscriber-secret-0123456789';
const work = mkdtempSync(path.join(tmpdir(), 'svc-flows-docker-'));

let registry: TokenRegistry | null = null;
let s: TestServer;
let admin: ReturnType<typeof as>;
let adminToken = '';
let orgId = '';
let home = '';

/** What the local HTTP server received: webhook deliveries (with whether their signature holds) and chat messages. */
const deliveries: { type: string; data: any; signed: boolean }[] = [];
const chats: { channel: string; text: string }[] = [];
let receiver: HttpServer;
let receiverUrl = '';

const { svc } = cliUser(() => ({ home, url: s.url, token: adminToken }));

function startReceiver(): Promise<void> {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url === '/hooks') {
        const expected = `sha256=${createHmac('sha256', SUBSCRIBER_SECRET).update(body).digest('hex')}`;
        const event = JSON.parse(body);
        deliveries.push({ type: event.type, data: event.data, signed: req.headers['x-svc-signature-256'] === expected });
        res.writeHead(200).end();
      } else if (req.url === '/chat/chat.postMessage') {
        const { channel, text } = JSON.parse(body);
        chats.push({ channel, text });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, channel, ts: `${Date.now() / 1000}` }));
      } else res.writeHead(404).end();
    });
  });
  return new Promise((resolve) =>
    receiver.listen(0, '127.0.0.1', () => {
      receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
      resolve();
    }),
  );
}

test.before(async () => {
  ensureBuildBaseImage();
  await startReceiver();
  const port = await freePort();
  registry = await startTokenRegistry(work, `http://127.0.0.1:${port}`);
  process.env.ANTHROPIC_API_KEY ??= 'sk-ant-dummy';
  s = await startTestServer({
    overrides: {
      roles: ['api', 'orchestrator', 'worker'],
      server: { port },
      builds: { internal_api_key: KEY, native_registry: registry.host, poll_ms: 100, token: { key_file: registry.keyFile } },
      adapters: {
        deployer: { use: 'docker', options: { network: 'none', health_timeout_ms: 60_000, stop_timeout_seconds: 1 } },
        chatapp: { use: 'chat', options: { api_url: `${receiverUrl}/chat`, bot_token: 'xoxb-flows' } },
      },
      environments: { health_interval_seconds: 1 },
      webhooks: { poll_ms: 100 },
      worker: { heartbeat_seconds: 1, log_flush_ms: 20, workspace_root: path.join(work, 'workspaces') },
      // Flow 4 creates an agent job: its worker must be able to run the default harness, or create is
      // 422 (docs/harnesses.md, "Refused at create"). The stand-in and a dummy key, as the docs say.
      harnesses: { harness_b: { command: path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/bin/fake-claude') } },
    },
  });
  adminToken = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, adminToken);
  orgId = (await admin.post('/orgs', { name: 'Flows' })).body.id;
  home = await tempHome();
});

const projects: string[] = [];
test.after.always(async () => {
  for (const id of projects) for (const c of await containersLabelled(`svc.project=${id}`)) await docker.getContainer(c.Id).remove({ force: true });
  await s?.stop();
  registry?.stop();
  receiver?.close();
  const images = execFileSync(DOCKER_CLI, ['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}', '--filter', `reference=${registry?.host}/*/*`], {
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
  if (images.length > 0) execFileSync(DOCKER_CLI, ['image', 'rm', '--force', ...images], { stdio: 'ignore' });
  if (home) await rm(home, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
});

async function until<T>(check: () => Promise<T | null | undefined | false>, what: string, ms = 150_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A repository whose manifest is `manifest` and whose Dockerfile serves /www/index.html saying `page`. */
function webRepo(manifest: string) {
  const repo = tempRepo();
  writeFileSync(path.join(repo.dir, 'Dockerfile'), `FROM ${BUILD_BASE_IMAGE}\nENV PATH=/bin\nCOPY www /www\n`);
  const commit = (page: string) => {
    mkdirSync(path.join(repo.dir, 'www'), { recursive: true });
    writeFileSync(path.join(repo.dir, 'www', 'index.html'), page);
    return repo.commit(manifest, `page ${page}`);
  };
  return { ...repo, commitPage: commit };
}

/** A project on `repo`, its manifest synced at `sha`, with the code host's webhook secret. */
async function project(slug: string, repoUrl: string, sha: string): Promise<{ id: string; slug: string; hash: string }> {
  const res = await admin.post('/projects', { org_id: orgId, name: slug, slug, repo_url: repoUrl });
  if (res.statusCode !== 201) throw new Error(`project: ${res.statusCode} ${JSON.stringify(res.body)}`);
  projects.push(res.body.id);
  const synced = await admin.post(`/projects/${res.body.id}/manifest`, { ref: sha });
  if (synced.statusCode !== 200) throw new Error(`manifest: ${synced.statusCode} ${JSON.stringify(synced.body)}`);
  const secret = await admin.post(`/projects/${res.body.id}/secrets`, { name: 'VCSHOST_WEBHOOK_SECRET', value: HOOK_SECRET });
  if (secret.statusCode !== 201) throw new Error(`secret: ${secret.statusCode}`);
  return { id: res.body.id, slug, hash: synced.body.manifest_hash };
}

/** A signed code-host delivery; the run its trigger started, once it has ended. */
async function delivered(projectId: string, event: string, body: object, delivery: string): Promise<any> {
  const raw = JSON.stringify(body);
  const res = await fetch(`${s.url}/integrations/vcshost/events/${projectId}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': event,
      'x-github-delivery': delivery,
      'x-hub-signature-256': hubSignature(HOOK_SECRET, raw),
    },
    body: raw,
  });
  if (res.status !== 201) throw new Error(`delivery: ${res.status} ${await res.text()}`);
  const stored = (await res.json()) as { id: string };
  const routed = await until(async () => {
    const e = (await admin.get(`/projects/${projectId}/events/${stored.id}`)).body;
    return e.status === 'completed' || e.status === 'failed' ? e : null;
  }, `event ${stored.id} to be routed`);
  const runId = routed.routing.matched.find((m: any) => m.kind === 'pipeline')?.run_id;
  if (!runId) throw new Error(`event ${stored.id} started no pipeline: ${JSON.stringify(routed.routing)}`);
  return ended(projectId, runId);
}

const ended = (projectId: string, runId: string) =>
  until(async () => {
    const r = (await admin.get(`/projects/${projectId}/runs/${runId}`)).body;
    return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : null;
  }, `run ${runId} to end`);

/** Why a run failed: its failed steps' attempt errors. */
async function whyFailed(projectId: string, run: any): Promise<string> {
  const out: string[] = [];
  for (const step of run.steps.filter((x: any) => x.status !== 'succeeded')) {
    const attempts = (await admin.get(`/projects/${projectId}/jobs/${step.job_id}/attempts?limit=10`)).body.data ?? [];
    out.push(`${step.name} ${step.status}: ${attempts.map((a: any) => a.error).join('; ')}`);
  }
  return out.join('\n');
}

/** The running containers of an environment: the image reference each was created from, and its image id. */
async function running(environmentId: string): Promise<{ id: string; ref: string; imageId: string }[]> {
  const infos = (await containersLabelled(`svc.environment=${environmentId}`)).filter((c) => c.State === 'running');
  return Promise.all(
    infos.map(async (c) => {
      const inspected = await docker.getContainer(c.Id).inspect();
      return { id: c.Id, ref: inspected.Config.Image, imageId: inspected.Image };
    }),
  );
}

/** The page a running container serves, fetched inside it (its network is none). */
const pageOf = (containerId: string) =>
  execFileSync(DOCKER_CLI, ['exec', containerId, 'busybox', 'wget', '-q', '-O', '-', 'http://127.0.0.1:8080/'], { encoding: 'utf8' });

/**
 * The web image the release's build pushed is what the engine runs: the container was created from
 * `registry/slug/web@digest`, and the engine's image carries that repository digest.
 */
async function runsRelease(t: any, environmentId: string, slug: string, release: { image_digests: Record<string, string> }) {
  const [c, ...more] = await running(environmentId);
  t.is(more.length, 0, 'one container per service');
  t.truthy(c, 'a container runs');
  const pushed = `${registry!.host}/${slug}/web@${release.image_digests.web}`;
  t.is(c.ref, pushed);
  const repoDigests = (await docker.getImage(c.imageId).inspect()).RepoDigests;
  t.true(repoDigests.includes(pushed), JSON.stringify(repoDigests));
  return c;
}

test.serial('flow 1: a push to main builds, releases and deploys staging; a webhook subscriber receives the deploy events', async (t) => {
  const repo = webRepo(example('push-to-staging.yaml'));
  const sha = repo.commitPage('flow one');
  const p = await project('flowone', repo.url, sha);
  const hook = await admin.post(`/orgs/${orgId}/webhooks`, {
    url: `${receiverUrl}/hooks`,
    events: ['system.deploy.*'],
    filter: { project_id: p.id },
    secret: SUBSCRIBER_SECRET,
  });
  t.is(hook.statusCode, 201, JSON.stringify(hook.body));

  const run = await delivered(p.id, 'push', push('refs/heads/main', sha), 'flow1-push');
  t.is(run.status, 'succeeded', await whyFailed(p.id, run));
  t.deepEqual(
    run.steps.map((x: any) => x.name),
    ['build', 'release', 'deploy', 'tell'],
  );

  const env = (await admin.get(`/projects/${p.id}/environments/staging`)).body;
  t.like(env, { health: 'healthy', suspended: false });
  t.is(env.current_release.git_sha, sha);
  const release = (await admin.get(`/releases/${env.current_release.tag}?project_id=${p.id}`)).body;
  t.is(release.build_id.slice(0, 4), 'bld_');
  t.is(release.git_sha, sha);
  t.deepEqual(env.current_release.image_digests, release.image_digests);
  const c = await runsRelease(t, env.id, p.slug, release);
  t.is(pageOf(c.id), 'flow one');

  t.deepEqual(chats, [{ channel: 'deploys', text: `staging is on ${sha}` }]);
  const received = await until(async () => {
    const types = deliveries.map((d) => d.type);
    return types.includes('system.deploy.started') && types.includes('system.deploy.succeeded') ? deliveries : null;
  }, 'the subscriber to receive the deploy events');
  t.true(
    received.every((d) => d.signed),
    'every delivery is signed with the subscription secret',
  );
  const succeeded = received.find((d) => d.type === 'system.deploy.succeeded')!;
  t.like(succeeded.data, { env_name: 'staging', status: 'succeeded', release_tag: env.current_release.tag, git_sha: sha });
  t.deepEqual(succeeded.data.image_digests, release.image_digests);
});

test.serial('flow 2: a pull request opened gets a preview environment; closing it deletes the environment and its containers', async (t) => {
  const repo = webRepo(example('pull-request-previews.yaml'));
  const sha = repo.commitPage('preview');
  const p = await project('flowtwo', repo.url, sha);
  const opened = pullRequest('opened', 7);
  opened.pull_request.head.sha = sha;

  const run = await delivered(p.id, 'pull_request', opened, 'flow2-opened');
  t.is(run.status, 'succeeded', await whyFailed(p.id, run));
  const env = (await admin.get(`/projects/${p.id}/environments/pr-7`)).body;
  t.like(env, { type: 'temporary', kind: 'preview', health: 'healthy' });
  t.is(env.current_release.git_sha, sha);
  const c = await runsRelease(t, env.id, p.slug, env.current_release);
  t.is(pageOf(c.id), 'preview');

  const closed = pullRequest('closed', 7);
  closed.pull_request.head.sha = sha;
  closed.pull_request.state = 'closed';
  const cleanup = await delivered(p.id, 'pull_request', closed, 'flow2-closed');
  t.is(cleanup.status, 'succeeded', await whyFailed(p.id, cleanup));
  t.is((await admin.get(`/projects/${p.id}/environments/pr-7`)).statusCode, 404);
  t.deepEqual(await containersLabelled(`svc.environment=${env.id}`), [], 'its containers are gone');
});

/** Flows 3 and 4 share a project with two releases: v1.1.0 serves "one", v1.2.0 serves "two". */
const JOBS = `
pipelines:
  migrate:
    steps:
      - { name: migrate, action: { type: job, with: { service: web, env_name: staging, command: 'echo migrated $GREETING; busybox ls /www' } } }
  broken-migration:
    steps:
      - { name: migrate, action: { type: job, with: { service: web, env_name: staging, command: [busybox, sh, -c, 'echo failing; exit 3'] } } }
`;
let staging: { id: string; slug: string; hash: string };
const releases: Record<string, any> = {};

async function buildRelease(t: any, sha: string, hash: string, tag: string): Promise<any> {
  const build = await admin.post(`/projects/${staging.id}/builds`, { git_sha: sha, manifest_hash: hash });
  t.is(build.statusCode, 201, JSON.stringify(build.body));
  const done = await buildSettled(admin, build.body.id, 150_000);
  t.is(done.status, 'completed', JSON.stringify(done.latest_run));
  const release = await admin.post(`/projects/${staging.id}/releases`, { build_id: build.body.id, tag });
  t.is(release.statusCode, 201, JSON.stringify(release.body));
  return release.body;
}

const envOf = async () => (await admin.get(`/projects/${staging.id}/environments/staging`)).body;
const deployTo = (body: Record<string, unknown>) => admin.post(`/projects/${staging.id}/environments/staging/deploy`, body);
const deployEnded = (id: string) =>
  until(async () => {
    const d = (await admin.get(`/projects/${staging.id}/environments/staging/deploys/${id}`)).body;
    return d.status !== 'running' ? d : null;
  }, `deploy ${id} to end`);

test.serial('flow 3: svc env deploy staging --release-tag v1.2.0, then svc env rollback to the release before', async (t) => {
  const repo = webRepo(`${example('staging.yaml')}${JOBS}`);
  const one = repo.commitPage('one');
  const first = await project('flowthr', repo.url, one);
  const two = repo.commitPage('two');
  const hashTwo = (await admin.post(`/projects/${first.id}/manifest`, { ref: two })).body.manifest_hash;
  staging = first;
  releases.one = await buildRelease(t, one, first.hash, 'v1.1.0');
  releases.two = await buildRelease(t, two, hashTwo, 'v1.2.0');
  t.notDeepEqual(releases.one.image_digests, releases.two.image_digests);

  const firstDeploy = await deployTo({ release_tag: 'v1.1.0' });
  t.is(firstDeploy.statusCode, 202, JSON.stringify(firstDeploy.body));
  t.is((await deployEnded(firstDeploy.body.id)).status, 'succeeded');

  const deploy = await svc(['env', 'deploy', 'staging', '--release-tag', 'v1.2.0', '--project', staging.id, '--follow']);
  t.is(deploy.code, 0, showRun(['env', 'deploy'], deploy));
  let env = await envOf();
  t.like(env, { health: 'healthy' });
  t.is(env.current_release.tag, 'v1.2.0');
  t.is(pageOf((await runsRelease(t, env.id, staging.slug, releases.two)).id), 'two');

  const rollback = await svc(['env', 'rollback', 'staging', '--project', staging.id, '--follow']);
  t.is(rollback.code, 0, showRun(['env', 'rollback'], rollback));
  env = await envOf();
  t.like(env, { health: 'healthy' });
  t.is(env.current_release.tag, 'v1.1.0');
  t.is(pageOf((await runsRelease(t, env.id, staging.slug, releases.one)).id), 'one');
  const [latest] = (await admin.get(`/projects/${staging.id}/environments/staging/deploys?limit=1`)).body.data;
  t.truthy(latest.rollback_of, 'the rollback names the deploy it went back to');
});

test.serial('health reconciliation: a container stopped behind svc’s back makes staging degraded, with its event', async (t) => {
  t.truthy(staging, 'flow 3 ran');
  const before = await envOf();
  t.is(before.health, 'healthy');
  const [c] = await running(before.id);
  execFileSync(DOCKER_CLI, ['stop', '--time', '0', c.id], { stdio: 'ignore' });
  const degraded = await until(
    async () => {
      const env = await envOf();
      return env.health === 'degraded' ? env : null;
    },
    'staging to be degraded',
    60_000,
  );
  // Stopped with --time 0: SIGKILL, so the engine reports exit code 137, and the health detail says so.
  t.regex(JSON.stringify(degraded.health_detail), /exited with code 137/);
  const events = await s.kernel
    .db('events')
    .where({ project_id: staging.id, type: 'system.environment.health.changed' })
    .orderBy('created_at', 'desc')
    .select('payload_json');
  const last = typeof events[0].payload_json === 'string' ? JSON.parse(events[0].payload_json) : events[0].payload_json;
  t.like(last, { env_name: 'staging', previous: 'healthy', health: 'degraded' });
});

test.serial('flow 4: a suspended staging refuses deploys and jobs naming it, and is not health-checked; resumed, both work, the job action too', async (t) => {
  t.truthy(staging, 'flow 3 ran');
  const suspended = await admin.post(`/projects/${staging.id}/environments/staging/suspend`, { reason: 'over budget' });
  t.is(suspended.statusCode, 200, JSON.stringify(suspended.body));
  t.deepEqual(await running((await envOf()).id), [], 'its containers are stopped');

  const refusedDeploy = await deployTo({ release_tag: 'v1.2.0' });
  t.is(refusedDeploy.statusCode, 409);
  t.regex(refusedDeploy.body.message, /staging is suspended: over budget/);
  const refusedJob = await admin.post(`/projects/${staging.id}/jobs`, { description: 'migrate', env_name: 'staging' });
  t.is(refusedJob.statusCode, 409);
  t.regex(refusedJob.body.message, /staging is suspended/);
  const refusedRun = await ended(staging.id, (await admin.post(`/projects/${staging.id}/pipelines/migrate/run`, {})).body.id);
  t.is(refusedRun.status, 'failed');
  t.regex(await whyFailed(staging.id, refusedRun), /action job: environment staging is suspended: over budget/);

  const checkedAt = (await envOf()).health_checked_at;
  await new Promise((r) => setTimeout(r, 3500));
  t.is((await envOf()).health_checked_at, checkedAt, 'a suspended environment is not reconciled');

  const resumed = await admin.post(`/projects/${staging.id}/environments/staging/resume`, {});
  t.is(resumed.statusCode, 200, JSON.stringify(resumed.body));
  t.is(resumed.body.health, 'healthy');
  const deploy = await deployTo({ release_tag: 'v1.2.0' });
  t.is(deploy.statusCode, 202, JSON.stringify(deploy.body));
  t.is((await deployEnded(deploy.body.id)).status, 'succeeded');
  const env = await envOf();
  t.is(pageOf((await runsRelease(t, env.id, staging.slug, releases.two)).id), 'two');
  const job = await admin.post(`/projects/${staging.id}/jobs`, { description: 'migrate', env_name: 'staging' });
  t.is(job.statusCode, 201, JSON.stringify(job.body));
  await admin.patch(`/jobs/${job.body.id}`, { phase: 'cancelled' });

  // The job action: the service's image once, with its environment; the exit code decides the step.
  const migrated = await ended(staging.id, (await admin.post(`/projects/${staging.id}/pipelines/migrate/run`, {})).body.id);
  t.is(migrated.status, 'succeeded', await whyFailed(staging.id, migrated));
  const [attempt] = (await admin.get(`/projects/${staging.id}/jobs/${migrated.steps[0].job_id}/attempts?limit=10`)).body.data;
  const lines = (await admin.get(`/jobs/${migrated.steps[0].job_id}/attempts/${attempt.id}/logs?limit=100`)).body.data.map((l: any) => l.line);
  t.true(lines.includes('migrated hello'), lines.join('\n'));
  t.true(lines.includes('index.html'));
  t.like(attempt.result_json, { service: 'web', env_name: 'staging', exit_code: 0, release_tag: 'v1.2.0', image_digest: releases.two.image_digests.web });
  const broken = await ended(staging.id, (await admin.post(`/projects/${staging.id}/pipelines/broken-migration/run`, {})).body.id);
  t.is(broken.status, 'failed');
  t.regex(await whyFailed(staging.id, broken), /job web in staging exited with code 3/);
  t.deepEqual(await containersLabelled(`svc.one-off.environment=${env.id}`), [], 'the one-off containers are removed');
  t.is((await running(env.id)).length, 1, 'the job ran beside the service, not in place of it');
});
