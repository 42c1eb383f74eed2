import { AttemptLogs } from '../plugins/jobs/logs/attempt-logs.ts';
import { ascending, checkRow, fmt, goalRow, kernelWithProject, knob, percentile, printTable, type Row } from './lib.ts';

const STREAMS = knob('BENCH_STREAMS', 1000);
const CREATES = knob('BENCH_STREAM_CREATES', 200);
const WARMUP = 20;
/** Jobs printing while they are followed, and lines each prints per second. */
const PRINTING_JOBS = 10;
const LINES_PER_SECOND = 4;

/** Job create latency over HTTP, one create at a time. */
async function creates(url: string, token: string, projectId: string, n: number): Promise<Float64Array> {
  const latencies: number[] = [];
  for (let i = 0; i < n; i++) {
    const at = performance.now();
    const res = await fetch(`${url}/projects/${projectId}/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ description: `bench ${i}` }),
    });
    await res.arrayBuffer();
    if (res.status !== 201) throw new Error(`create: ${res.status}`);
    latencies.push(performance.now() - at);
  }
  return ascending(latencies);
}

/** Job create latency with no stream open, then with `STREAMS` idle server-sent-event streams of one running attempt's log. */
export async function runStreamsBench(): Promise<string[]> {
  const failures: string[] = [];
  const rows: Row[] = [];
  const k = await kernelWithProject(['api']);
  const aborts = new AbortController();
  try {
    const { url } = k.srv;
    const bearer = k.token;
    const job = (await k.api.post(`/projects/${k.projectId}/jobs`, { description: 'streamed' })).body;
    const attempt = (await k.api.post(`/jobs/${job.id}/claim`, { lease_seconds: 3600 })).body.attempt;
    await creates(url, bearer, k.projectId, WARMUP);
    const quiet = await creates(url, bearer, k.projectId, CREATES);
    let opened = 0;
    for (let i = 0; i < STREAMS; i++) {
      const res = await fetch(`${url}/jobs/${job.id}/attempts/${attempt.id}/logs/stream`, {
        headers: { authorization: `Bearer ${bearer}` },
        signal: aborts.signal,
      });
      const reader = res.body!.getReader();
      await reader.read();
      if (res.status === 200) opened++;
    }
    await creates(url, bearer, k.projectId, WARMUP);
    const busy = await creates(url, bearer, k.projectId, CREATES);
    aborts.abort();
    const active = await withActiveFollowers(k, () => creates(url, bearer, k.projectId, CREATES));
    const p50 = [percentile(quiet, 50), percentile(busy, 50), percentile(active.latencies, 50)];
    rows.push({ scenario: 'no stream open', figure: 'job create p50 / p99', value: `${fmt.ms(p50[0])} / ${fmt.ms(percentile(quiet, 99))}` });
    rows.push({ scenario: `${STREAMS} idle streams`, figure: 'job create p50 / p99', value: `${fmt.ms(p50[1])} / ${fmt.ms(percentile(busy, 99))}` });
    rows.push(goalRow(`${STREAMS} idle streams`, 'job create p50, against none open', p50[1] / p50[0], (r) => `${r.toFixed(2)}×`, { atMost: 1.5 }));
    rows.push(checkRow(`${STREAMS} idle streams`, 'streams open', String(opened), String(STREAMS), opened === STREAMS, failures));
    const following = `${STREAMS} followers of ${PRINTING_JOBS} printing jobs`;
    rows.push({ scenario: following, figure: 'job create p50 / p99', value: `${fmt.ms(p50[2])} / ${fmt.ms(percentile(active.latencies, 99))}` });
    rows.push(goalRow(following, 'job create p50, against none open', p50[2] / p50[0], (r) => `${r.toFixed(2)}×`, { atMost: 1.5 }));
    rows.push({ scenario: following, figure: 'lines printed / delivered', value: `${active.printed} / ${active.delivered}` });
    rows.push(
      checkRow(
        following,
        'every line reached every follower',
        String(active.delivered),
        String(active.printed * STREAMS),
        active.delivered === active.printed * STREAMS,
        failures,
      ),
    );
  } finally {
    aborts.abort();
    await k.srv.stop();
  }
  printTable('svc idle streams benchmark', rows, [
    `job creates over HTTP, one at a time (${CREATES} measured after ${WARMUP} warm-up), against the server in this process; then again with ${STREAMS} log streams of one claimed attempt held open and idle`,
    `then with ${STREAMS} streams following ${PRINTING_JOBS} claimed attempts (${STREAMS / PRINTING_JOBS} each) that print ${LINES_PER_SECOND} lines a second each (appended as the worker appends them); the followers of one log share its reads`,
    'an idle stream holds no database connection and sends no query (one shared LISTEN per bus, keep-alive comments only), so the two should be within noise',
    'knobs BENCH_STREAMS, BENCH_STREAM_CREATES',
  ]);
  return failures;
}

/** Runs `measure` while `STREAMS` clients follow `PRINTING_JOBS` attempts that print; then checks each follower got every line. */
async function withActiveFollowers(k: Awaited<ReturnType<typeof kernelWithProject>>, measure: () => Promise<Float64Array>) {
  const logs = k.srv.kernel.container.resolve(AttemptLogs);
  const aborts = new AbortController();
  const attempts: { jobId: string; attemptId: string }[] = [];
  for (let i = 0; i < PRINTING_JOBS; i++) {
    const job = (await k.api.post(`/projects/${k.projectId}/jobs`, { description: `printing ${i}` })).body;
    const claimed = (await k.api.post(`/jobs/${job.id}/claim`, { lease_seconds: 3600 })).body.attempt;
    attempts.push({ jobId: job.id, attemptId: claimed.id });
  }
  let delivered = 0;
  const reading: Promise<void>[] = [];
  for (let i = 0; i < STREAMS; i++) {
    const { jobId, attemptId } = attempts[i % PRINTING_JOBS];
    const res = await fetch(`${k.srv.url}/jobs/${jobId}/attempts/${attemptId}/logs/stream`, {
      headers: { authorization: `Bearer ${k.token}` },
      signal: aborts.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    reading.push(
      (async () => {
        const decoder = new TextDecoder();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          delivered += decoder.decode(value, { stream: true }).split('event: log\n').length - 1;
        }
      })().catch(() => undefined),
    );
  }
  let printed = 0;
  let seq = 0;
  const printer = setInterval(() => {
    seq++;
    printed++;
    for (const a of attempts) void logs.append(a.jobId, a.attemptId, [{ seq, stream: 'stdout', line: `line ${seq}`, at: new Date() }]);
  }, 1000 / LINES_PER_SECOND);
  try {
    const latencies = await measure();
    clearInterval(printer);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // the last lines reach their followers
    return { latencies, printed, delivered };
  } finally {
    clearInterval(printer);
    aborts.abort();
    await Promise.all(reading);
  }
}
