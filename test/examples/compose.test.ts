/**
 * examples/compose/docker-runtime.yml, the option that runs the compose runner's attempts on the
 * docker runtime in the CLI worker image, held against svc without an engine: the runner's
 * environment (the server image's ENV, the base file's, the option's, with compose's variable
 * substitution) makes a valid config whose runtime is docker with valid options; the workspace
 * folder is mounted at its own path, the engine's socket is there, and the network the runtime
 * names is the project's. test/docker/compose.docker.ts runs the base file on a real engine.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import YAML from 'yaml';
import dockerRuntime from '../../adapters/runtime/docker/index.ts';
import { loadConfig } from '../../core/config/load.ts';
import { ROOT } from '../support/serve-process.ts';

const DIR = path.join(ROOT, 'examples/compose');
type Doc = Record<string, any>;
const read = (file: string): Doc => YAML.parse(readFileSync(path.join(DIR, file), 'utf8'), { merge: true });

/** Compose's substitution: ${VAR}, ${VAR:-default}, ${VAR:?message} (an error when unset or empty). */
function substitute(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-?])([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
    const v = vars[name];
    if (v) return v;
    if (op === '?') throw new Error(`${name}: ${arg}`);
    return op === '-' ? (arg ?? '') : '';
  });
}

/** The ENV of the server image (examples/docker/Dockerfile, final stage). */
function imageEnv(): Record<string, string> {
  const text = readFileSync(path.join(ROOT, 'examples/docker/Dockerfile'), 'utf8');
  const block = /^ENV ((?:.*\\\n)*.*)$/m.exec(text.slice(text.lastIndexOf('\nFROM ')))![1];
  return Object.fromEntries([...block.matchAll(/([A-Z_]+)=(\S+)/g)].map((m) => [m[1], m[2]]));
}

const VARS = {
  SVC_SECRETS_MASTER_KEY: 'ab'.repeat(32),
  SVC_BOOTSTRAP_TOKEN: 'compose-bootstrap-token',
  SVC_DOCKER_GID: '998',
  SVC_WORKSPACES: '/var/lib/svc-workspaces',
};

function runner(vars: Record<string, string>) {
  const base = read('docker-compose.yml');
  const option = read('docker-runtime.yml');
  const env = { ...base.services.runner.environment, ...option.services.runner.environment };
  return {
    env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, substitute(String(v), vars)])) as Record<string, string>,
    volumes: [...(base.services.runner.volumes ?? []), ...option.services.runner.volumes].map((v: string) => substitute(v, vars)),
    groups: option.services.runner.group_add.map((g: string) => substitute(g, vars)),
    network: substitute(option.networks.default.name, vars),
  };
}

test('the runner with docker-runtime.yml: a valid config on the docker runtime in the CLI image, on the project network, workspaces at their host path', async (t) => {
  const r = runner(VARS);
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-compose-test-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const config = loadConfig({ env: { ...imageEnv(), ...r.env }, cwd: scratch });
  t.deepEqual(config.roles, ['orchestrator', 'worker']);
  t.is(config.adapters.runtime.use, 'docker');
  t.deepEqual(config.adapters.runtime.options, { image: 'svc-worker-clis:local', network: 'svc-compose' });
  t.is(config.worker.workspace_root, VARS.SVC_WORKSPACES);
  t.is(config.worker.run_as_uid, null, "attempts run as the runner's own uid 1000, the CLI image's user");
  const { error, value } = dockerRuntime.options.validate(config.adapters.runtime.options);
  t.falsy(error, error?.message);
  t.like(value, { image: 'svc-worker-clis:local', network: r.network });
  t.true(r.volumes.includes(`${VARS.SVC_WORKSPACES}:${VARS.SVC_WORKSPACES}`), 'the workspaces at the path the engine mounts them from');
  t.true(r.volumes.includes('/var/run/docker.sock:/var/run/docker.sock'));
  t.deepEqual(r.groups, ['998']);
  t.is(r.env.SVC_WORKER__API_URL, 'http://api-1:4701', 'attempts on the project network reach api-1 by name');
});

test('docker-runtime.yml names what it needs: the socket group and the workspace folder', (t) => {
  t.throws(() => runner({ ...VARS, SVC_DOCKER_GID: '' }), { message: /^SVC_DOCKER_GID: set SVC_DOCKER_GID to the group of the Docker socket/ });
  t.throws(() => runner({ ...VARS, SVC_WORKSPACES: '' }), { message: /^SVC_WORKSPACES: set SVC_WORKSPACES to a folder of the host owned by uid 1000/ });
  const other = runner({ ...VARS, SVC_WORKER_IMAGE: 'my-clis:1', SVC_COMPOSE_NETWORK: 'svc-two' });
  t.is(other.env.SVC_ADAPTERS__RUNTIME__OPTIONS__IMAGE, 'my-clis:1');
  t.is(other.env.SVC_ADAPTERS__RUNTIME__OPTIONS__NETWORK, 'svc-two');
  t.is(other.network, 'svc-two');
});
