/**
 * End to end: `svc env …` (node dist/cli/bin.js, a subprocess) against the real server with a
 * recording deployer and a fake release catalog: flows 3 and 4 of docs/environments.md from the CLI.
 */
import test from 'ava';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeployerToken } from '../../core/ports/environments.ts';
import { FakeReleases, RecordingDeployer } from '../fixtures/deployer.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { example, sha } from '../environments/helpers.ts';
import { cliUser, showRun, tempHome } from './helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let home = '';
let token = '';
let project = '';
const releases = new FakeReleases();
const deployer = new RecordingDeployer();
const { svc, ok, json } = cliUser(() => ({ home, url: server.url, token }));
const p = () => ['--project', project];

test.before(async () => {
  server = await startTestServer({
    configure: (c) => {
      c.registerInstance(DeployerToken, deployer);
      c.registerInstance(ReleasesToken, releases);
    },
  });
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  const org = (await json(['org', 'create', 'Envs E2E'])).id;
  project = (await json(['project', 'create', 'Web', '--org', org, '--slug', 'envweb'])).id;
  await writeFile(join(home, 'manifest.yaml'), example('staging.yaml'));
  await ok(['manifest', 'sync', ...p(), '--file', join(home, 'manifest.yaml')]);
  releases.add(project, { id: 'rel_1', tag: 'v1.1.0', git_sha: sha('a'), manifest_hash: null, image_digests: { web: 'sha256:' + 'a'.repeat(64) } });
  releases.add(project, { id: 'rel_2', tag: 'v1.2.0', git_sha: sha('b'), manifest_hash: null, image_digests: { web: 'sha256:' + 'b'.repeat(64) } });
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('list, show; deploy --release-tag --follow twice, history, rollback --follow', async (t) => {
  t.regex(await ok(['env', 'list', ...p()]), /^NAME +TYPE +KIND +HEALTH +SUSPENDED +RELEASE\nstaging +persistent +staging +unknown +no +-\n$/);
  const first = await svc(['env', 'deploy', 'staging', '--release-tag', 'v1.1.0', '--follow', ...p()]);
  t.is(first.code, 0, first.stderr);
  t.regex(first.stdout, /status: +succeeded/);
  t.regex(first.stdout, /release: +v1\.1\.0/);
  const second = await json(['env', 'deploy', 'staging', '--release-tag', 'v1.2.0', '--follow', ...p()]);
  t.like(second, { status: 'succeeded', release: { tag: 'v1.2.0' } });
  t.regex(
    await ok(['env', 'show', 'staging', ...p()]),
    /health: +healthy[\s\S]*release: +v1\.2\.0\nservices:\n +SERVICE +HEALTH +DETAIL\n +web +healthy +recorded/,
  );
  const back = await json(['env', 'rollback', 'staging', '--follow', ...p()]);
  t.like(back, { status: 'succeeded', release: { tag: 'v1.1.0' } });
  const history = await json(['env', 'history', 'staging', ...p()]);
  t.deepEqual(
    history.data.map((d: any) => d.release.tag),
    ['v1.1.0', 'v1.2.0', 'v1.1.0'],
  );
  t.regex(await ok(['env', 'history', 'staging', ...p()]), /^ID +STATUS +RELEASE +CREATED +ERROR\ndep_\S+ +succeeded +v1\.1\.0/);
});

test.serial(
  'deploy --direct -f prints the log as the deployer reports it, before the deploy ends; a failed one exits 1 saying why; env logs pages it',
  async (t) => {
    let release!: () => void;
    deployer.hold = new Promise((r) => (release = r));
    let seen = '';
    let heldWhile = '';
    const args = ['env', 'deploy', 'staging', '--release-tag', 'v1.2.0', '--direct', '-f', ...p()];
    const run = svc(args, (chunk) => {
      seen += chunk;
      if (!heldWhile && seen.includes('web: starting')) {
        heldWhile = seen;
        release();
      }
    });
    const r = await run;
    deployer.hold = null;
    t.is(r.code, 0, showRun(args, r));
    t.regex(
      heldWhile,
      /^svc: deploying release v1\.2\.0 \(rel_2, git b{12}\) to environment staging on the recording deployer: web sha256:b{64}\nsvc: release v1\.1\.0 serves now\nweb: starting sha256:b{64}\n$/,
    );
    t.false(heldWhile.includes('deploy succeeded'), 'the lines came while the deploy was still running');
    t.regex(
      r.stdout,
      /web: starting sha256:b{64}\nevery service healthy\nsvc: deploy succeeded: release v1\.2\.0 serves environment staging, health healthy \(web: recorded\)\n/,
    );
    t.regex(r.stdout, /status: +succeeded/);
    t.regex(r.stderr, /^svc: deploy dep_\w+ of v1\.2\.0 running/);

    deployer.failNext = 'health check failing';
    const failed = await svc(['env', 'rollback', 'staging', '-f', ...p()]);
    t.is(failed.code, 1, failed.stdout);
    t.regex(failed.stdout, /web: not healthy: health check failing\nsvc: deploy failed: health check failing \(release v1\.2\.0 keeps serving\)\n/);
    const id = (/^id: +(dep_\w+)$/m.exec(failed.stdout) ?? [])[1];
    const logs = await svc(['env', 'logs', 'staging', id, ...p()]);
    t.is(logs.code, 0, logs.stderr);
    t.is(logs.stdout.split('\n').at(-2), 'svc: deploy failed: health check failing (release v1.2.0 keeps serving)');
    const followed = await svc(['env', 'logs', 'staging', id, '-f', ...p()]);
    t.is(followed.code, 1, 'the deploy it follows failed');
    t.is(followed.stdout, logs.stdout);
    t.regex(followed.stderr, /svc: deploy failed: health check failing/);
    const lines = (await svc(['env', 'logs', 'staging', id, '--json', ...p()])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    t.like(lines.at(-1), { stream: 'system', line: 'deploy failed: health check failing (release v1.2.0 keeps serving)' });
  },
);

test.serial('suspend refuses a deploy with the reason; resume; health; bad input is a usage error or the API message', async (t) => {
  t.like(await json(['env', 'suspend', 'staging', '--reason', 'night', ...p()]), { suspended: true, suspended_reason: 'night' });
  const refused = await svc(['env', 'deploy', 'staging', '--release-tag', 'v1.2.0', ...p()]);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /environment staging is suspended: night/);
  t.like(await json(['env', 'resume', 'staging', ...p()]), { suspended: false, health: 'healthy' });
  t.like(await json(['env', 'health', 'staging', ...p()]), { health: 'healthy' });
  const none = await svc(['env', 'deploy', 'staging', ...p()]);
  t.is(none.code, 1);
  t.regex(none.stderr, /git_sha.*manifest_hash.*release_tag/);
  const unknown = await svc(['env', 'show', 'nope', ...p()]);
  t.regex(unknown.stderr, /environment nope not found/);
});

test.serial('create (an ensure: again is the same one, other flags exit 1 naming them) and delete a temporary environment', async (t) => {
  const made = await json(['env', 'create', 'pr-5', '--kind', 'preview', ...p()]);
  t.like(made, { name: 'pr-5', type: 'temporary', kind: 'preview' });
  t.is((await json(['env', 'create', 'pr-5', '--kind', 'preview', ...p()])).id, made.id);
  const other = await svc(['env', 'create', 'pr-5', '--kind', 'canary', ...p()]);
  t.is(other.code, 1);
  t.regex(other.stderr, /environment pr-5 exists with other kind/);
  t.is((await ok(['env', 'delete', 'pr-5', ...p()])).trim(), 'environment pr-5 deleted');
  t.is((await svc(['env', 'show', 'pr-5', ...p()])).code, 1);
});
