/** End to end: `svc webhook …` (node dist/cli/bin.js, a subprocess) against a real server with the orchestrator and a real receiver. */
import test from 'ava';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliUser, showRun, tempHome } from './helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';
import { SCALED, emit, receiver, svcSignatureValid, until, type Receiver, type WebhookWorld } from '../webhooks/helpers.ts';

let server: TestServer;
let rx: Receiver;
let home = '';
let token = '';
let org = '';
let project = '';
const SECRET = 'cli-webhook-secret-0123456789';

const { svc, ok, json } = cliUser(() => ({ home, url: server.url, token }));

test.before(async () => {
  server = await startTestServer({ overrides: SCALED });
  rx = await receiver();
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  org = (await json(['org', 'create', 'Webhooks E2E'])).id;
  project = (await json(['project', 'create', 'Web', '--org', org, '--slug', 'whcli'])).id;
});
test.after.always(async () => {
  await rx?.close();
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('create, list, show, test, deliveries, replay, delete', async (t) => {
  await writeFile(join(home, 'secret'), `${SECRET}\n`);
  const created = await json([
    'webhook',
    'create',
    '--org',
    org,
    '--url',
    rx.url,
    '--events',
    'manual.*,job.failed',
    '--secret-file',
    join(home, 'secret'),
    '--filter',
    `{"project_id":"${project}"}`,
  ]);
  t.regex(created.id, /^wh_/);
  t.deepEqual(created.events, ['manual.*', 'job.failed']);
  t.false(JSON.stringify(created).includes(SECRET));

  const table = await ok(['webhook', 'list', '--org', org]);
  t.regex(table, /^ID\s+URL\s+EVENTS\s+SCOPE\s+ENABLED\s+FAILURES/);
  t.true(table.includes(`${created.id}  ${rx.url}  manual.*, job.failed  org`));
  t.regex(await ok(['webhook', 'show', created.id, '--org', org]), /enabled:\s+true/);

  const tested = await svc(['webhook', 'test', created.id, '--org', org]);
  t.is(tested.code, 0, showRun(['test'], tested));
  t.regex(tested.stdout, /status:\s+succeeded/);
  t.true(svcSignatureValid(rx.received.at(-1)!, SECRET));

  const w = { db: server.kernel.db, projectA: project } as unknown as WebhookWorld;
  const event = await emit(w, { type: 'manual.cli' });
  await until(async () => rx.received.some((r) => JSON.parse(r.body).id === event.id), 'the delivery');
  const deliveries = await until(async () => {
    const d = await json(['webhook', 'deliveries', created.id, '--org', org, '--status', 'succeeded']);
    return d.data.length === 2 ? d : null;
  }, 'two deliveries listed');
  t.deepEqual(deliveries.data.map((d: any) => d.kind).sort(), ['event', 'test']);

  const dry = await json(['webhook', 'replay', created.id, '--org', org, '--from-event', event.id, '--dry-run']);
  t.like(dry, { dry_run: true, events_matched: 1, events_skipped: 1, events_enqueued: 0 });
  t.regex(await ok(['webhook', 'replay', created.id, dry.id, '--org', org]), /status:\s+completed/);

  const bad = await svc(['webhook', 'replay', created.id, '--org', org, '--from-event', event.id, '--max-events', '0']);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /"max_events" must be greater than or equal to 1 \(400\)/);

  t.is((await svc(['webhook', 'enable', created.id, '--org', org])).code, 0);
  t.regex(await ok(['webhook', 'delete', created.id, '--org', org]), /Deleted webhook/);
  const gone = await svc(['webhook', 'show', created.id, '--org', org]);
  t.is(gone.code, 1);
  t.regex(gone.stderr, /webhook .* not found \(404\)/);
});

test.serial('a project-scoped webhook; usage errors exit 2', async (t) => {
  const scoped = await json(['webhook', 'create', '--org', org, '--project', project, '--url', rx.url, '--secret', SECRET]);
  t.like(scoped, { project_id: project });
  t.deepEqual(scoped.events, ['*']);
  for (const args of [
    ['webhook', 'create', '--org', org, '--url', rx.url],
    ['webhook', 'create', '--org', org, '--secret', SECRET],
    ['webhook', 'replay', scoped.id, '--org', org],
    ['webhook', 'frobnicate'],
  ]) {
    const r = await svc(args);
    t.is(r.code, 2, showRun(args, r));
  }
});
