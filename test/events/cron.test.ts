import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import type { World } from '../jobs/claim-helpers.ts';
import { assertError } from '../orgs/helpers.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { ORCHESTRATOR, eventWorld, eventually, postEvent, routed, syncManifest } from './helpers.ts';

// Two orchestrators (each with its scheduler, event router and cron re-sync) on one database.
let w: World;
let replica: TestServer;
test.before(async () => {
  w = await eventWorld('evcron', true);
  replica = await startTestServer({ database: { url: w.ctx.srv.kernel.databaseUrl, drop: async () => {} }, overrides: ORCHESTRATOR });
});
test.after.always(async () => {
  await replica?.stop();
  await w?.ctx.srv.stop();
});

const MANIFEST = `
pipelines:
  nightly:
    trigger: { cron: { schedule: '0 3 * * *' } }
    steps:
      - { name: build, run: make }
workflows:
  every-minute:
    trigger: { cron: { schedule: '* * * * *' } }
    steps:
      - { name: tick, run: echo tick }
  nightly:
    trigger: { manual: true }
    steps:
      - { name: other, run: echo other }
`;

const registrations = () => w.db('schedule_registrations').where({ project_id: w.projectA }).orderBy('key');
const agendaJobs = (key: string) => w.db('svc_scheduled_jobs').where({ name: 'svc.events.cron' }).whereRaw("data->>'key' = ?", [key]);
/** Makes the scheduler run this schedule now (as if its minute had come) on whichever orchestrator polls first. */
const dueNow = (key: string) =>
  w.db('svc_scheduled_jobs').where({ name: 'svc.events.cron' }).whereRaw("data->>'key' = ?", [key]).update({ next_run_at: w.db.fn.now() });
const ticks = (filter: Record<string, string>) => {
  const q = w.db('events').where({ project_id: w.projectA, type: 'cron.tick' });
  for (const [k, v] of Object.entries(filter)) q.whereRaw('payload_json->>? = ?', [k, v]);
  return q.orderBy('created_at');
};
const workflowJobs = (name: string) => w.db('jobs').where({ project_id: w.projectA }).whereRaw("hints->>'workflow_name' = ?", [name]);

test.serial(
  'a manifest sync schedules every cron trigger once (UTC); a tick fires exactly once across two orchestrators and starts exactly that workflow',
  async (t) => {
    await syncManifest(w, MANIFEST);
    const pipelineKey = `trigger:${w.projectA}:pipeline:nightly`;
    const workflowKey = `trigger:${w.projectA}:workflow:every-minute`;
    const rows = await eventually(
      async () => {
        const r = await registrations();
        return r.length === 2 ? r : null;
      },
      10_000,
      'cron registrations',
    );
    t.deepEqual(
      rows.map((r: any) => [r.key, r.expression]),
      [
        [pipelineKey, '0 3 * * *'],
        [workflowKey, '* * * * *'],
      ],
    );
    const [job] = await agendaJobs(pipelineKey);
    t.like(job, { repeat_interval: '0 3 * * *', repeat_timezone: 'UTC' });
    t.is(new Date(job.next_run_at).getUTCHours(), 3);
    t.is((await agendaJobs(workflowKey)).length, 1, 'one schedule however many orchestrators');

    // A tick's dedupe key is its minute, and '* * * * *' also fires by itself at each minute: run
    // what follows (a few seconds) inside one minute, or a second tick would be a new, rightful event.
    const second = new Date().getUTCSeconds();
    if (second > 40) await sleep((61 - second) * 1000);
    await dueNow(workflowKey);
    const [tick] = await eventually(
      async () => {
        const found = await ticks({ trigger_name: 'every-minute' });
        return found.length ? found : null;
      },
      10_000,
      'a cron.tick',
    );
    const event = await routed(w, tick.id);
    t.like(event, { source: 'cron', actor_type: 'system', status: 'completed' });
    t.deepEqual(event.payload_json, { schedule: '* * * * *', trigger_name: 'every-minute', trigger_kind: 'workflow' });
    t.deepEqual(
      event.routing.matched.map((m: any) => `${m.kind} ${m.name}`),
      ['workflow every-minute'],
    );
    t.deepEqual(event.routing.not_matched.map((m: any) => `${m.kind} ${m.name}`).sort(), ['pipeline nightly', 'workflow nightly']);
    await sleep(1_500); // both schedulers poll every 100 ms: a second run would have happened by now
    t.is((await ticks({ trigger_name: 'every-minute' })).length, 1);
    t.is((await workflowJobs('every-minute')).length, 1);

    // Run again within the same minute: the same tick, so still one event (the dedupe key is the key and the minute).
    await dueNow(workflowKey);
    await sleep(1_000);
    t.is((await ticks({ trigger_name: 'every-minute' })).length, 1);
    t.true(new Date((await agendaJobs(workflowKey))[0].next_run_at).getTime() > Date.now(), 'rescheduled for its next minute');
  },
);

test.serial('re-syncing the manifest reschedules changed triggers and cancels removed ones', async (t) => {
  await syncManifest(w, MANIFEST.replace("'0 3 * * *'", "'30 4 * * 1'").replace(/ {2}every-minute:[\s\S]*?echo tick }\n/, ''));
  const rows = await eventually(
    async () => {
      const r = await registrations();
      return r.length === 1 && r[0].expression === '30 4 * * 1' ? r : null;
    },
    10_000,
    'the re-sync',
  );
  t.is(rows[0].key, `trigger:${w.projectA}:pipeline:nightly`);
  t.is((await agendaJobs(`trigger:${w.projectA}:workflow:every-minute`)).length, 0);
  t.like((await agendaJobs(rows[0].key))[0], { repeat_interval: '30 4 * * 1' });
});

