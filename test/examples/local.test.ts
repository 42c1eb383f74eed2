import test from 'ava';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { freePort } from '../../core/db/embedded.ts';
import { createTestDatabase } from '../support/database.ts';
import { bootstrapOver, projectOver, runScriptOver } from '../support/http-api.ts';
import { ROOT, serveProcess, waitForHealth, type ServeProcess } from '../support/serve-process.ts';

/**
 * examples/local/README.md, run as written: its two `svc serve` lines (on a test database and free
 * ports instead of svc's, the only substitutions), and its psql line checked against svc.yaml.
 */
const README = readFileSync(path.join(ROOT, 'examples/local/README.md'), 'utf8');
const SETTINGS = YAML.parse(readFileSync(path.join(ROOT, 'examples/local/svc.yaml'), 'utf8'));
const serveLines = README.split('\n')
  .map((l) => l.trim())
  .filter((l) => /^SVC_CONFIG=\S+ .*\bserve\b/.test(l));

/** `A=1 B=2 prog args…` as its environment and argv (the README's lines need no more of a shell). */
function parseLine(line: string): { env: Record<string, string>; argv: string[] } {
  const words = line.split(/\s+/);
  const env: Record<string, string> = {};
  while (/^[A-Z_]+=/.test(words[0])) {
    const [name, ...value] = words.shift()!.split('=');
    env[name] = value.join('=');
  }
  return { env, argv: words };
}

const portOf = (argv: string[]) => (argv.includes('--port') ? Number(argv[argv.indexOf('--port') + 1]) : SETTINGS.server.port);

test('the README creates the role, password and database svc.yaml connects with', (t) => {
  const url = new URL(SETTINGS.database.url);
  const psql = README.split('\n').find((l) => l.trim().startsWith('psql '));
  t.truthy(psql);
  t.true(psql!.includes(`CREATE ROLE ${url.username} LOGIN PASSWORD '${url.password}'`), psql);
  t.true(psql!.includes(`CREATE DATABASE ${url.pathname.slice(1)} OWNER ${url.username}`), psql);
});

test('the two documented processes use the config file, run the roles apart, and take different ports', (t) => {
  t.is(serveLines.length, 2, serveLines.join('\n'));
  const [api, runner] = serveLines.map(parseLine);
  for (const { env } of [api, runner]) t.is(env.SVC_CONFIG, 'examples/local/svc.yaml');
  t.is(api.argv[api.argv.indexOf('--roles') + 1], 'api');
  t.is(runner.argv[runner.argv.indexOf('--roles') + 1], 'orchestrator,worker');
  t.not(portOf(api.argv), portOf(runner.argv));
  t.is(new URL(SETTINGS.server.public_url).port, String(portOf(api.argv)), 'jobs are pointed at the api process');
});

test.serial('the two documented processes come up, both answer /health, and a job runs end to end', async (t) => {
  t.timeout(240_000);
  const database = await createTestDatabase();
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-example-local-'));
  chmodSync(scratch, 0o755); // as root, attempts run as uid 1000, which must reach the workspaces
  const procs: ServeProcess[] = [];
  try {
    const ports = [await freePort(), await freePort()];
    const apiUrl = `http://127.0.0.1:${ports[0]}`;
    const common = { DATABASE_URL: database.url, SVC_DATA_DIR: path.join(scratch, 'data'), SVC_SECRETS_MASTER_KEY: 'ab'.repeat(32), SVC_PUBLIC_URL: apiUrl };
    for (const [i, line] of serveLines.entries()) {
      const { env, argv } = parseLine(line);
      const ownPort: Record<string, string> = argv.includes('--port') ? {} : { PORT: String(ports[i]) };
      if (argv.includes('--port')) argv[argv.indexOf('--port') + 1] = String(ports[i]);
      t.is(argv[0], 'node');
      procs.push(serveProcess({ ...common, ...env, ...ownPort }, { command: argv.slice(1) }));
    }
    const [apiHealth, runnerHealth] = await Promise.all(procs.map((p, i) => waitForHealth(`http://127.0.0.1:${ports[i]}`, p)));
    t.deepEqual(apiHealth.roles, ['api']);
    t.deepEqual(runnerHealth.roles, ['orchestrator', 'worker']);

    const bare = path.join(scratch, 'origin.git');
    execFileSync('git', ['init', '--quiet', '--bare', '-b', 'main', bare]);
    const work = path.join(scratch, 'work');
    execFileSync('git', ['clone', '--quiet', bare, work], { stdio: 'ignore' }); // empty so far: git says so on stderr
    execFileSync('git', ['-C', work, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '--allow-empty', '-m', 'initial']);
    execFileSync('git', ['-C', work, 'push', '--quiet', 'origin', 'HEAD:main']);
    const token = await bootstrapOver(apiUrl);
    const projectId = await projectOver(apiUrl, token, `file://${bare}`);
    const { job, stdout } = await runScriptOver(apiUrl, token, projectId, 'echo "ran with api at $SVC_API_URL"');
    t.is(job.phase, 'done', procs.map((p) => p.output()).join('\n'));
    t.deepEqual(stdout, [`ran with api at ${apiUrl}`]);

    for (const p of procs) p.child.kill('SIGTERM');
    t.deepEqual(await Promise.all(procs.map((p) => p.exited)), [0, 0]);
  } finally {
    for (const p of procs) p.child.kill('SIGKILL');
    await database.drop();
    rmSync(scratch, { recursive: true, force: true });
  }
});
