/**
 * Issue 29, item 4: one outbound address policy (core/http/address-guard.ts, config `outbound`) for
 * every URL svc connects to on a tenant's behalf: webhooks, org inference targets, repo_url hosts
 * (clone, fetch, push) and registry hosts. Link-local and metadata addresses are always refused;
 * loopback and private ranges are refused in production unless the operator allows them. Numeric
 * encodings are normalized first. Attacked as a tenant would, over HTTP.
 */
import test from 'ava';
import { adminWithOrg, as, startTestServer, type TestServer, type TestServerOptions } from '../support/server.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { AddressGuard, guardOptions, normalizeHost, UrlRefused } from '../../core/http/address-guard.ts';
import { pinRepoHost, repoEndpoint } from '../../core/git-addresses.ts';
import { loadConfig } from '../../core/config/load.ts';

const BOOTSTRAP = 'bootstrap-token-of-the-address-test';
let running: TestServer[] = [];
let shared: TestDatabase | null = null;

test.after.always(async () => {
  for (const s of running) await s.stop();
  await shared?.drop();
});

async function server(env: Record<string, string>, opts: TestServerOptions = {}) {
  const s = await startTestServer({ ...opts, env: { SVC_BOOTSTRAP_TOKEN: BOOTSTRAP, ...env } });
  running.push(s);
  return s;
}
async function stop(s: TestServer) {
  await s.stop();
  running = running.filter((r) => r !== s);
}

const admin = (s: TestServer) => adminWithOrg(s.server, BOOTSTRAP);

let n = 0;
const newProject = (api: ReturnType<typeof as>, orgId: string, repoUrl: string | null) =>
  api.post('/projects', { org_id: orgId, name: `A${++n}`, slug: `adr${n}${process.pid % 100}`, ...(repoUrl === null ? {} : { repo_url: repoUrl }) });

const PRIVATE_HOOKS = ['http://0x0a000001/', 'http://167772161/', 'http://012.0.0.1/', 'http://10.1/', 'http://[::ffff:10.0.0.1]/', 'http://[64:ff9b::a00:1]/'];
const METADATA = ['http://169.254.169.254/', 'http://0xa9fea9fe/', 'http://[::ffff:169.254.169.254]/', 'http://2852039166/'];

test.serial('production: webhooks to private (in any encoding) and metadata addresses are 422 naming url', async (t) => {
  const s = await server({ NODE_ENV: 'production' });
  const { api, orgId } = await admin(s);
  for (const url of [...PRIVATE_HOOKS, ...METADATA]) {
    const res = await api.post(`/orgs/${orgId}/webhooks`, { url, secret: 'a-subscription-secret-0123456789', events: ['*'] });
    t.is(res.statusCode, 422, `${url}: ${JSON.stringify(res.body)}`);
    t.regex(res.body.message, /^url refused: .* is (a private address|a link-local|.*carried in)/, url);
  }
  t.is((await api.get(`/orgs/${orgId}/webhooks`)).body.data.length, 0, 'nothing was made');
  await stop(s);
});

test.serial('production: an org inference target on a private or loopback address is 422 naming base_url', async (t) => {
  const s = await server({ NODE_ENV: 'production' });
  const { api, orgId } = await admin(s);
  for (const base of ['http://10.0.0.7/v1', 'http://0x0a000007/v1', 'http://[fd00::7]/v1', 'http://127.0.0.1:9/v1', 'http://localhost:9/v1']) {
    const res = await api.post('/inference/targets', { org_id: orgId, name: `t${++n}`, kind: 'openai', base_url: base });
    t.is(res.statusCode, 422, `${base}: ${JSON.stringify(res.body)}`);
    t.regex(res.body.message, /^base_url is refused: /, base);
  }
  await stop(s);
});

