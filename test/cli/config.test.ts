import test from 'ava';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { splitGlobals } from '../../cli/args.ts';
import { normalizeApiUrl, resolveContext } from '../../cli/config.ts';
import { UsageError } from '../../cli/errors.ts';
import { ORG, USER, page, runCli, startFake, tempHome } from './helpers.ts';

const mode = async (path: string) => (await stat(path)).mode & 0o777;

async function writeConfig(home: string, config: unknown): Promise<void> {
  await mkdir(join(home, '.svc'), { recursive: true });
  await writeFile(join(home, '.svc', 'config.json'), JSON.stringify(config));
}

async function writeCredentials(home: string, credentials: unknown, fileMode = 0o644): Promise<string> {
  await mkdir(join(home, '.svc'), { recursive: true, mode: 0o755 });
  const path = join(home, '.svc', 'credentials.json');
  await writeFile(path, JSON.stringify(credentials), { mode: fileMode });
  await chmod(path, fileMode);
  return path;
}

const readJson = async (path: string) => JSON.parse(await readFile(path, 'utf8'));

test('splitGlobals takes global flags from anywhere and leaves command flags in order', (t) => {
  const { globals, rest } = splitGlobals(['--json', 'org', '--org=o1', 'list', '--limit', '5', '--api-url', 'http://x', '-h']);
  t.deepEqual(globals, { json: true, help: true, org: 'o1', apiUrl: 'http://x' });
  t.deepEqual(rest, ['org', 'list', '--limit', '5']);
  t.deepEqual(splitGlobals(['--profile', 'p', 'serve', '--port', '1', '--json']).serveArgs, ['--port', '1', '--json']);
  t.throws(() => splitGlobals(['org', 'list', '--api-url']), { instanceOf: UsageError });
});

test('normalizeApiUrl strips trailing slashes and rejects non-http URLs', (t) => {
  t.is(normalizeApiUrl('https://svc.example.com/api//'), 'https://svc.example.com/api');
  t.throws(() => normalizeApiUrl('ftp://x'), { instanceOf: UsageError });
  t.throws(() => normalizeApiUrl('not a url'), { instanceOf: UsageError });
});

test('API URL precedence: --api-url > SVC_API_URL > profile > default; token keyed by URL, SVC_TOKEN overrides', async (t) => {
  const home = await tempHome();
  await writeConfig(home, {
    current_profile: 'work',
    profiles: { work: { api_url: 'http://profile:1/', org: 'org_p', project: 'prj_p' }, other: { api_url: 'http://other:2' } },
  });
  await writeCredentials(home, { 'http://profile:1': { access_token: 'tok-profile' }, 'http://env:3': { access_token: 'tok-env' } });
  const none = { json: false, help: false };

  let ctx = resolveContext(none, { HOME: home });
  t.like(ctx, { apiUrl: 'http://profile:1', apiUrlSource: 'profile', profileName: 'work', org: 'org_p', project: 'prj_p' });
  t.like(ctx, { token: 'tok-profile', tokenSource: 'credentials' });

  ctx = resolveContext(none, { HOME: home, SVC_API_URL: 'http://env:3/' });
  t.like(ctx, { apiUrl: 'http://env:3', apiUrlSource: 'env', token: 'tok-env' });

  ctx = resolveContext({ ...none, apiUrl: 'http://flag:4', org: 'org_f' }, { HOME: home, SVC_API_URL: 'http://env:3' });
  t.like(ctx, { apiUrl: 'http://flag:4', apiUrlSource: 'flag', token: undefined, org: 'org_f', project: 'prj_p' });

  ctx = resolveContext({ ...none, profile: 'other' }, { HOME: home, SVC_TOKEN: 'tok-override' });
  t.like(ctx, { apiUrl: 'http://other:2', profileName: 'other', org: undefined, token: 'tok-override', tokenSource: 'env' });

  ctx = resolveContext(none, { HOME: await tempHome() });
  t.like(ctx, { apiUrl: 'http://localhost:4701', apiUrlSource: 'default', profileName: 'default', profileMissing: false });
  t.true(resolveContext({ ...none, profile: 'nope' }, { HOME: home }).profileMissing);
});

test('subprocess: SVC_API_URL beats the profile, --api-url beats both; each server gets its own stored token', async (t) => {
  const [fromProfile, fromEnv, fromFlag] = await Promise.all([startFake(), startFake(), startFake()]);
  t.teardown(() => Promise.all([fromProfile.stop(), fromEnv.stop(), fromFlag.stop()]));
  for (const fake of [fromProfile, fromEnv, fromFlag]) fake.on('GET', '/orgs', { body: page([ORG]) });
  const home = await tempHome();
  await writeConfig(home, { current_profile: 'default', profiles: { default: { api_url: `${fromProfile.url}/` } } });
  await writeCredentials(home, { [fromProfile.url]: { access_token: 'tok-p' }, [fromEnv.url]: { access_token: 'tok-e' } });

  t.is((await runCli(home, ['org', 'list'])).code, 0);
  t.is((await runCli(home, ['org', 'list'], { SVC_API_URL: fromEnv.url })).code, 0);
  t.is((await runCli(home, ['org', 'list', '--api-url', `${fromFlag.url}/`], { SVC_API_URL: fromEnv.url })).code, 0);
  t.is((await runCli(home, ['org', 'list'], { SVC_API_URL: fromEnv.url, SVC_TOKEN: 'tok-x' })).code, 0);

  t.deepEqual(
    fromProfile.requests.map((r) => r.authorization),
    ['Bearer tok-p'],
  );
  t.deepEqual(
    fromEnv.requests.map((r) => r.authorization),
    ['Bearer tok-e', 'Bearer tok-x'],
  );
  t.deepEqual(
    fromFlag.requests.map((r) => r.authorization),
    [undefined],
  );
});