test.serial("project schedules: CRUD, 400/403/404, and ticks that emit the schedule's event once across two orchestrators", async (t) => {
  const base = `/projects/${w.projectA}/schedules`;
  const created = await w.owner.api.post(base, { name: 'hourly report', cron: '0 * * * *', event_type: 'manual.report', payload: { kind: 'hourly' } });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const s = created.body;
  t.regex(s.id, /^sch_/);
  t.like(s, {
    project_id: w.projectA,
    name: 'hourly report',
    cron: '0 * * * *',
    event_type: 'manual.report',
    enabled: true,
    created_by: w.owner.id,
    last_fired_at: null,
  });
  const key = `schedule:${s.id}`;
  await eventually(async () => (await agendaJobs(key)).length === 1, 10_000, 'the schedule registered');

  await dueNow(key);
  const [event] = await eventually(
    async () => {
      const found = await w.db('events').where({ project_id: w.projectA, type: 'manual.report' });
      return found.length ? found : null;
    },
    10_000,
    'the schedule to fire',
  );
  t.like(event, { source: 'cron', actor_type: 'user', actor_id: w.owner.id });
  t.deepEqual(event.payload_json, { kind: 'hourly', schedule: '0 * * * *', schedule_id: s.id });
  await sleep(1_000);
  t.is((await w.db('events').where({ project_id: w.projectA, type: 'manual.report' })).length, 1);
  t.truthy((await w.owner.api.get(`${base}/${s.id}`)).body.last_fired_at);

  const listed = await w.owner.api.get(`${base}?enabled=true`);
  t.deepEqual(
    listed.body.data.map((x: any) => x.id),
    [s.id],
  );
  const patched = await w.owner.api.patch(`${base}/${s.id}`, { enabled: false, payload: { kind: 'paused' } });
  t.is(patched.statusCode, 200);
  t.like(patched.body, { enabled: false, payload: { kind: 'paused' } });
  await eventually(async () => (await agendaJobs(key)).length === 0, 10_000, 'the disabled schedule cancelled');
  const resumed = await w.owner.api.patch(`${base}/${s.id}`, { enabled: true, cron: '*/5 * * * *' });
  t.is(resumed.body.cron, '*/5 * * * *');
  await eventually(async () => (await agendaJobs(key))[0]?.repeat_interval === '*/5 * * * *', 10_000, 'the new expression');

  assertError(
    t,
    await w.owner.api.post(base, { cron: 'every hour', event_type: 'manual.x' }),
    400,
    /"cron" 'every hour' is not a standard 5-field cron expression/,
  );
  assertError(t, await w.owner.api.post(base, { cron: '61 * * * *' }), 400, /"cron" '61 \* \* \* \*' is not a valid cron expression/);
  assertError(t, await w.owner.api.post(base, { event_type: 'manual.x' }), 400, '"cron" is required');
  assertError(t, await w.owner.api.post(base, { cron: '* * * * *', payload: [] }), 400, '"payload" must be of type object');
  assertError(t, await w.owner.api.patch(`${base}/${s.id}`, {}), 400, 'give at least one of name, cron, event_type, payload, enabled');
  assertError(
    t,
    await w.owner.api.post(base, { cron: '* * * * *', event_type: 'system.job.failed' }),
    403,
    'event type system.job.failed: system.* events are emitted by the platform only',
  );
  assertError(t, await w.outsider.api.get(base), 404, `project ${w.projectA} not found`);
  assertError(t, await w.owner.api.get(`/projects/${w.projectA2}/schedules/${s.id}`), 404, `schedule ${s.id} not found`);
  assertError(t, await w.owner.api.get(`${base}/sch_nope`), 400, /"schedule_id"/);

  t.is((await w.owner.api.delete(`${base}/${s.id}`)).statusCode, 204);
  assertError(t, await w.owner.api.delete(`${base}/${s.id}`), 404, `schedule ${s.id} not found`);
  await eventually(async () => (await agendaJobs(key)).length === 0, 10_000, 'the deleted schedule cancelled');
});

test.serial('two routers share the work: each of 60 events is routed once and starts one job', async (t) => {
  await syncManifest(
    w,
    `
workflows:
  fan:
    trigger: { event: { type: manual.fan } }
    steps:
      - { name: one, run: echo one }
`,
  );
  const posted = await Promise.all(Array.from({ length: 60 }, (_, i) => postEvent(w, { type: 'manual.fan', payload: { i } })));
  const done = await Promise.all(posted.map((e) => routed(w, e.id)));
  t.true(done.every((e) => e.status === 'completed' && e.routing.matched.length === 1));
  const jobs = await workflowJobs('fan');
  t.is(jobs.length, 60);
  t.is(new Set(jobs.map((j: any) => JSON.parse(j.hints.request_json).i)).size, 60);
  const attempts = await w
    .db('work_items')
    .where({ queue: 'events' })
    .whereIn(
      'key',
      posted.map((e) => e.id),
    )
    .max({ n: 'attempts' })
    .first();
  t.is(attempts!.n, 1, 'no event was claimed twice');
});