test.serial('repo_url on the metadata address is refused everywhere, private hosts in production unless the operator allows them', async (t) => {
  const dev = await server({ NODE_ENV: 'development' });
  const d = await admin(dev);
  for (const url of [
    'https://169.254.169.254/x.git',
    'https://0xa9fea9fe/x.git',
    'ssh://git@169.254.169.254/x.git',
    'git@0xa9fea9fe:x.git',
    'ssh://git@2852039166/x.git',
  ]) {
    const res = await newProject(d.api, d.orgId, url);
    t.is(res.statusCode, 422, `${url}: ${JSON.stringify(res.body)}`);
    t.regex(res.body.message, /^repo_url: .* is refused: .*link-local/, url);
  }
  t.is((await newProject(d.api, d.orgId, 'https://10.0.0.5/x.git')).statusCode, 201, 'development keeps private hosts');
  await stop(dev);

  const prod = await server({ NODE_ENV: 'production' });
  const p = await admin(prod);
  const refused = [
    'https://10.0.0.5/x.git',
    'https://0x0a000005/x.git',
    'https://167772165/x.git',
    'https://[::ffff:10.0.0.5]/x.git',
    'ssh://git@0x0a000005/x.git',
    'ssh://git@012.0.0.5:2222/x.git',
    'git@10.5:x.git',
    'git@192.168.1.1:x.git',
    'https://localhost/x.git',
    'https://127.0.0.1/x.git',
    'https://169.254.169.254/x.git',
  ];
  for (const url of refused) {
    const res = await newProject(p.api, p.orgId, url);
    t.is(res.statusCode, 422, `${url}: ${JSON.stringify(res.body)}`);
    t.regex(res.body.message, /^repo_url: .* is refused: /, url);
  }
  t.regex((await newProject(p.api, p.orgId, 'https://10.0.0.5/x.git')).body.message, /outbound\.allow_private/, 'the message names the setting');
  const ok = await newProject(p.api, p.orgId, 'https://git.example.com/x.git');
  t.is(ok.statusCode, 201, 'a name that does not resolve here is checked again at each connection');
  const patched = await p.api.patch(`/projects/${ok.body.id}`, { repo_url: 'https://0x0a000005/x.git' });
  t.is(patched.statusCode, 422);
  t.regex(patched.body.message, /^repo_url: /);
  await stop(prod);

  const allowing = await server({ NODE_ENV: 'production', SVC_OUTBOUND__ALLOW_PRIVATE: 'true' });
  const a = await admin(allowing);
  t.is((await newProject(a.api, a.orgId, 'https://10.0.0.5/x.git')).statusCode, 201, 'the operator allows private hosts');
  t.is((await newProject(a.api, a.orgId, 'git@0x0a000005:x.git')).statusCode, 201);
  t.is((await newProject(a.api, a.orgId, 'https://169.254.169.254/x.git')).statusCode, 422, 'metadata stays refused');
  t.is((await newProject(a.api, a.orgId, 'https://127.0.0.1/x.git')).statusCode, 422, 'loopback is another setting');
  await stop(allowing);
});

test.serial("production: a manifest's registry.host on a private, loopback or metadata address is 422 naming registry.host", async (t) => {
  const s = await server({ NODE_ENV: 'production' });
  const { api, orgId } = await admin(s);
  const project = (await newProject(api, orgId, null)).body.id as string;
  for (const host of ['10.0.0.5:5000', '0x0a000005', '169.254.169.254', '[::ffff:192.168.0.1]:443', 'localhost:5000']) {
    const res = await api.post(`/projects/${project}/manifest`, { yaml: `registry:\n  host: "${host}"\n` });
    t.is(res.statusCode, 422, `${host}: ${JSON.stringify(res.body)}`);
    t.regex(res.body.message, /^invalid manifest: registry\.host: registry\.host .* is refused: /, host);
    t.like(res.body.errors[0], { path: 'registry.host' });
  }
  t.is((await api.post(`/projects/${project}/manifest`, { yaml: 'registry:\n  host: registry.example.com\n' })).statusCode, 200);
  await stop(s);
});

