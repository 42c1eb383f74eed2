import test from 'ava';
import type { ClaimedAttempt, WorkerDispatcher } from '../../core/ports/worker.ts';
import { WorkerDispatcherToken } from '../../core/ports/worker.ts';
import { bootstrapAdmin, as, startTestServer, type TestServer } from '../support/server.ts';

/** The value of one sample line (`name{labels} value`), or null when the scrape has none. */
function valueOf(text: string, series: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : null;
}

async function scrape(s: TestServer, headers: Record<string, string> = {}, remoteAddress?: string) {
  return s.server.inject({ method: 'GET', url: '/metrics', headers, remoteAddress });
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('GET /metrics: requests by route and status, jobs by phase, ready queue, claims, dispatches, attempts by harness, routing lag, pools', async (t) => {
  const received: ClaimedAttempt[] = [];
  const worker: WorkerDispatcher = { capacity: () => 10 - received.length, dispatch: async (a) => void received.push(a) };
  const s = await startTestServer({
    overrides: { roles: ['api', 'orchestrator'] },
    configure: (c) => c.registerInstance(WorkerDispatcherToken, worker),
  });
  try {
    const { token } = await bootstrapAdmin(s.server);
    const api = as(s.server, token);
    const org = (await api.post('/orgs', { name: 'Metrics' })).body.id;
    const project = (await api.post('/projects', { org_id: org, name: 'Metrics', slug: 'metrics' })).body.id;
    const job = (await api.post(`/projects/${project}/jobs`, { description: 'measure me' })).body;
    t.is(job.phase, 'ready', JSON.stringify(job));
    await until(() => received.length === 1, 'the dispatcher to hand the job over');
    const attempt = received[0];
    const done = await api.post(`/jobs/${job.id}/attempts/${attempt.attemptId}/complete`, {
      lease_token: attempt.leaseToken,
      result: { status: 'success', summary: 'ok' },
    });
    t.is(done.statusCode, 200, JSON.stringify(done.body));
    await api.post(`/projects/${project}/jobs`, { description: 'waits', phase: 'backlog' });

    let text = '';
    await until(async () => {
      text = (await scrape(s)).payload;
      return (valueOf(text, 'svc_event_routing_lag_seconds_count{status="completed"}') ?? 0) > 0;
    }, 'events to be routed');
    const res = await scrape(s);
    t.is(res.statusCode, 200);
    t.regex(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    text = res.payload;

    t.is(valueOf(text, 'svc_http_request_duration_seconds_count{method="POST",route="/projects/{project_id}/jobs",status="201"}'), 2);
    t.is(
      valueOf(text, 'svc_http_request_duration_seconds_count{method="POST",route="/orgs",status="201"}'),
      1,
      'ids never become labels: routes are templates',
    );
    t.is(valueOf(text, 'svc_jobs{phase="done"}'), 1);
    t.is(valueOf(text, 'svc_jobs{phase="backlog"}'), 1);
    t.is(valueOf(text, 'svc_jobs{phase="ready"}'), 0);
    t.is(valueOf(text, 'svc_ready_queue_depth'), 0);
    t.true(valueOf(text, 'svc_job_claim_duration_seconds_count')! >= 1);
    t.is(valueOf(text, 'svc_job_dispatch_duration_seconds_count{outcome="ok"}'), 1);
    t.is(valueOf(text, 'svc_attempt_duration_seconds_count{harness="default",status="succeeded"}'), 1);
    t.is(valueOf(text, 'svc_db_pool_connections{pool="main",state="max"}'), s.kernel.config.database.pool_max);
    t.is(valueOf(text, 'svc_db_pool_connections{pool="control",state="max"}'), s.kernel.config.database.control_pool_max);
    t.regex(text, /^# TYPE svc_webhook_deliveries_total counter$/m, 'the webhooks plugin contributes its counter');
    t.regex(text, /^# TYPE svc_work_ended_total counter$/m, 'the work engine contributes its metrics per queue');
    t.regex(text, /^# TYPE svc_work_items gauge$/m);
    t.regex(text, /^svc_process_resident_memory_bytes \d+/m, 'process metrics are there');

    // Gauges read from the database are reused for a few seconds: a job created now shows in a later scrape.
    await api.post(`/projects/${project}/jobs`, { description: 'later', phase: 'backlog' });
    t.is(valueOf((await scrape(s)).payload, 'svc_jobs{phase="backlog"}'), 1);
  } finally {
    await s.stop();
  }
});

test('GET /metrics without metrics.token: clients on this host only, never through a proxy', async (t) => {
  const s = await startTestServer();
  try {
    t.is((await scrape(s)).statusCode, 200);
    const remote = await scrape(s, {}, '10.1.2.3');
    t.is(remote.statusCode, 403);
    t.regex(JSON.parse(remote.payload).message, /SVC_METRICS_TOKEN/);
    t.is((await scrape(s, { 'x-forwarded-for': '10.1.2.3' })).statusCode, 403);
    t.is((await scrape(s, {}, '::ffff:127.0.0.1')).statusCode, 200);
  } finally {
    await s.stop();
  }
});

test('GET /metrics with metrics.token: the token as a bearer token, from anywhere', async (t) => {
  const metricsToken = 'scrape-secret-0123456789';
  const s = await startTestServer({ env: { SVC_METRICS_TOKEN: metricsToken } });
  try {
    t.is((await scrape(s)).statusCode, 401, 'with a token set, loopback alone is not enough');
    t.is((await scrape(s, { authorization: 'Bearer wrong-token-0123456789' })).statusCode, 401);
    const ok = await scrape(s, { authorization: `Bearer ${metricsToken}` }, '10.1.2.3');
    t.is(ok.statusCode, 200);
    t.regex(ok.payload, /svc_http_request_duration_seconds/);
  } finally {
    await s.stop();
  }
});

test('a process without the api role serves /metrics on its role listener, its own requests counted', async (t) => {
  const s = await startTestServer({ overrides: { roles: ['worker'] } });
  try {
    t.is((await fetch(`${s.url}/health/live`)).status, 200);
    const res = await fetch(`${s.url}/metrics`);
    t.is(res.status, 200);
    const text = await res.text();
    t.is(valueOf(text, 'svc_http_request_duration_seconds_count{method="GET",route="/health/live",status="200"}'), 1);
    t.regex(text, /^svc_db_pool_connections\{pool="control",state="max"\} \d+$/m);
  } finally {
    await s.stop();
  }
});
