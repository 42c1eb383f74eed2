import test from 'ava';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPgCluster, type PgCluster } from '../support/pg-cluster.ts';
import { startServerProcess, type ServerProcess } from '../support/server-process.ts';
import { Client, REPORTS_TO_HOST, bootstrap, tail, until } from '../support/chaos.ts';
import { tempRepo } from '../manifest/helpers.ts';

/**
 * The work engine's promise (docs/architecture.md, "Work engine"): SIGKILL of the server process
 * while it runs a direct deploy (in its API process, where the request landed) and a build (on its
 * worker role), then a new process on the same database: both finish there. 0 lost; each side
 * effect (the deployer's deploy, the builder's `docker build`) runs at most once more than it
 * finished, once per killed lease. Leases are short here (work.lease_seconds 2, builds beat every
 * second), so the takeover comes within seconds of the new process starting.
 */
const scratch = mkdtempSync(path.join(tmpdir(), 'svc-chaos-work-'));
const deployRecord = path.join(scratch, 'deploys.log');
const buildRecord = path.join(scratch, 'builds.log');
const fakeDocker = path.join(scratch, 'docker');
const SLOW_DEPLOYER = fileURLToPath(new URL('../fixtures/adapters/slow-deployer.ts', import.meta.url));
const DIGEST = `sha256:${'e'.repeat(64)}`;

// A Docker CLI that answers what the buildx builder asks: a build takes 4 s and is recorded.
writeFileSync(
  fakeDocker,
  `#!/bin/sh
case "$1" in
  version) echo 24.0.0 ;;
  build) echo "start $$" >> ${buildRecord}; echo "#1 building"; sleep 4; echo "end $$" >> ${buildRecord}; echo "#2 DONE" ;;
  image) echo '{"Id":"${DIGEST}","Size":1,"Os":"linux","Architecture":"amd64"}' ;;
  *) exit 0 ;;
esac
`,
);
chmodSync(fakeDocker, 0o755);

const ENV = {
  SVC_ROLES: 'api,orchestrator,worker',
  SVC_WORK__LEASE_SECONDS: '2',
  SVC_WORK__POLL_MS: '200',
  SVC_BUILDS__HEARTBEAT_SECONDS: '1',
  SVC_BUILDS__POLL_MS: '200',
  SVC_BUILDS__BUILDERS__BUILDX__DOCKER_BIN: fakeDocker,
  SVC_ADAPTERS__DEPLOYER__USE: SLOW_DEPLOYER,
  SVC_ADAPTERS__DEPLOYER__OPTIONS__RECORD: deployRecord,
  SVC_ADAPTERS__DEPLOYER__OPTIONS__DEPLOY_MS: '4000',
  ...REPORTS_TO_HOST,
};

const MANIFEST = `
registry: none
services:
  api:
    build: { context: . }
environments:
  staging:
    type: persistent
`;

let cluster: PgCluster;
let server: ServerProcess;
let client: Client;
const repo = tempRepo();

const lines = (file: string) => {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};
const count = (file: string, word: string) => lines(file).filter((l) => l.startsWith(`${word} `)).length;

test.before(async () => {
  cluster = await startPgCluster();
  server = await startServerProcess(cluster.url, ENV);
  client = (await bootstrap(server.url)).client;
  client = new Client(() => server.url, client.token);
});

test.after.always(async () => {
  await server?.stop();
  await cluster?.destroy();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(repo.dir, { recursive: true, force: true });
});

test.serial('SIGKILL mid-deploy and mid-build: a new process finishes both; 0 lost, at most one repeat per killed lease', async (t) => {
  writeFileSync(path.join(repo.dir, 'Dockerfile'), 'FROM scratch\n');
  const sha = repo.commit(MANIFEST, 'one service');
  const orgs = await client.call('GET', '/orgs');
  const project = await client.call('POST', '/projects', { org_id: orgs.body.data[0].id, name: 'work', slug: 'work', repo_url: repo.url });
  t.is(project.status, 201, JSON.stringify(project.body));
  const projectId = project.body.id as string;
  const manifest = await client.call('POST', `/projects/${projectId}/manifest`, { ref: sha });
  t.is(manifest.status, 200, JSON.stringify(manifest.body));
  const hash = manifest.body.manifest_hash as string;

  const build = await client.call('POST', `/projects/${projectId}/builds`, { git_sha: sha, manifest_hash: hash });
  t.is(build.status, 201, JSON.stringify(build.body));
  const deploy = await client.call('POST', `/projects/${projectId}/environments/staging/deploy`, {
    git_sha: sha,
    manifest_hash: hash,
    image_digests: { api: DIGEST },
    direct: true,
  });
  t.is(deploy.status, 202, JSON.stringify(deploy.body));

  // Both are under way in this process: the deployer and the builder have started and not ended.
  await until(async () => count(deployRecord, 'start') === 1 && count(buildRecord, 'start') === 1, 'the deploy and the build to start', 30_000).catch(
    async (err) => {
      const runs = await client.call('GET', `/builds/${build.body.id}/runs`);
      const d = await client.call('GET', `/projects/${projectId}/environments/staging/deploys/${deploy.body.id}`);
      throw new Error(`${(err as Error).message}\n${JSON.stringify([runs.body, d.body, lines(deployRecord), lines(buildRecord)])}\n${tail(server)}`);
    },
  );
  t.is(count(deployRecord, 'end'), 0);
  server.child.kill('SIGKILL');
  await server.exited;
  const restartedAt = Date.now();
  server = await startServerProcess(cluster.url, ENV);

  const deployPath = `/projects/${projectId}/environments/staging/deploys/${deploy.body.id}`;
  const ended = await until(
    async () => {
      const [d, b] = await Promise.all([client.call('GET', deployPath), client.call('GET', `/builds/${build.body.id}`)]);
      return d.body?.status !== 'running' && !['pending', 'building'].includes(b.body?.status) ? { deploy: d.body, build: b.body } : null;
    },
    'the deploy and the build to end on the new process',
    60_000,
  ).catch((err) => {
    throw new Error(`${(err as Error).message}\n${tail(server)}`);
  });
  const seconds = (Date.now() - restartedAt) / 1000;
  t.log(`both finished ${seconds.toFixed(1)} s after the new process started`);
  t.like(ended.deploy, { status: 'succeeded', error_message: null });
  t.is(ended.build.status, 'completed', JSON.stringify(ended.build));
  t.like((await client.call('GET', `/projects/${projectId}/environments/staging`)).body, { current_release: { image_digests: { api: DIGEST } } });
  const artifacts = (await client.call('GET', `/builds/${build.body.id}/artifacts`)).body.data;
  t.deepEqual(
    artifacts.map((a: any) => [a.service_name, a.digest]),
    [['api', DIGEST]],
  );

  // Side effects: the killed deploy ran once more (a new process), never more; the build likewise.
  const deployStarts = lines(deployRecord).filter((l) => l.startsWith('start'));
  t.is(deployStarts.length, 2, lines(deployRecord).join('\n'));
  t.not(deployStarts[0].split(' ')[1], deployStarts[1].split(' ')[1], 'the second deploy ran in another process');
  t.is(count(deployRecord, 'end'), 1, 'the killed process never finished its deploy');
  t.true(count(buildRecord, 'start') <= 2, lines(buildRecord).join('\n'));
  t.true(seconds < 30, `took ${seconds} s`);
  const runs = (await client.call('GET', `/builds/${build.body.id}/runs`)).body.data;
  t.is(runs.length, 1, 'the same run was finished, not a new one started');
});
