/**
 * Issue 28, item 6: under NODE_ENV=production a project may not point at a file:// repository (a
 * project admin would read any git repository on the server's disk), unless the operator allows
 * file URLs under named roots (worker.git.allow_file_urls, worker.git.file_roots). Attacked as a
 * tenant would, over HTTP: creating and changing projects, and using a project made before the
 * server ran in production (manifest sync, builds, the worker's checkout refuse it at use).
 */
import test from 'ava';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { adminWithOrg, as, startTestServer, type TestServer, type TestServerOptions } from '../support/server.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { tempRepo } from '../manifest/helpers.ts';
import { settled } from '../builds/helpers.ts';
import { BuilderRegistry, BuilderRegistryToken, type BuildRequest, type Builder } from '../../core/ports/builder.ts';
import { checkRepoUrl, GitAccessError, type RepoUrlPolicy } from '../../core/git-access.ts';
import { loadConfig } from '../../core/config/load.ts';

const BOOTSTRAP = 'bootstrap-token-of-the-security-test';
const MANIFEST = 'registry: none\nservices:\n  api: { build: { context: . } }\n';
const scratch = mkdtempSync(path.join(tmpdir(), 'svc-security-file-'));
/** A folder the operator allows repositories in, and one holding what a tenant must not read. */
const allowed = path.join(scratch, 'allowed');
const hostRepos = path.join(scratch, 'host');
let secret: ReturnType<typeof tempRepo>;
let mine: ReturnType<typeof tempRepo>;
let running: TestServer[] = [];

test.before(() => {
  mkdirSync(allowed);
  mkdirSync(hostRepos);
  secret = tempRepo();
  secret.commit('registry: none\n', 'another tenant');
  mine = tempRepo();
  mine.commit(null, 'mine');
  symlinkSync(secret.dir, path.join(allowed, 'looks-allowed')); // a link under the allowed root to the secret repository
});
test.after.always(async () => {
  for (const s of running) await s.stop();
  await shared?.drop();
  for (const dir of [scratch, secret.dir, mine.dir]) rmSync(dir, { recursive: true, force: true });
});

/** A recording builder: no engine; the runner must refuse before it is asked. */
class Recording implements Builder {
  readonly name = 'buildx';
  requests: BuildRequest[] = [];
  async available() {
    return { ok: true } as const;
  }
  async build(request: BuildRequest) {
    this.requests.push(request);
    return [];
  }
}

async function server(env: Record<string, string>, opts: TestServerOptions & { builder?: Recording } = {}) {
  const s = await startTestServer({
    ...opts,
    env: { SVC_BOOTSTRAP_TOKEN: BOOTSTRAP, ...env },
    overrides: { roles: ['api', 'worker'], builds: { poll_ms: 50, log_flush_ms: 0 }, ...(opts.overrides ?? {}) },
    configure: (container) => {
      const registry = new BuilderRegistry();
      registry.add(opts.builder ?? new Recording());
      container.registerInstance(BuilderRegistryToken, registry);
    },
  });
  running.push(s);
  return s;
}

const admin = (s: TestServer) => adminWithOrg(s.server, BOOTSTRAP);

let slugs = 0;
const newProject = (api: ReturnType<typeof as>, orgId: string, repoUrl: string) =>
  api.post('/projects', { org_id: orgId, name: `P${++slugs}`, slug: `fil${slugs}${process.pid % 100}`, repo_url: repoUrl });
const projectCount = async (api: ReturnType<typeof as>) => (await api.get('/projects?limit=1&include_deleted=true')).body.pagination.total as number;

test.serial('production: a file:// repo_url is 422 naming repo_url on create and on change, and nothing is written', async (t) => {
  const s = await server({ NODE_ENV: 'production' });
  const { api, orgId } = await admin(s);
  const before = await projectCount(api);
  for (const url of [`file://${secret.dir}`, 'file:///etc']) {
    const res = await newProject(api, orgId, url);
    t.is(res.statusCode, 422, JSON.stringify(res.body));
    t.regex(
      res.body.message,
      /^repo_url: file:\/\/\/.* is refused: file:\/\/ repositories are for local development only and this server runs with NODE_ENV=production; /,
    );
  }
  t.is(await projectCount(api), before, 'no project was made');
  const https = await newProject(api, orgId, 'https://git.example.com/tenant/app.git');
  t.is(https.statusCode, 201);
  const changed = await api.patch(`/projects/${https.body.id}`, { repo_url: `file://${secret.dir}` });
  t.is(changed.statusCode, 422);
  t.regex(changed.body.message, /^repo_url: file:\/\/.* is refused/);
  t.is((await api.get(`/projects/${https.body.id}`)).body.repo_url, 'https://git.example.com/tenant/app.git');
  const ensured = await api.post('/projects/ensure', { org_id: orgId, name: 'Ensured', repo_url: `file://${secret.dir}` });
  t.is(ensured.statusCode, 422);
  await s.stop();
  running = running.filter((r) => r !== s);
});

