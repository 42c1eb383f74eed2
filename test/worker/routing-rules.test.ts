import test from 'ava';
import pino from 'pino';
import type { AttemptCompletion, AttemptControl, AttemptLease } from '../../core/ports/attempts.ts';
import type { ClaimedAttempt, WorkerDispatcher } from '../../core/ports/worker.ts';
import type { RemoteWorker } from '../../plugins/worker/remote.ts';
import { RoutingDispatcher } from '../../plugins/worker/routing.ts';

/**
 * The RoutingDispatcher's rules with stand-ins for the routes (the HTTP side and the claimer are
 * covered end to end in routing.test.ts): where each type goes, the batch size and the full types
 * the claimer reads, and what happens to an attempt no route takes.
 */
const logger = pino({ level: 'silent' });

function localWorker(room: number): WorkerDispatcher & { got: string[]; room: number } {
  const w = { got: [] as string[], room, capacity: () => w.room, dispatch: async (a: ClaimedAttempt) => void w.got.push(a.attemptId) };
  return w;
}

function remote(type: string, room: number, accepts = true) {
  const r = {
    type,
    room,
    got: [] as ClaimedAttempt[],
    capacity: () => r.room,
    dispatch: async (a: ClaimedAttempt) => (accepts ? (r.got.push(a), true) : false),
  };
  return r;
}

function control() {
  const calls: { released: string[]; completed: { id: string; completion: AttemptCompletion }[]; logs: string[] } = { released: [], completed: [], logs: [] };
  const c = {
    release: async (lease: AttemptLease) => void calls.released.push(lease.attemptId),
    complete: async (lease: AttemptLease, completion: AttemptCompletion) => (calls.completed.push({ id: lease.attemptId, completion }), 'cancelled' as const),
    appendLogs: async (_j: string, _a: string, lines: { line: string }[]) => void calls.logs.push(...lines.map((l) => l.line)),
  };
  return { control: c as unknown as AttemptControl, calls };
}

const attempt = (id: string, workerType: string | null): ClaimedAttempt => ({
  jobId: `job-${id}`,
  projectId: 'p',
  attemptId: id,
  attemptNumber: 1,
  leaseToken: 't',
  leaseExpiresAt: new Date(),
  workerType,
});

function routing(local: WorkerDispatcher | null, remotes: ReturnType<typeof remote>[], ctl = control()) {
  const d = new RoutingDispatcher({ local, remotes: remotes as unknown as RemoteWorker[], control: ctl.control, logger, apiUrl: () => 'http://api.example' });
  return { d, calls: ctl.calls };
}

test('types go to their route: none and `default` in-process, a mapped type to its remote (with the API address), `default` to a `default` URL when there is one', async (t) => {
  const local = localWorker(2);
  const py = remote('python-worker', 3);
  const { d } = routing(local, [py]);
  await d.dispatch(attempt('a1', null));
  await d.dispatch(attempt('a2', 'default'));
  await d.dispatch(attempt('a3', 'default-worker'));
  await d.dispatch(attempt('a4', 'python-worker'));
  t.deepEqual(local.got, ['a1', 'a2', 'a3']);
  t.deepEqual(
    py.got.map((a) => [a.attemptId, a.apiUrl]),
    [['a4', 'http://api.example']],
  );

  const def = remote('default', 1);
  const withDefault = routing(localWorker(2), [def]);
  await withDefault.d.dispatch(attempt('b1', null));
  t.deepEqual(
    def.got.map((a) => a.attemptId),
    ['b1'],
  );
});

test('an unconfigured type fails at once and for good, naming the type and the configured ones', async (t) => {
  const { d, calls } = routing(localWorker(2), [remote('python-worker', 1), remote('node-worker', 1)]);
  await d.dispatch(attempt('c1', 'rust-worker'));
  const reason = "worker type 'rust-worker' is not configured (SVC_WORKER_URLS has: python-worker, node-worker)";
  t.deepEqual(calls.completed, [
    { id: 'c1', completion: { result: { status: 'failed', reason }, result_json: { svc: { status: 'failed', reason } }, error: reason, final: true } },
  ]);
  t.deepEqual(calls.logs, [`failed: ${reason}`]);
  t.deepEqual(calls.released, []);

  const empty = routing(localWorker(2), []);
  await empty.d.dispatch(attempt('c2', 'rust-worker'));
  t.is(empty.calls.completed[0].completion.error, "worker type 'rust-worker' is not configured (SVC_WORKER_URLS names no worker types)");
});

test('a route that does not take the attempt gives the job back', async (t) => {
  const local = localWorker(0);
  const { d, calls } = routing(local, [remote('python-worker', 1, false)]);
  await d.dispatch(attempt('d1', 'python-worker'));
  await d.dispatch(attempt('d2', null)); // the local worker filled up after the claim
  t.deepEqual(calls.released, ['d1', 'd2']);
  t.deepEqual(local.got, []);

  const orchestratorOnly = routing(null, [remote('python-worker', 1)]);
  await orchestratorOnly.d.dispatch(attempt('d3', null));
  t.deepEqual(orchestratorOnly.calls.released, ['d3'], 'no default route: never dispatched (the claim skips such jobs), given back if it happens');
});

test('capacity is the smallest room among routes with room; full routes are the types claims skip', (t) => {
  const local = localWorker(3);
  const py = remote('python-worker', 1);
  const node = remote('node-worker', 0);
  const { d } = routing(local, [py, node]);
  t.is(d.capacity(), 1);
  t.deepEqual(d.fullTypes(), ['node-worker']);
  py.room = 0;
  t.is(d.capacity(), 3);
  t.deepEqual(d.fullTypes().sort(), ['node-worker', 'python-worker']);
  local.room = 0;
  t.is(d.capacity(), 1, 'everything full: one at a time, for jobs of unconfigured types (they fail)');
  t.deepEqual(d.fullTypes().sort(), ['default', 'default-worker', 'node-worker', 'python-worker']);

  const orchestratorOnly = routing(null, [remote('python-worker', 2)]);
  t.deepEqual(orchestratorOnly.d.fullTypes(), ['default', 'default-worker'], 'without a default route, untyped jobs are never claimed');
  t.is(orchestratorOnly.d.capacity(), 2);

  const def = remote('default', 0);
  const withDefault = routing(localWorker(5), [def]);
  t.deepEqual(withDefault.d.fullTypes().sort(), ['default', 'default-worker'], 'a `default` URL is the default route, in-process or not');
});
