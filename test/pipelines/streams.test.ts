import http from 'node:http';
import test from 'ava';
import { startTestServer, type TestServer } from '../support/server.ts';
import { claimed, complete, type World } from '../jobs/claim-helpers.ts';
import { finishStep, pipelineWorld, startRun, stepOf } from './helpers.ts';

interface SseEvent {
  id: number;
  event: string;
  data: any;
}

/**
 * Reads a server-sent event stream over real HTTP. `events` fills as frames arrive; `next(n)`
 * waits until n events are in; `done` settles when the server ends the stream.
 */
function openStream(baseUrl: string, path: string, token: string, lastEventId?: number) {
  const events: SseEvent[] = [];
  let waiters: (() => void)[] = [];
  let headers: http.IncomingHttpHeaders = {};
  let status = 0;
  let req!: http.ClientRequest;
  const done = new Promise<void>((resolve, reject) => {
    req = http.get(
      `${baseUrl}${path}`,
      { headers: { authorization: `Bearer ${token}`, ...(lastEventId ? { 'last-event-id': String(lastEventId) } : {}) } },
      (res) => {
        status = res.statusCode ?? 0;
        headers = res.headers;
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const fields = Object.fromEntries(
              frame
                .split('\n')
                .filter((l) => !l.startsWith(':'))
                .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]),
            );
            if (fields.id) events.push({ id: Number(fields.id), event: fields.event, data: JSON.parse(fields.data) });
          }
          for (const w of waiters) w();
        });
        res.on('end', () => {
          for (const w of waiters) w();
          resolve();
        });
      },
    );
    req.on('error', reject);
  });
  let ended = false;
  void done.then(
    () => (ended = true),
    () => (ended = true),
  );
  return {
    events,
    done,
    get status() {
      return status;
    },
    get headers() {
      return headers;
    },
    close: () => req.destroy(),
    /** Waits (up to 10 s) until `n` events arrived or the stream ended. */
    async next(n: number): Promise<SseEvent[]> {
      const deadline = Date.now() + 10_000;
      while (events.length < n && !ended && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
        waiters = [];
      }
      return events;
    },
  };
}

const describe = (e: SseEvent) => (e.event === 'run.status' ? `run ${e.data.status}` : `${e.data.step_name} ${e.data.status}`);

let w: World;
test.before(async () => {
  w = await pipelineWorld('sse');
});
test.after.always(() => w?.ctx.srv.stop());

test.serial('a finished run streams its whole history in order, then the stream ends', async (t) => {
  const run = await startRun(w, 'ship', { only_steps: ['build', 'test'] });
  await finishStep(t, w, run, 'build');
  await finishStep(t, w, run, 'test');
  const stream = openStream(w.ctx.srv.url, `/pipeline-runs/${run.id}/stream`, w.owner.token);
  await stream.done;
  t.is(stream.status, 200);
  t.regex(String(stream.headers['content-type']), /^text\/event-stream/);
  t.deepEqual(stream.events.map(describe), [
    'run pending',
    'build running',
    'run running',
    'build succeeded',
    'test running',
    'test succeeded',
    'run succeeded',
  ]);
  const ids = stream.events.map((e) => e.id);
  t.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
    'ids increase',
  );
  t.like(stream.events[1].data, { run_id: run.id, step_name: 'build', job_id: stepOf(run, 'build').job_id });
});

test.serial('a live stream receives each change as it commits, and resumes after Last-Event-ID', async (t) => {
  const run = await startRun(w, 'ship', { only_steps: ['build', 'test'] });
  const stream = openStream(w.ctx.srv.url, `/pipeline-runs/${run.id}/stream`, w.owner.token);
  t.deepEqual((await stream.next(1)).map(describe), ['run pending']);
  const build = await claimed(t, w, stepOf(run, 'build').job_id);
  t.deepEqual((await stream.next(3)).map(describe), ['run pending', 'build running', 'run running']);
  await complete(w, build.job.id, build.attempt, { status: 'success' });
  t.deepEqual((await stream.next(4)).slice(3).map(describe), ['build succeeded']);
  const seen = stream.events[3].id;
  stream.close();

  await finishStep(t, w, run, 'test');
  const resumed = openStream(w.ctx.srv.url, `/pipeline-runs/${run.id}/stream`, w.owner.token, seen);
  await resumed.done;
  t.deepEqual(resumed.events.map(describe), ['test running', 'test succeeded', 'run succeeded'], 'only what came after the last seen event');
  const byQuery = openStream(w.ctx.srv.url, `/pipeline-runs/${run.id}/stream?last_event_id=${resumed.events[1].id}`, w.owner.token);
  await byQuery.done;
  t.deepEqual(byQuery.events.map(describe), ['run succeeded']);
});

test.serial('a step stream carries only that step and ends when the step ends', async (t) => {
  const run = await startRun(w, 'ship', { only_steps: ['build', 'test'] });
  const stream = openStream(w.ctx.srv.url, `/pipeline-runs/${run.id}/steps/test/stream`, w.owner.token);
  await finishStep(t, w, run, 'build');
  await finishStep(t, w, run, 'test');
  await stream.done;
  t.deepEqual(stream.events.map(describe), ['test running', 'test succeeded']);
  const missing = await w.owner.api.get(`/pipeline-runs/${run.id}/steps/nope/stream`);
  t.is(missing.statusCode, 404);
  t.is(missing.body.message, `pipeline run ${run.id} has no step nope`);
});

test.serial('a cancelled run ends its stream after the cancel events', async (t) => {
  const run = await startRun(w, 'approve-first');
  const stream = openStream(w.ctx.srv.url, `/pipeline-runs/${run.id}/stream`, w.owner.token);
  await stream.next(3);
  await w.owner.api.post(`/pipeline-runs/${run.id}/cancel`, { reason: 'no' });
  await stream.done;
  t.deepEqual(stream.events.map(describe), [
    'run pending',
    'hold awaiting_approval',
    'run awaiting_approval',
    'hold cancelled',
    'go cancelled',
    'run cancelled',
  ]);
});

test.serial('a stream on another server of the same database hears through NOTIFY', async (t) => {
  let replica: TestServer | null = null;
  try {
    replica = await startTestServer({ database: { url: w.ctx.srv.kernel.databaseUrl, drop: async () => {} } });
    const run = await startRun(w, 'ship', { only_steps: ['build'] });
    const stream = openStream(replica.url, `/pipeline-runs/${run.id}/stream`, w.owner.token);
    await stream.next(1);
    const started = Date.now();
    await finishStep(t, w, run, 'build');
    await stream.done;
    t.deepEqual(stream.events.map(describe), ['run pending', 'build running', 'run running', 'build succeeded', 'run succeeded']);
    t.true(Date.now() - started < 12_000, 'pushed, not found by the 15 s keep-alive');
  } finally {
    await replica?.stop();
  }
});