test.serial('production with allow_file_urls: only repositories whose real path is under file_roots', async (t) => {
  const s = await server({ NODE_ENV: 'production', SVC_WORKER__GIT__ALLOW_FILE_URLS: 'true', SVC_WORKER__GIT__FILE_ROOTS: `${allowed},/nonexistent-root` });
  const { api, orgId } = await admin(s);
  mkdirSync(path.join(allowed, 'mine.git'), { recursive: true });
  t.is((await newProject(api, orgId, `file://${allowed}/mine.git`)).statusCode, 201);
  t.is((await newProject(api, orgId, `file://${allowed}/not-made-yet.git`)).statusCode, 201, 'a repository to be made under a root');
  const refused: [string, RegExp][] = [
    [`file://${secret.dir}`, /is not under worker\.git\.file_roots/],
    [`file://${allowed}/../host`, /is not under worker\.git\.file_roots/],
    [`file://${allowed}/looks-allowed`, /its real path \(links resolved\) is not under worker\.git\.file_roots/],
    [`file://${allowed}/looks-allowed/.git`, /is not under worker\.git\.file_roots/],
    [`file://${allowed}/%2e%2e/host`, /percent-encoded/],
  ];
  for (const [url, message] of refused) {
    const res = await newProject(api, orgId, url);
    t.is(res.statusCode, 422, url);
    t.regex(res.body.message, message, url);
  }
  await s.stop();
  running = running.filter((r) => r !== s);
});

/** The project made in development, used by a production server on the same database. */
let shared: TestDatabase | null = null;
let before: { prod: TestServer; api: ReturnType<typeof as>; projectId: string; builder: Recording } | null = null;

test.serial('a file:// project made before the server ran in production is refused where it is used: manifest sync and builds', async (t) => {
  const database = await createTestDatabase();
  shared = database;
  // In development the project and its manifest are made as today.
  const dev = await server({ NODE_ENV: 'development' }, { database });
  const { api: devApi, orgId, token } = await admin(dev);
  const project = await newProject(devApi, orgId, mine.url);
  t.is(project.statusCode, 201);
  const projectId = project.body.id;
  const sha = mine.commit(MANIFEST, 'a service to build');
  const synced = await devApi.post(`/projects/${projectId}/manifest`, { ref: sha });
  t.is(synced.statusCode, 200, JSON.stringify(synced.body));
  await dev.stop();
  running = running.filter((r) => r !== dev);

  // The same server in production, on the same database (the admin's token verifies with the same keys).
  const builder = new Recording();
  const prod = await server({ NODE_ENV: 'production' }, { database, builder, overrides: { roles: ['api', 'orchestrator', 'worker'] } });
  const api = as(prod.server, token);
  before = { prod, api, projectId, builder };
  const resync = await api.post(`/projects/${projectId}/manifest`, { ref: sha });
  t.is(resync.statusCode, 422);
  t.regex(resync.body.message, /file:\/\/.* is refused: file:\/\/ repositories are for local development only and this server runs with NODE_ENV=production/);

  const created = await api.post(`/projects/${projectId}/builds`, { git_sha: sha, manifest_hash: synced.body.manifest_hash });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const done = await settled(api, created.body.id);
  t.like(done, { status: 'failed', latest_run: { error_class: 'clone_error' } });
  t.regex(done.latest_run.error_message, /^file:\/\/.* is refused: file:\/\/ repositories are for local development only/);
  t.is(builder.requests.length, 0, 'the builder was never asked to clone it');
});

test.serial('the worker refuses to clone a file:// project in production, before anything of the job runs', async (t) => {
  if (!before) return t.fail('the previous test made no project');
  const { api, projectId } = before;
  const res = await api.post(`/projects/${projectId}/jobs`, {
    description: 'read it',
    hints: { max_attempts: 1, step: { kind: 'script', script: { run: 'git log -1 --format=%H' } } },
  });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  let attempt: any = null;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline && !attempt?.ended_at; await new Promise((r) => setTimeout(r, 100))) {
    attempt = (await api.get(`/projects/${projectId}/jobs/${res.body.id}/attempts`)).body.data[0];
  }
  t.log(attempt?.status, attempt?.error, attempt?.git?.resolved_sha);
  t.regex(String(attempt?.error), /^file:\/\/.* is refused: file:\/\/ repositories are for local development only/);
  t.falsy(attempt?.git?.resolved_sha, 'nothing was cloned');
});

test('checkRepoUrl: development allows any path unless roots are named; false refuses everywhere; env overrides reach the config', (t) => {
  const policy = (p: Partial<RepoUrlPolicy>): RepoUrlPolicy => ({ env: 'development', allowFileUrls: null, fileRoots: [], ...p });
  t.notThrows(() => checkRepoUrl(`file://${secret.dir}`, policy({})));
  t.notThrows(() => checkRepoUrl('https://git.example.com/a.git', policy({ env: 'production', allowFileUrls: false })));
  t.throws(() => checkRepoUrl(`file://${secret.dir}`, policy({ allowFileUrls: false })), {
    instanceOf: GitAccessError,
    message: /worker\.git\.allow_file_urls is false/,
  });
  t.throws(() => checkRepoUrl(`file://${secret.dir}`, policy({ fileRoots: [allowed] })), {
    instanceOf: GitAccessError,
    message: /not under worker\.git\.file_roots/,
  });
  t.throws(() => checkRepoUrl(secret.dir, policy({ env: 'production' })), { instanceOf: GitAccessError, message: /NODE_ENV=production/ });
  t.throws(() => checkRepoUrl(`file://${allowed}/x`, policy({ env: 'production', allowFileUrls: true })), {
    instanceOf: GitAccessError,
    message: /worker\.git\.file_roots names no directory/,
  });
  const config = loadConfig({
    env: { NODE_ENV: 'production', SVC_WORKER__GIT__ALLOW_FILE_URLS: 'true', SVC_WORKER__GIT__FILE_ROOTS: '/srv/git,/data/repos' },
    overrides: { secrets: { master_key: 'a'.repeat(64) } },
  });
  t.like(config.worker.git, { allow_file_urls: true, file_roots: ['/srv/git', '/data/repos'] });
  t.is(loadConfig({ env: {}, overrides: {} }).worker.git.allow_file_urls, null);
});
