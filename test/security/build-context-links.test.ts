/**
 * Issue 28, item 4: a repository that links its build context (or its Dockerfile, or its
 * .dockerignore) out of the checkout must not get host files into an image. Attacked as a tenant
 * would: a project on a real git repository holding the links, built over HTTP by the real buildx
 * builder, whose Docker CLI here is a stand-in that records what it is asked (no engine needed: the
 * refusal comes before Docker is called). The host folder the links aim at holds a secret file.
 */
import test from 'ava';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { tempRepo } from '../manifest/helpers.ts';
import { settled } from '../builds/helpers.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'svc-security-build-'));
/** A host folder no build may read: the links in the repository point here. */
const host = path.join(scratch, 'host-secrets');
/** Every call of the stand-in Docker CLI, one line of arguments each. */
const calls = path.join(scratch, 'docker-calls.log');

let s: TestServer;
let admin: ReturnType<typeof as>;
let projectId: string;
let sha: string;
let manifestHash: string;

const MANIFEST = `
registry: none
services:
  ctxlink: { build: { context: ctx } }
  nested: { build: { context: hostlink/app } }
  climb: { build: { context: up } }
  dangling: { build: { context: gone } }
  dflink: { build: { context: app, dockerfile: Dockerfile.host } }
  ignore: { build: { context: ignored } }
  dotdot: { build: { context: ../.. } }
  fine: { build: { context: current } }
`;

test.before(async () => {
  mkdirSync(host);
  writeFileSync(path.join(host, 'secret.txt'), 'the master key\n');
  writeFileSync(path.join(host, 'Dockerfile'), 'FROM scratch\nCOPY secret.txt /\n');
  // The stand-in engine: answers `version`, records every other call, and builds nothing for real.
  const docker = path.join(scratch, 'docker');
  writeFileSync(
    docker,
    `#!/bin/sh
if [ "$1" = version ]; then echo 20.10.24; exit 0; fi
echo "$*" >> '${calls}'
if [ "$1" = image ]; then echo '{"Id":"sha256:${'0'.repeat(64)}","Size":1,"Os":"linux","Architecture":"amd64"}'; fi
exit 0
`,
  );
  chmodSync(docker, 0o755);

  const repo = tempRepo();
  const file = (rel: string, content: string) => {
    mkdirSync(path.dirname(path.join(repo.dir, rel)), { recursive: true });
    writeFileSync(path.join(repo.dir, rel), content);
  };
  file('app/Dockerfile', 'FROM svc-test-base:2\nCOPY . /srv/app\n');
  symlinkSync(host, path.join(repo.dir, 'ctx')); // the context itself, absolute
  symlinkSync(host, path.join(repo.dir, 'hostlink')); // a folder on the way to the context
  symlinkSync('../../../../../../../../..', path.join(repo.dir, 'up')); // relative, climbing out
  symlinkSync(path.join(host, 'not-there'), path.join(repo.dir, 'gone')); // dangling, outside
  symlinkSync(path.join(host, 'Dockerfile'), path.join(repo.dir, 'app', 'Dockerfile.host')); // the Dockerfile
  file('ignored/Dockerfile', 'FROM svc-test-base:2\n');
  symlinkSync(path.join(host, 'secret.txt'), path.join(repo.dir, 'ignored', '.dockerignore')); // read by the CLI
  // Links that stay inside the repository are fine; a link inside the context is sent as a link (never followed).
  symlinkSync('app', path.join(repo.dir, 'current'));
  symlinkSync(host, path.join(repo.dir, 'app', 'inner-link'));
  sha = repo.commit(MANIFEST, 'links out of the checkout');

  s = await startTestServer({
    overrides: {
      roles: ['api', 'worker'],
      builds: { poll_ms: 50, log_flush_ms: 0, backend: 'buildx', builders: { buildx: { docker_bin: docker } } },
    },
  });
  admin = as(s.server, (await bootstrapAdmin(s.server)).token);
  const orgId = (await admin.post('/orgs', { name: 'Tenant' })).body.id;
  const project = await admin.post('/projects', { org_id: orgId, name: 'Links', slug: 'links', repo_url: repo.url });
  if (project.statusCode !== 201) throw new Error(JSON.stringify(project.body));
  projectId = project.body.id;
  const synced = await admin.post(`/projects/${projectId}/manifest`, { ref: sha });
  if (synced.statusCode !== 200) throw new Error(JSON.stringify(synced.body));
  manifestHash = synced.body.manifest_hash;
});

