import { writeFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';
import { HarnessRegistryToken, type HarnessDefinition, type HarnessEvent, type HarnessRegistry } from '../../core/ports/harness.ts';
import { attemptsOf, finished, logLines, until, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * An agent job through a harness registry: the harness builds the invocation, its stream is parsed
 * into events (streamed message fragments joined, usage recorded), and the json-result block ends it.
 * The registry and harness here are minimal stand-ins: the built-in harnesses have their own tests.
 */
const PROVIDER_KEY = 'provider-key-0123456789';
let w: WorkerWorld;
let cli = '';
const built: { prompt: string; model?: string; env: Record<string, string> }[] = [];

const fake: HarnessDefinition = {
  id: 'fake',
  description: 'a fake CLI speaking JSON lines',
  build: (input) => {
    built.push({ prompt: input.prompt, model: input.model, env: input.env });
    return { command: process.execPath, args: [cli], env: { FAKE_KEY: input.env.FAKE_KEY }, files: { 'prompt.txt': input.prompt }, readPaths: [cli] };
  },
  parseLine: (line): HarnessEvent[] => {
    try {
      const e = JSON.parse(line);
      if (e.t === 'delta') return [{ type: 'message', text: e.text, delta: true }];
      if (e.t === 'text') return [{ type: 'message', text: e.text }];
      if (e.t === 'usage')
        return [{ type: 'usage', model: e.model, inputTokens: e.in, outputTokens: e.out, cacheReadTokens: 5, cacheWriteTokens: 2, durationMs: 40 }];
      if (e.t === 'tool') return [{ type: 'tool', name: e.name }];
      if (e.t === 'plan') return [{ type: 'progress', message: e.message, percentage: e.pct }];
      return [];
    } catch {
      return [{ type: 'raw', text: line }];
    }
  },
};

const registry: HarnessRegistry = {
  get: (id) => (id === 'fake' ? fake : undefined),
  list: () => [fake],
  auth: async () => ({ available: true, reason: 'fake', instructions: [] }),
  credentials: async () => ({ FAKE_KEY: PROVIDER_KEY }),
  resolve: async () => ({ harness: 'fake', model: 'fake-model-1', source: 'server_default', profile: null, fallbacks: [], dropped: [] }),
};

const SCRIPT = `
const fs = require('node:fs');
const out = (e) => console.log(JSON.stringify(e));
out({ t: 'text', text: 'Prompt was: ' + fs.readFileSync('prompt.txt', 'utf8') });
out({ t: 'tool', name: 'edit' });
out({ t: 'plan', message: 'Editing', pct: 0 });
out({ t: 'plan', message: 'Editing again', pct: 0 });
out({ t: 'plan', message: 'Testing', pct: 50 });
console.error('using key ' + process.env.FAKE_KEY);
out({ t: 'usage', model: 'fake-model-1', in: 120, out: 30 });
out({ t: 'delta', text: 'Done.\\n\\u0060\\u0060\\u0060json-' });
out({ t: 'delta', text: 'result\\n{"svc":{"status":"success","summary":"agent ok"}}\\n\\u0060\\u0060' });
out({ t: 'delta', text: '\\u0060' });
out({ t: 'usage', model: 'fake-model-1', in: 80, out: 10 });
out({ t: 'text', text: 'bye' });
`;

test.before(async () => {
  w = await workerWorld('wagent', { configure: (c) => c.registerInstance(HarnessRegistryToken, registry) });
  cli = path.join(w.scratch, 'fake-cli.cjs');
  writeFileSync(cli, SCRIPT);
});
test.after.always(() => w?.stop());

test.serial('a job without hints.step runs as an agent with its description as the prompt, through the harness registry', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Fix the flaky test' });
  const job = await finished(w, created.body.id);
  const [attempt] = await attemptsOf(w, job.id);
  t.is(job.phase, 'done', JSON.stringify(attempt));
  t.like(attempt, { status: 'succeeded', result_summary: 'agent ok' });
  t.deepEqual(attempt.result_json, { svc: { status: 'success', summary: 'agent ok' } });
  const b = built.at(-1)!;
  t.is(b.prompt, 'Fix the flaky test');
  t.is(b.model, 'fake-model-1');
  t.is(b.env.SVC_JOB_ID, job.id);
  t.is(b.env.FAKE_KEY, PROVIDER_KEY);

  const lines = await logLines(w, job.id, attempt.id);
  const of = (stream: string) => lines.filter((l) => l.stream === stream).map((l) => l.line);
  t.deepEqual(of('stdout'), [
    'Prompt was: Fix the flaky test',
    '[tool] edit',
    '[progress] 0% Editing',
    '[progress] 0% Editing again',
    '[progress] 50% Testing',
    'Done.',
    '```json-result',
    '{"svc":{"status":"success","summary":"agent ok"}}',
    '```',
    'bye',
  ]);
  t.deepEqual(of('stderr'), ['using key ***'], 'stderr lines the parser has nothing for are kept raw, masked');
  t.true(lines.some((l) => l.line === `started fake (${process.execPath})`));
  const progress = await w.srv.kernel
    .db('events')
    .where({ source: 'runner', type: 'runner.progress' })
    .whereRaw("payload_json->>'job_id' = ?", [job.id])
    .orderBy('created_at');
  t.deepEqual(
    progress.map((e: any) => e.payload_json),
    [
      { attempt_id: attempt.id, job_id: job.id, attemptId: attempt.id, jobId: job.id, message: 'Editing', percentage: 0 },
      { attempt_id: attempt.id, job_id: job.id, attemptId: attempt.id, jobId: job.id, message: 'Testing', percentage: 50 },
    ],
    'a new message at the same percentage within a second is not another event',
  );

  const usage = await w.srv.kernel.db('attempt_usage').where({ attempt_id: attempt.id }).orderBy('id');
  t.deepEqual(
    usage.map((u: any) => [u.model, u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.duration_ms]),
    [
      ['fake-model-1', 120, 30, 5, 2, 40],
      ['fake-model-1', 80, 10, 5, 2, 40],
    ],
  );
  const receipt = await w.api.get(`/jobs/${job.id}/receipt`);
  t.is(receipt.statusCode, 200);
  t.like(receipt.body.llm, { input_tokens: 200, output_tokens: 40, cache_read_tokens: 10, cache_write_tokens: 4, duration_ms: 80 });
  t.deepEqual(Object.keys(receipt.body.timing.phases), ['provision', 'workspace', 'clone', 'execute', 'diff']);
});

test.serial('an agent step whose output has no json-result block fails saying so', async (t) => {
  writeFileSync(path.join(w.scratch, 'quiet-cli.cjs'), `console.log(JSON.stringify({ t: 'text', text: 'I did things' }))`);
  const previous = cli;
  cli = path.join(w.scratch, 'quiet-cli.cjs');
  try {
    const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
      description: 'Quiet',
      hints: { step: { kind: 'agent', agent: { name: 'reviewer' } } },
    });
    const job = await finished(w, created.body.id);
    const [attempt] = await attemptsOf(w, job.id);
    t.like(attempt, {
      status: 'failed',
      error: 'no json-result block in the output: the agent must end with a fenced json-result block whose svc.status is success, waiting or failed',
    });
    t.is(built.at(-1)!.env.SVC_AGENT_ID, 'reviewer');
  } finally {
    cli = previous;
  }
});

