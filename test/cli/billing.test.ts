/** End to end: `svc pricing …`, `svc spend` and `svc analytics …` (the compiled CLI, a subprocess) against a real server. */
import test from 'ava';
import { rm } from 'node:fs/promises';
import { cliUser, showRun, tempHome } from './helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let home = '';
let token = '';
let org = '';

const { svc, ok, json } = cliUser(() => ({ home, url: server.url, token }));

test.before(async () => {
  server = await startTestServer();
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  org = (await json(['org', 'create', 'Billing CLI'])).id;
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('pricing: cards show/create/list and rates add/list, as tables and with --json', async (t) => {
  t.is((await json(['pricing', 'cards', 'show'])).id, 'builtin-2025-11');
  t.regex(await ok(['pricing', 'cards', 'show', 'builtin-2025-11']), /^provenance: +svc's built-in table/m);
  const card = await json([
    'pricing',
    'cards',
    'create',
    '--name',
    'CLI card',
    '--provenance',
    'typed in a test',
    '--models',
    '{"gpt-x":{"input":1,"output":2,"cache_read":0.1}}',
    '--compute',
    '{"default":0.01}',
  ]);
  t.like(card, { name: 'CLI card', models: { 'gpt-x': { input: 1, output: 2, cache_read: 0.1, cache_write: 1 } }, compute: { default: 0.01 } });
  const table = await ok(['pricing', 'cards', 'list']);
  t.regex(table, /^ID +NAME +EFFECTIVE +MODELS +CLASSES$/m);
  t.regex(table, new RegExp(`^${card.id} +CLI card +\\S+ +1 +default$`, 'm'));
  t.like(await json(['pricing', 'rates', 'add', 'EUR', '1.08']), { currency: 'EUR', rate_to_usd: 1.08 });
  t.regex(await ok(['pricing', 'rates', 'list', '--currency', 'EUR']), /^EUR +1\.08 /m);
  const bad = await svc(['pricing', 'rates', 'add', 'EUR', '0']);
  t.is(bad.code, 1, showRun(['pricing', 'rates', 'add', 'EUR', '0'], bad));
  t.regex(bad.stderr, /rate_to_usd/);
  const usage = await svc(['pricing', 'cards', 'create', '--name', 'x']);
  t.is(usage.code, 2);
  t.regex(usage.stderr, /--provenance is required/);
});

test.serial('spend and analytics: zeroed for a new org, readable tables, --json is the API body; bad windows are usage errors', async (t) => {
  const spend = await json(['spend', '--org', org, '--window', '30d']);
  t.like(spend, { org_id: org, window: '30d', currency: 'USD', totals: { attempts: 0 } });
  const text = await ok(['spend', '--org', org]);
  t.regex(text, /^window: +7d \(since /m);
  t.regex(text, /^By project\n {2}none$/m);

  const summary = await json(['analytics', 'summary', '--org', org]);
  t.like(summary, { window: '7d', projects: 0, jobs: { created: 0, completed: 0, failed: 0, active: 0 }, environments: { total: 0 } });
  t.regex(await ok(['analytics', 'summary', '--org', org, '--window', '90d']), /^jobs: +0 created, 0 completed, 0 failed, 0 active$/m);
  t.regex(await ok(['analytics', 'jobs', '--org', org]), /^By project\n {2}none$/m);
  t.regex(await ok(['analytics', 'pipelines', '--org', org]), /^By pipeline\n {2}none$/m);
  t.deepEqual((await json(['analytics', 'env-health', '--org', org])).environments, []);
  for (const args of [
    ['analytics', 'summary', '--org', org, '--window', '2w'],
    ['analytics', 'nope', '--org', org],
    ['spend', '--window', '5d', '--org', org],
  ]) {
    const r = await svc(args);
    t.is(r.code, 2, showRun(args, r));
  }
  const help = await svc(['analytics', '--help']);
  t.regex(help.stdout + help.stderr, /Examples:\n {2}svc analytics summary --window 30d/);
});
