/** End to end: `svc models …` and `svc inference targets|managed …` (the compiled CLI, a subprocess) against a real server and a fake upstream. */
import test from 'ava';
import { rm } from 'node:fs/promises';
import { cliUser, showRun, tempHome } from './helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { startFakeLlm, type FakeLlm } from '../fixtures/fake-llm.ts';

let server: TestServer;
let fake: FakeLlm;
let home = '';
let token = '';
let org = '';

const { svc, ok, json } = cliUser(() => ({ home, url: server.url, token }));

test.before(async () => {
  fake = await startFakeLlm();
  server = await startTestServer({
    overrides: { inference: { providers: { fakeai: { kind: 'openai', base_url: `${fake.url}/v1`, credential_secret: 'FAKE_KEY', models: [] } } } },
  });
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  org = (await json(['org', 'create', 'Inference CLI'])).id;
  await json(['secrets', 'set', 'FAKE_KEY', '--scope', 'system', '--value', fake.apiKey]);
});
test.after.always(async () => {
  await server?.stop();
  await fake?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('targets: create, list as a table, get, update, delete; --json prints the API body; the key never shows', async (t) => {
  const created = await json([
    'inference',
    'targets',
    'create',
    'main',
    '--kind',
    'openai',
    '--base-url',
    `${fake.url}/v1`,
    '--credential-secret',
    'FAKE_KEY',
    '--allowed-models',
    'gpt-fake-1,slow-gpt',
    '--org',
    org,
  ]);
  t.like(created, { name: 'main', org_id: org, scope: 'org', kind: 'openai', credential_secret: 'FAKE_KEY', allowed_models: ['gpt-fake-1', 'slow-gpt'] });
  const system = await json([
    'inference',
    'targets',
    'create',
    'shared',
    '--kind',
    'anthropic',
    '--base-url',
    fake.url,
    '--credential-secret',
    'FAKE_KEY',
    '--system',
  ]);
  t.like(system, { scope: 'system', org_id: null });

  const table = await ok(['inference', 'targets', 'list', '--org', org]);
  t.regex(table, /^NAME\s+KIND\s+SCOPE\s+BASE URL\s+SECRET\s+MODELS\s+ID\n/);
  t.regex(table, new RegExp(`main\\s+openai\\s+org\\s+${fake.url.replace(/\./g, '\\.')}/v1\\s+FAKE_KEY\\s+gpt-fake-1,slow-gpt\\s+${created.id}`));
  t.regex(await ok(['inference', 'targets', 'list', '--system']), /shared\s+anthropic\s+system\s+\S+\s+FAKE_KEY\s+any/);
  t.regex(await ok(['inference', 'targets', 'get', created.id]), /^id:\s+itgt_/);
  t.like(await json(['inference', 'targets', 'update', created.id, '--request-timeout-ms', '5000']), { request_timeout_ms: 5000 });
  t.is((await ok(['inference', 'targets', 'delete', system.id])).trim(), `Deleted inference target ${system.id}.`);
  t.false((await ok(['inference', 'targets', 'list', '--org', org, '--json'])).includes(fake.apiKey));

  const bad = await svc(['inference', 'targets', 'create', 'x', '--kind', 'openai', '--org', org]);
  t.is(bad.code, 2, showRun([], bad));
  t.regex(bad.stderr, /--base-url is required/);
  const noOrg = await svc(['inference', 'targets', 'list']);
  t.regex(noOrg.stderr, /name the org \(--org ID/);
});

test.serial('managed models: add with prices, list, models list shows them beside provider models, delete; negative prices are refused', async (t) => {
  const target = (await json(['inference', 'targets', 'list', '--org', org])).data[0];
  const added = await json([
    'inference',
    'managed',
    'add',
    'fast',
    '--target',
    target.id,
    '--upstream-model',
    'gpt-fake-1',
    '--input-price',
    '0.5',
    '--output-price',
    '2',
    '--org',
    org,
  ]);
  t.like(added, { canonical_model_id: 'managed/fast', prices: { input: 0.5, output: 2, cache_read: null }, currency: 'USD', project_ids: null });
  const table = await ok(['inference', 'managed', 'list', '--org', org]);
  t.regex(table, /^MODEL\s+SCOPE\s+TARGET\s+UPSTREAM\s+IN \$\/M\s+OUT \$\/M\s+PROJECTS\n/);
  t.regex(table, /managed\/fast\s+org\s+main\s+gpt-fake-1\s+0\.5\s+2\s+all/);

  const models = await ok(['models', 'list', '--org', org, '--limit', '50']);
  t.regex(models, /^MODEL\s+SOURCE\s+KIND\s+VIA\s+UPSTREAM\n/);
  t.regex(models, /managed\/fast\s+managed\s+openai\s+main\s+gpt-fake-1/);
  t.regex(models, /claude-fake-1\s+provider\s+openai\s+fakeai\s+claude-fake-1/);
  t.deepEqual(
    (await json(['models', 'list', '--org', org, '--source', 'managed'])).data.map((m: any) => m.id),
    ['managed/fast'],
  );

  const negative = await svc([
    'inference',
    'managed',
    'add',
    'neg',
    '--target',
    target.id,
    '--upstream-model',
    'gpt-fake-1',
    '--output-price=-1',
    '--org',
    org,
  ]);
  t.not(negative.code, 0);
  t.regex(negative.stderr, /must be a non-negative price/);
  const nan = await svc(['inference', 'managed', 'add', 'nan', '--target', target.id, '--upstream-model', 'm', '--input-price', 'cheap', '--org', org]);
  t.regex(nan.stderr, /--input-price must be a number, got "cheap"/);

  t.is((await ok(['inference', 'managed', 'delete', 'managed/fast', '--org', org])).trim(), 'Deleted managed/fast.');
  t.regex(await ok(['inference', 'managed', 'list', '--org', org]), /^No managed models\./);
});