test.after.always(async () => {
  await s?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** `text` matched literally in a RegExp. */
const lit = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const dockerCalls = () => (existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : []);

async function build(service: string): Promise<any> {
  const created = await admin.post(`/projects/${projectId}/builds`, { git_sha: sha, manifest_hash: manifestHash, services: [service] });
  if (created.statusCode !== 201 && created.statusCode !== 200) throw new Error(JSON.stringify(created.body));
  return settled(admin, created.body.id);
}

const refusals: [string, RegExp][] = [
  [
    'ctxlink',
    new RegExp(`^services\\.ctxlink\\.build\\.context 'ctx' goes through the symbolic link ctx -> ${lit(host)}, which leaves the repository: refused$`),
  ],
  [
    'nested',
    new RegExp(
      `^services\\.nested\\.build\\.context 'hostlink/app' goes through the symbolic link hostlink -> ${lit(host)}, which leaves the repository: refused$`,
    ),
  ],
  ['climb', /^services\.climb\.build\.context 'up' goes through the symbolic link up -> (\.\.\/)+\.\., which leaves the repository: refused$/],
  [
    'dangling',
    new RegExp(
      `^services\\.dangling\\.build\\.context 'gone' goes through the symbolic link gone -> ${lit(host)}/not-there, which leaves the repository: refused$`,
    ),
  ],
  [
    'dflink',
    new RegExp(
      `^services\\.dflink\\.build\\.dockerfile 'Dockerfile\\.host' goes through the symbolic link app/Dockerfile\\.host -> ${lit(host)}/Dockerfile, which leaves the repository: refused$`,
    ),
  ],
  [
    'ignore',
    new RegExp(
      `^services\\.ignore\\.build\\.context \\(its \\.dockerignore\\) 'ignored/\\.dockerignore' goes through the symbolic link ignored/\\.dockerignore -> ${lit(host)}/secret\\.txt, which leaves the repository: refused$`,
    ),
  ],
  ['dotdot', /^services\.dotdot\.build\.context '\.\.\/\.\.' leaves the repository: refused$/],
];

for (const [service, message] of refusals) {
  test.serial(`a build whose ${service} path leaves the checkout fails before Docker is called, naming the path`, async (t) => {
    const before = dockerCalls().length;
    const done = await build(service);
    t.like(done, { status: 'failed', latest_run: { status: 'failed', error_class: 'build_error' } });
    t.regex(done.latest_run.error_message, message);
    t.deepEqual(dockerCalls().slice(before), [], 'Docker was never asked to build (nor anything else)');
    t.is(readFileSync(path.join(host, 'secret.txt'), 'utf8'), 'the master key\n');
  });
}

test.serial('links that stay in the repository still build; Docker gets the real paths, and a link inside the context is left to it', async (t) => {
  const before = dockerCalls().length;
  const done = await build('fine');
  t.is(done.status, 'completed', JSON.stringify(done.latest_run));
  const built = dockerCalls()
    .slice(before)
    .find((line) => line.startsWith('build '));
  t.truthy(built);
  const args = built!.split(' ');
  const context = args.at(-1)!;
  t.true(context.endsWith(`${path.sep}repo${path.sep}app`), `the context is the real folder, not the link: ${built}`);
  t.is(args[args.indexOf('-f') + 1], path.join(context, 'Dockerfile'));
});