test.serial('usage over hints.max_tokens kills the running agent: the attempt fails with BUDGET_EXCEEDED', async (t) => {
  // Reports 157 tokens (120 in, 30 out, 5 cache reads, 2 cache writes), then would run for a minute unless killed.
  writeFileSync(
    path.join(w.scratch, 'spender-cli.cjs'),
    `
    console.log(JSON.stringify({ t: 'usage', model: 'fake-model-1', in: 120, out: 30 }));
    setTimeout(() => console.log(JSON.stringify({ t: 'text', text: 'still here' })), 60_000);
  `,
  );
  const previous = cli;
  cli = path.join(w.scratch, 'spender-cli.cjs');
  try {
    const started = Date.now();
    const created = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Spend', hints: { max_tokens: 100 } });
    const job = await finished(w, created.body.id);
    t.true(Date.now() - started < 30_000, 'killed, not run to its end');
    t.is(job.phase, 'cancelled');
    const reason = 'BUDGET_EXCEEDED: 157 tokens used, over hints.max_tokens 100';
    const [attempt] = await attemptsOf(w, job.id);
    t.like(attempt, { status: 'failed', error: reason });
    const runner = await w.srv.kernel.db('events').where({ source: 'runner', type: 'runner.failed' }).whereRaw("payload_json->>'job_id' = ?", [job.id]);
    t.deepEqual(
      runner.map((e: any) => e.payload_json),
      [{ attempt_id: attempt.id, job_id: job.id, attemptId: attempt.id, jobId: job.id, error: reason, exit_code: null, exitCode: null }],
    );
    // The worker logs `stopped: …` once the killed process has ended (a minute later if it were not killed).
    const lines = await until(
      async () => {
        const all = await logLines(w, job.id, attempt.id);
        return all.some((l) => l.stream === 'system' && l.line.startsWith('stopped: ') && l.line.endsWith(reason)) ? all : null;
      },
      'the stopped line',
      20_000,
    );
    t.false(lines.some((l) => l.line.includes('still here')));
  } finally {
    cli = previous;
  }
});