test.serial(
  'production: a name resolving to loopback is refused at connection time (a project made in development: manifest read, worker clone)',
  async (t) => {
    shared = await createTestDatabase();
    const dev = await server({ NODE_ENV: 'development' }, { database: shared });
    const { api: devApi, orgId, token } = await admin(dev);
    const made = await newProject(devApi, orgId, `https://localhost:${new URL(dev.url).port}/x.git`);
    t.is(made.statusCode, 201, JSON.stringify(made.body));
    await stop(dev);

    const prod = await server({ NODE_ENV: 'production', SVC_SANDBOX: 'off' }, { database: shared, overrides: { roles: ['api', 'orchestrator', 'worker'] } });
    const api = as(prod.server, token);
    const read = await api.post(`/projects/${made.body.id}/manifest`, {});
    t.is(read.statusCode, 422, JSON.stringify(read.body));
    t.regex(read.body.message, /localhost resolves to (127\.0\.0\.1|::1), this service's own address/);

    t.is((await api.post(`/projects/${made.body.id}/secrets`, { name: 'GIT_TOKEN', value: 'ghp-would-go-to-localhost' })).statusCode, 201);
    const job = await api.post(`/projects/${made.body.id}/jobs`, {
      description: 'read',
      hints: { max_attempts: 1, step: { kind: 'script', script: { run: 'true' } } },
    });
    t.is(job.statusCode, 201, JSON.stringify(job.body));
    let attempt: any = null;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && !attempt?.ended_at; await new Promise((r) => setTimeout(r, 100)))
      attempt = (await api.get(`/projects/${made.body.id}/jobs/${job.body.id}/attempts`)).body.data[0];
    t.regex(String(attempt?.error), /localhost resolves to (127\.0\.0\.1|::1), this service's own address/);
    t.falsy(attempt?.git?.resolved_sha, 'nothing was cloned');
  },
);

test('hosts are normalized before the check: hex, decimal, octal, short and IPv4-mapped forms', (t) => {
  for (const host of ['0x0a000001', '167772161', '012.0.0.1', '10.1', '10.0.1', '0x0a.0.0.1']) t.is(normalizeHost(host), '10.0.0.1', host);
  t.is(normalizeHost('[::FFFF:10.0.0.1]'), '::ffff:a00:1');
  t.is(normalizeHost('Git.Example.COM'), 'git.example.com');
  t.deepEqual(repoEndpoint('git@0x0a000001:x.git'), { kind: 'ssh', host: '10.0.0.1', written: '0x0a000001', port: 22 });
  t.deepEqual(repoEndpoint('ssh://git@[::ffff:10.0.0.1]:2222/x.git'), { kind: 'ssh', host: '::ffff:a00:1', written: '[::ffff:10.0.0.1]', port: 2222 });
  t.like(repoEndpoint('https://user@167772161:8443/x.git'), { kind: 'https', host: '10.0.0.1', port: 8443 });
  t.is(repoEndpoint('file:///srv/x.git'), null);
  t.throws(() => repoEndpoint('https://git.example.com\\@10.0.0.1/x.git'), { instanceOf: UrlRefused, message: /ambiguous/ });
  const strict = new AddressGuard({ allowLoopback: false, allowPrivate: false, allowedHosts: [] });
  for (const address of ['::ffff:a00:1', '64:ff9b::a00:1', '::a00:1', '2002:a00:1::1', '::ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe'])
    t.truthy(strict.refusal(address), address);
  t.is(strict.refusal('2002:808:808::1'), null);
});

test('the outbound block is the default of every domain; the older webhooks/inference keys still decide for theirs', (t) => {
  const prod = loadConfig({ env: { NODE_ENV: 'production' } });
  t.like(guardOptions(prod), { allowLoopback: false, allowPrivate: false });
  t.like(guardOptions(prod, 'webhooks'), { allowLoopback: false, allowPrivate: false });
  const dev = loadConfig({ env: { NODE_ENV: 'development' } });
  t.like(guardOptions(dev, 'inference'), { allowLoopback: true, allowPrivate: true });
  const aliased = loadConfig({ env: { NODE_ENV: 'production', SVC_WEBHOOKS__ALLOW_PRIVATE: 'true', SVC_OUTBOUND__ALLOWED_HOSTS: 'git.corp,10.20.0.0/16' } });
  t.like(guardOptions(aliased, 'webhooks'), { allowPrivate: true, allowedHosts: ['git.corp', '10.20.0.0/16'] });
  t.like(guardOptions(aliased, 'inference'), { allowPrivate: false });
  t.like(guardOptions(aliased), { allowPrivate: false });
});

test("production refuses this service's own listening port on its own addresses even where loopback is allowed", async (t) => {
  const guard = new AddressGuard({ allowLoopback: true, allowPrivate: true, allowedHosts: [], ownPorts: () => [4701] });
  await t.throwsAsync(() => guard.check(new URL('http://127.0.0.1:4701/hooks')), { message: "127.0.0.1:4701 is this service's own listening address" });
  await t.throwsAsync(() => guard.checkHost('localhost', 4701), { message: /own listening address/ });
  await t.notThrowsAsync(() => guard.check(new URL('http://127.0.0.1:4702/hooks')));
});

test('git is pinned to the addresses checked: curl resolve entries for https (no redirects), HostName for ssh', async (t) => {
  const lenient = new AddressGuard({ allowLoopback: true, allowPrivate: true, allowedHosts: [] });
  const https = await pinRepoHost('https://localhost:8443/x.git', lenient, {
    GIT_CONFIG_COUNT: '1',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_VALUE_0: 'Authorization: x',
  });
  t.like(https, {
    GIT_CONFIG_COUNT: '3',
    GIT_CONFIG_KEY_0: 'http.extraHeader',
    GIT_CONFIG_KEY_1: 'http.followRedirects',
    GIT_CONFIG_VALUE_1: 'false',
    GIT_CONFIG_KEY_2: 'http.curloptResolve',
  });
  t.regex(https.GIT_CONFIG_VALUE_2, /^localhost:8443:(127\.0\.0\.1|\[::1\])/);
  const ssh = await pinRepoHost('git@localhost:x.git', lenient, { GIT_SSH_COMMAND: 'ssh -i key' });
  t.regex(ssh.GIT_SSH_COMMAND, /^ssh -i key -o HostName=(127\.0\.0\.1|::1) -o HostKeyAlias=localhost$/);
  const strict = new AddressGuard({ allowLoopback: false, allowPrivate: false, allowedHosts: [] });
  await t.throwsAsync(() => pinRepoHost('git@localhost:x.git', strict, {}), { instanceOf: UrlRefused, message: /outbound\.allow_loopback/ });
  await t.throwsAsync(() => pinRepoHost('https://svc-no-such-host.invalid/x.git', lenient, {}), { instanceOf: UrlRefused, message: /does not resolve/ });
  t.deepEqual(await pinRepoHost('file:///srv/x.git', strict, { A: 'b' }), { A: 'b' });
});
