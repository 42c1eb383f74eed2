import test from 'ava';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { freePort } from '../../core/db/embedded.ts';
import { bootstrapOver, httpApi, projectOver, runScriptOver } from '../support/http-api.ts';
import { docker } from './helpers.ts';
import { POSTGRES_IMAGE, SERVER_IMAGE } from './images.ts';

/**
 * examples/compose/docker-compose.yml with Debian's docker-compose: PostgreSQL, two api replicas and
 * the orchestrator/worker come up, and a job created on one replica runs on the worker and reads as
 * done on the other. The only addition is a test repository mounted into the worker's container.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const COMPOSE_FILE = path.join(ROOT, 'examples/compose/docker-compose.yml');

test('docker-compose up: PostgreSQL, api × 2 and the orchestrator/worker run a job end to end', async (t) => {
  t.timeout(480_000); // with the vfs storage driver, each container copies the whole image first
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-compose-'));
  chmodSync(scratch, 0o755);
  const project = `svccompose${process.pid}`;
  const ports = [await freePort(), await freePort()];
  const bootstrapToken = 'compose-bootstrap-token';
  const env = {
    ...process.env,
    SVC_IMAGE: SERVER_IMAGE,
    POSTGRES_IMAGE,
    SVC_SECRETS_MASTER_KEY: 'ef'.repeat(32),
    SVC_BOOTSTRAP_TOKEN: bootstrapToken,
    SVC_API_PORT_1: String(ports[0]),
    SVC_API_PORT_2: String(ports[1]),
    SVC_LOG_LEVEL: 'warn',
  };
  // The project's repository, on the host, mounted where the worker's container clones it from.
  const bare = path.join(scratch, 'demo.git');
  execFileSync('git', ['init', '--quiet', '--bare', '-b', 'main', bare]);
  const work = path.join(scratch, 'work');
  execFileSync('git', ['clone', '--quiet', bare, work], { stdio: 'ignore' });
  execFileSync('git', ['-C', work, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '--allow-empty', '-m', 'initial']);
  execFileSync('git', ['-C', work, 'push', '--quiet', 'origin', 'HEAD:main']);
  execFileSync('chown', ['-R', '1000:1000', bare]);
  const override = path.join(scratch, 'test-override.yml');
  // The image runs with NODE_ENV=production, where file:// repositories need allowing under a root (docs/security.md).
  const fileUrls = { SVC_WORKER__GIT__ALLOW_FILE_URLS: 'true', SVC_WORKER__GIT__FILE_ROOTS: '/repos' };
  writeFileSync(
    override,
    YAML.stringify({
      services: {
        'api-1': { environment: fileUrls },
        'api-2': { environment: fileUrls },
        runner: { environment: fileUrls, volumes: [`${bare}:/repos/demo.git`] },
      },
    }),
  );
  const compose = (...args: string[]) =>
    spawnSync('docker-compose', ['-p', project, '-f', COMPOSE_FILE, '-f', override, ...args], { env, encoding: 'utf8', timeout: 300_000 });
  try {
    const started = Date.now();
    const up = compose('up', '-d');
    t.is(up.status, 0, up.stderr);
    t.log(`docker-compose up -d: ${Math.round((Date.now() - started) / 1000)} s`);
    const apis = ports.map((p) => `http://127.0.0.1:${p}`);
    for (const api of apis) {
      let health: { status: number; body: any } = { status: 0, body: null };
      for (const deadline = Date.now() + 120_000; health.status !== 200 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 1000))) {
        health = await httpApi(api)
          .get('/health')
          .catch(() => ({ status: 0, body: null }));
      }
      t.is(health.status, 200, `${api}: ${compose('logs', '--tail', '30').stdout}`);
      t.deepEqual(health.body.roles, ['api']);
    }
    // The orchestrator/worker publishes no port: its image's HEALTHCHECK (GET /health) says it is up.
    const runnerId = compose('ps', '-q', 'runner').stdout.trim();
    let runner = (await docker.getContainer(runnerId).inspect()).State;
    for (const deadline = Date.now() + 90_000; runner.Health?.Status !== 'healthy' && Date.now() < deadline; await new Promise((r) => setTimeout(r, 1000))) {
      runner = (await docker.getContainer(runnerId).inspect()).State;
    }
    t.is(runner.Health?.Status, 'healthy', JSON.stringify(runner.Health?.Log?.slice(-1)));

    t.log(`all healthy after ${Math.round((Date.now() - started) / 1000)} s`);
    const token = await bootstrapOver(apis[0], bootstrapToken);
    const projectId = await projectOver(apis[0], token, 'file:///repos/demo.git');
    const { job, stdout } = await runScriptOver(apis[0], token, projectId, 'echo "uid $(id -u) in $(pwd)"; echo "api $SVC_API_URL"');
    t.is(job.phase, 'done', compose('logs', '--tail', '40', 'runner').stdout);
    t.true(stdout[0].startsWith('uid 1000 in /var/lib/svc/workspaces/'), stdout[0]);
    t.is(stdout[1], 'api http://api-1:4701');
    const seen = await httpApi(apis[1], token).get(`/jobs/${job.id}`);
    t.is(seen.body.phase, 'done', 'the other api replica reads the same job');
  } finally {
    compose('down', '-v', '--timeout', '20');
    rmSync(scratch, { recursive: true, force: true });
  }
});
