import test from 'ava';
import type { ClaimedAttempt, WorkerDispatcher } from '../../core/ports/worker.ts';
import { WorkerDispatcherToken } from '../../core/ports/worker.ts';
import { createTestDatabase, type TestDatabase } from '../support/database.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

/** A worker stand-in that the test drives: it records what it is handed and runs nothing. */
function recordingWorker(capacity = 1000): WorkerDispatcher & { received: ClaimedAttempt[] } {
  const received: ClaimedAttempt[] = [];
  return { received, capacity: () => capacity - received.length, dispatch: async (a) => void received.push(a) };
}

async function orchestrator(worker: WorkerDispatcher | null, database?: TestDatabase): Promise<TestServer> {
  return startTestServer({
    database,
    overrides: { roles: ['api', 'orchestrator'], adapters: { scheduler: { use: 'agenda', options: { process_every_ms: 500 } } } },
    configure: (c) => {
      if (worker) c.registerInstance(WorkerDispatcherToken, worker);
    },
  });
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

async function projectFor(s: TestServer, slug: string) {
  const admin = as(s.server, (await bootstrapAdmin(s.server)).token);
  const org = (await admin.post('/orgs', { name: `Dispatch ${slug}` })).body.id;
  const project = (await admin.post('/projects', { org_id: org, name: slug, slug })).body.id;
  const create = async (body: Record<string, unknown> = {}) => (await admin.post(`/projects/${project}/jobs`, { description: 'work', ...body })).body;
  return { admin, project, create };
}

test('the orchestrator claims ready jobs as they appear and hands them to the worker', async (t) => {
  const worker = recordingWorker();
  const s = await orchestrator(worker);
  try {
    const { admin, create } = await projectFor(s, 'disp1');
    const jobs = [await create({ priority: 3 }), await create({ priority: 0 }), await create()];
    await until(() => worker.received.length === 3, 'three dispatches');
    t.deepEqual(worker.received.map((a) => a.jobId).sort(), jobs.map((j) => j.id).sort());
    for (const job of jobs) t.is((await admin.get(`/jobs/${job.id}`)).body.phase, 'active');
    for (const a of worker.received) {
      t.is(a.attemptNumber, 1);
      t.truthy(a.leaseToken);
      t.true(a.leaseExpiresAt.getTime() > Date.now());
    }
  } finally {
    await s.stop();
  }
});

test('a blocked job is dispatched only once its blocker finishes (woken by the blocker completing)', async (t) => {
  const worker = recordingWorker();
  const s = await orchestrator(worker);
  try {
    const { admin, create } = await projectFor(s, 'disp2');
    const first = await create({ phase: 'backlog' });
    const second = await create({ phase: 'backlog' });
    t.is((await admin.post(`/jobs/${second.id}/dependencies`, { related_job_id: first.id, relation_type: 'blocked_by' })).statusCode, 201);
    await admin.patch(`/jobs/${second.id}`, { phase: 'ready' });
    await admin.patch(`/jobs/${first.id}`, { phase: 'ready' });
    await until(() => worker.received.length === 1, 'the blocker dispatched');
    const [attempt] = worker.received;
    t.is(attempt.jobId, first.id);
    await new Promise((r) => setTimeout(r, 300));
    t.is(worker.received.length, 1, 'the blocked job waits');
    const done = await admin.post(`/jobs/${first.id}/attempts/${attempt.attemptId}/complete`, {
      lease_token: attempt.leaseToken,
      result: { status: 'success' },
    });
    t.is(done.statusCode, 200, JSON.stringify(done.body));
    await until(() => worker.received.length === 2, 'the unblocked job dispatched');
    t.is(worker.received[1].jobId, second.id);
  } finally {
    await s.stop();
  }
});

test('without a worker dispatcher the orchestrator claims nothing: jobs stay ready for external claims', async (t) => {
  const s = await orchestrator(null);
  try {
    const { admin, create } = await projectFor(s, 'disp3');
    const job = await create();
    await new Promise((r) => setTimeout(r, 1500));
    t.is((await admin.get(`/jobs/${job.id}`)).body.phase, 'ready');
  } finally {
    await s.stop();
  }
});

test('two orchestrators on one database dispatch every job exactly once', async (t) => {
  const database = await createTestDatabase();
  const workers = [recordingWorker(), recordingWorker()];
  const servers = await Promise.all(workers.map((w) => orchestrator(w, database)));
  try {
    const { create } = await projectFor(servers[0], 'disp4');
    const jobs: { id: string }[] = [];
    for (let i = 0; i < 120; i++) jobs.push(await create({ hints: i % 10 === 0 ? { gates: ['deploy'] } : {} }));
    const dispatched = () => workers.flatMap((w) => w.received);
    // Gated jobs run one at a time; the gate stays held by the first (nothing completes it).
    await until(() => dispatched().length >= 108 + 1, 'the ungated jobs and one gated job', 30_000);
    await new Promise((r) => setTimeout(r, 500));
    const ids = dispatched().map((a) => a.jobId);
    t.is(new Set(ids).size, ids.length, 'no job dispatched twice');
    t.is(ids.filter((id) => jobs.findIndex((j) => j.id === id) % 10 === 0).length, 1, 'one job holds the deploy gate');
    t.true(
      workers.every((w) => w.received.length > 0),
      'both orchestrators took work',
    );
  } finally {
    for (const s of servers) await s.stop();
    await database.drop();
  }
});