test('login state is stored keyed by normalized URL, 0600 in a 0700 dir, and logout removes only that URL', async (t) => {
  const fake = await startFake();
  t.teardown(() => fake.stop());
  const token = { access_token: 'tok-new', token_type: 'Bearer', expires_at: '2099-01-01T00:00:00.000Z', user: USER };
  fake.on('POST', '/auth/bootstrap', { status: 201, body: token }).on('GET', '/auth/me', { body: { user: USER, orgs: [], projects: [] } });
  const home = await tempHome();
  const path = await writeCredentials(home, { 'http://elsewhere:9': { access_token: 'keep-me' } }, 0o644);
  await chmod(join(home, '.svc'), 0o755);

  const boot = await runCli(home, ['auth', 'bootstrap', '--email', USER.email, '--api-url', `${fake.url}///`]);
  t.is(boot.code, 0, boot.stderr);
  t.is(await mode(path), 0o600);
  t.is(await mode(join(home, '.svc')), 0o700);
  t.deepEqual(await readJson(path), {
    'http://elsewhere:9': { access_token: 'keep-me' },
    [fake.url]: { access_token: 'tok-new', expires_at: '2099-01-01T00:00:00.000Z', email: USER.email },
  });

  const me = await runCli(home, ['auth', 'whoami'], { SVC_API_URL: fake.url });
  t.is(me.code, 0, me.stderr);
  t.is(fake.requests.at(-1)?.authorization, 'Bearer tok-new');

  const out = await runCli(home, ['auth', 'logout', '--api-url', fake.url]);
  t.is(out.code, 0);
  t.deepEqual(await readJson(path), { 'http://elsewhere:9': { access_token: 'keep-me' } });
  t.is(await mode(path), 0o600);
});

test('a fresh HOME gets ~/.svc 0700 and credentials.json 0600', async (t) => {
  const fake = await startFake();
  t.teardown(() => fake.stop());
  fake.on('POST', '/auth/bootstrap', { status: 201, body: { access_token: 't', token_type: 'Bearer', expires_at: null, user: USER } });
  const home = await tempHome();
  const result = await runCli(home, ['auth', 'bootstrap', '--email', USER.email, '--token', 'boot', '--api-url', fake.url]);
  t.is(result.code, 0, result.stderr);
  t.is(await mode(join(home, '.svc')), 0o700);
  t.is(await mode(join(home, '.svc', 'credentials.json')), 0o600);
  t.deepEqual(fake.requests[0].body, { email: USER.email, token: 'boot' });
  t.is(fake.requests[0].authorization, undefined);
});

test('config set/unset/use/show write the documented shape and drive defaults', async (t) => {
  const fake = await startFake();
  t.teardown(() => fake.stop());
  fake.on('GET', '/orgs/org_9', { body: { ...ORG, id: 'org_9' } });
  const home = await tempHome();
  const path = join(home, '.svc', 'config.json');

  t.is((await runCli(home, ['config', 'set', 'api-url', `${fake.url}/`])).code, 0);
  t.is((await runCli(home, ['config', 'set', 'org', 'org_9'])).code, 0);
  t.is((await runCli(home, ['config', 'set', 'org', 'org_s', '--profile', 'staging'])).code, 0);
  t.deepEqual(await readJson(path), {
    current_profile: 'default',
    profiles: { default: { api_url: fake.url, org: 'org_9' }, staging: { org: 'org_s' } },
  });

  const get = await runCli(home, ['org', 'get']);
  t.is(get.code, 0, get.stderr);
  t.is(fake.requests.at(-1)?.path, '/orgs/org_9');

  const show = await runCli(home, ['config', 'show', '--json', '--profile', 'staging']);
  t.like(JSON.parse(show.stdout), { profile: 'staging', api_url: 'http://localhost:4701', api_url_source: 'default', org: 'org_s' });

  t.is((await runCli(home, ['config', 'use', 'staging'])).code, 0);
  t.is((await runCli(home, ['config', 'unset', 'org'])).code, 0);
  t.deepEqual((await readJson(path)).current_profile, 'staging');
  t.deepEqual((await readJson(path)).profiles.staging, {});

  const bad = await runCli(home, ['config', 'set', 'colour', 'blue']);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /unknown config key "colour"/);
  const missing = await runCli(home, ['org', 'list', '--profile', 'nope']);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /profile "nope" is not defined/);
});

test('a corrupt config file is reported, not thrown', async (t) => {
  const home = await tempHome();
  await mkdir(join(home, '.svc'));
  await writeFile(join(home, '.svc', 'config.json'), '{nope');
  const result = await runCli(home, ['org', 'list']);
  t.is(result.code, 1);
  t.regex(result.stderr, /^svc: cannot parse .*config\.json/);
});
