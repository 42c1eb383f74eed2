/**
 * End to end: `svc event create | list | show` and `svc schedule list | create | update | delete`
 * (node dist/cli/bin.js, a subprocess) against a real server with the orchestrator, so events get routed.
 */
import test from 'ava';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { cliUser, tempHome } from './helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { ORCHESTRATOR } from '../events/helpers.ts';

const MANIFEST = `
workflows:
  greet:
    trigger: { event: { type: manual.greet } }
    steps:
      - { name: hello, run: echo hello }
`;

let server: TestServer;
let home = '';
let token = '';
let org = '';
let project = '';

const { svc, ok, json } = cliUser(() => ({ home, url: server.url, token }));

test.before(async () => {
  server = await startTestServer({ overrides: ORCHESTRATOR });
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  org = (await json(['org', 'create', 'Events E2E'])).id;
  project = (await json(['project', 'create', 'Web', '--org', org, '--slug', 'eventweb'])).id;
  await writeFile(join(home, 'manifest.yaml'), MANIFEST);
  await ok(['manifest', 'sync', '--project', project, '--file', join(home, 'manifest.yaml')]);
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('event create, show (with its routing), list, list --all', async (t) => {
  const created = await json([
    'event',
    'create',
    'manual.greet',
    '--project',
    project,
    '--payload',
    '{"who":"world"}',
    '--branch',
    'main',
    '--dedupe-key',
    'g-1',
  ]);
  t.like(created, { type: 'manual.greet', source: 'manual', status: 'pending', ref_branch: 'main', dedupe_key: 'g-1', payload_json: { who: 'world' } });
  let shown = '';
  for (let i = 0; i < 100 && !shown.includes('matched '); i++) {
    shown = await ok(['event', 'show', created.id, '--project', project]);
    await sleep(50);
  }
  t.regex(shown, /^id: +evt_/m);
  t.regex(shown, /^status: +completed$/m);
  t.regex(shown, /^payload: \{"who":"world"\}$/m);
  t.regex(shown, /^ {2}matched {2}workflow greet \(event manual\.greet\): started eventweb-[0-9a-f]{8}$/m);
  const again = await json(['event', 'create', 'manual.greet', '--project', project, '--dedupe-key', 'g-1']);
  t.is(again.id, created.id, 'a seen dedupe key returns the first event');
  await ok(['event', 'create', 'app.other', '--project', project, '--source', 'app']);

  const table = (await ok(['event', 'list', '--project', project])).trimEnd().split('\n');
  t.regex(table[0], /^ID +TYPE +SOURCE +STATUS +CREATED$/);
  t.deepEqual(
    table.slice(1).map((l) => l.split(/ +/)[1]),
    ['app.other', 'manual.greet'],
  );
  const filtered = await json(['event', 'list', '--project', project, '--type', 'manual.greet']);
  t.deepEqual(
    filtered.data.map((e: { id: string }) => e.id),
    [created.id],
  );
  const all = await json(['event', 'list', '--all', '--org', org, '--source', 'app']);
  t.is(all.data.length, 1);
});

test.serial('event: usage and API errors exit 2 and 1 with the message', async (t) => {
  const badJson = await svc(['event', 'create', 'manual.x', '--project', project, '--payload', '[1]']);
  t.is(badJson.code, 2);
  t.regex(badJson.stderr, /--payload must be a JSON object/);
  const platform = await svc(['event', 'create', 'manual.x', '--project', project, '--source', 'system']);
  t.is(platform.code, 1);
  t.regex(platform.stderr, /events from source system are emitted by the platform only/);
  t.is((await svc(['event', 'list', '--all'])).code, 2);
  t.is((await svc(['event', 'frob'])).code, 2);
});

test.serial('schedule create, list, update, delete', async (t) => {
  const created = await json([
    'schedule',
    'create',
    '--project',
    project,
    '--cron',
    '0 6 * * 1',
    '--type',
    'manual.greet',
    '--payload',
    '{"who":"monday"}',
    '--name',
    'weekly',
  ]);
  t.like(created, { cron: '0 6 * * 1', event_type: 'manual.greet', payload: { who: 'monday' }, name: 'weekly', enabled: true });
  const table = (await ok(['schedule', 'list', '--project', project])).trimEnd().split('\n');
  t.regex(table[0], /^ID +NAME +CRON +EVENT +ENABLED +LAST FIRED$/);
  t.true(table[1].startsWith(created.id));
  const disabled = await json(['schedule', 'update', created.id, '--project', project, '--disable', '--cron', '0 7 * * 1']);
  t.like(disabled, { enabled: false, cron: '0 7 * * 1' });
  t.deepEqual((await json(['schedule', 'list', '--project', project, '--enabled'])).data, []);
  t.is((await svc(['schedule', 'update', created.id, '--project', project])).code, 2, 'nothing to change');
  const bad = await svc(['schedule', 'create', '--project', project, '--cron', 'every day']);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /not a standard 5-field cron expression/);
  t.regex(await ok(['schedule', 'delete', created.id, '--project', project]), new RegExp(`schedule ${created.id} deleted`));
  t.is((await svc(['schedule', 'delete', created.id, '--project', project])).code, 1);
});
