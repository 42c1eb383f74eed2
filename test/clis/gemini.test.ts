// harness_e against the real Gemini CLI (test/clis/support/clis.ts pins the version), through svc end
// to end: a server with every role runs the job on a real git repository; the CLI talks to a scripted
// Gemini API server on loopback (GOOGLE_GEMINI_BASE_URL), key and URL as system secrets shared with jobs.
import test from 'ava';
import { cliBin, PINNED, versionOf } from './support/clis.ts';
import { GEMINI_USAGE, startGeminiServer, type GeminiRequest, type GeminiServer, type GeminiTurn } from './support/gemini-server.ts';
import { ChatServer, chatTokens, functionNamed, type ChatTurn } from './support/chat-server.ts';
import { cliWorld, committedPaths, ended, fileAt, groupsAlive, jobProcesses, PRICE, startJob, until, type CliWorld } from './support/svc-job-world.ts';
import { git, logLines } from '../worker/helpers.ts';

const KEY = 'gk-conformance-gemini-0123456789';
const MODEL = 'gemini-conf-1';
const RESULT = '```json-result\n{"svc": {"status": "success", "summary": "wrote hello.txt"}}\n```';
const WRITE: GeminiTurn[] = [{ writeFile: { path: 'hello.txt', content: 'hello from gemini\n' } }, { text: `I created hello.txt.\n\n${RESULT}` }];

let w: CliWorld;
let fake: GeminiServer;
test.before(async () => {
  fake = await startGeminiServer((body) => (body.includes('[[hang]]') ? [{ hang: true }] : WRITE), { apiKey: KEY });
  w = await cliWorld('gmconf', 'harness_e', cliBin('gemini'), { GEMINI_API_KEY: KEY, GOOGLE_GEMINI_BASE_URL: fake.url }, MODEL);
});
test.after.always(async () => {
  await w?.stop();
  await fake?.stop();
});

/**
 * The tokens the receipt should show per model for these requests: prompt tokens include the cached
 * ones. Not the calls: the CLI reports one total per model at the end, not each request.
 */
function expectedTokens(requests: GeminiRequest[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const r of requests) {
    const m = (out[r.model] ??= { input_tokens: 0, cache_read_tokens: 0, output_tokens: 0 });
    m.input_tokens += GEMINI_USAGE.prompt - GEMINI_USAGE.cached;
    m.cache_read_tokens += GEMINI_USAGE.cached;
    m.output_tokens += GEMINI_USAGE.candidates;
  }
  return out;
}

/** Runs one job serially: the requests the fake got while it ran are its own. */
async function run(body: Record<string, unknown>) {
  const from = fake.requests.length;
  const id = await startJob(w, body);
  const result = await ended(w, id);
  return { id, ...result, requests: fake.requests.slice(from) };
}

test.serial('a job writes a file with write_file, reports through json-result, and the commit holds exactly that file', async (t) => {
  const { id, job, attempt, logs, receipt, requests } = await run({
    description: 'Create hello.txt saying hello',
    harness: 'harness_e',
    model: MODEL,
    git: { branch: 'gemini/${job_id}', commit: 'auto', push: 'required' },
  });
  t.is(job.phase, 'done', `${JSON.stringify(attempt)}\n${logs}\nserver: ${requests.map((r) => r.error).join('; ')}`);
  t.like(attempt, { status: 'succeeded', result_summary: 'wrote hello.txt' });

  const turns = requests.filter((r) => r.turn !== null);
  t.deepEqual(
    turns.map((r) => [r.turn, r.tool ?? null]),
    [
      [0, 'write_file'],
      [1, null],
    ],
  );
  for (const r of requests) {
    t.is(r.headers['x-goog-api-key'], KEY);
    t.is(r.model, MODEL, `the job model reaches every request: ${r.url}`);
  }
  t.true(
    turns.every((r) => r.stream),
    'the main loop streams (streamGenerateContent?alt=sse)',
  );
  t.regex(JSON.stringify(turns[1].body.contents), /"functionResponse"/, 'the tool result went back to the model');
  t.regex(logs, /\[tool\] write_file/, 'the tool call is in the attempt log');

  t.deepEqual(committedPaths(w, `gemini/${id}`), ['hello.txt'], 'the commit holds the agent change only: nothing under .svc/, no CLI settings');
  t.is(fileAt(w, `gemini/${id}`, 'hello.txt'), 'hello from gemini');

  const expected = expectedTokens(requests);
  t.deepEqual(Object.keys(receipt.llm.models), [MODEL], JSON.stringify(receipt));
  t.like(receipt.llm.models[MODEL], expected[MODEL], JSON.stringify(receipt.llm));
  const e = expected[MODEL];
  const cost = (e.input_tokens * PRICE.input + e.output_tokens * PRICE.output + e.cache_read_tokens * PRICE.cache_read) / 1e6;
  t.is(receipt.llm.models[MODEL].cost_usd, Math.round(cost * 1e6) / 1e6);
  t.like(receipt.cost, { price_table: w.cardId, pricing: 'priced' });
});

test.serial('a job naming no model: the router picks the models, and the receipt names each one used with its tokens', async (t) => {
  const { job, attempt, logs, receipt, requests } = await run({ description: 'Create hello.txt', harness: 'harness_e' });
  t.is(job.phase, 'done', `${JSON.stringify(attempt)}\n${logs}`);
  t.true(
    requests.some((r) => r.turn === null),
    'a side call (the router) came first and did not take a turn of the script',
  );
  const expected = expectedTokens(requests);
  t.deepEqual(Object.keys(receipt.llm.models).sort(), Object.keys(expected).sort(), JSON.stringify(receipt.llm));
  for (const [model, tokens] of Object.entries(expected)) t.like(receipt.llm.models[model], tokens, model);
});

test.serial('policy never (plan mode): the CLI refuses the write; the job ends without a change', async (t) => {
  const { id, job, attempt, logs, requests } = await run({
    description: 'Create hello.txt',
    harness: 'harness_e',
    model: MODEL,
    hints: { permission_policy: 'never' },
    git: { branch: 'never/${job_id}', commit: 'auto', push: 'on_success' },
  });
  t.is(job.phase, 'done', `${JSON.stringify(attempt)}\n${logs}`);
  const turns = requests.filter((r) => r.turn !== null);
  t.true(turns.length >= 2, JSON.stringify(turns.map((r) => r.url)));
  const response = JSON.stringify(turns[1].body.contents.flatMap((c: any) => c.parts).filter((p: any) => p.functionResponse));
  t.notRegex(response, /Successfully/i, response);
  t.regex(response, /error|not (found|allowed|available)|plan mode|denied|refus/i, response);
  t.deepEqual(attempt.git.commits, [], 'nothing to commit');
  t.throws(() => committedPaths(w, `never/${id}`), undefined, 'no branch was pushed');
});

test.serial('cancelling a running job kills the CLI and every process it started', async (t) => {
  const from = fake.requests.length;
  const id = await startJob(w, { description: 'Wait [[hang]]', harness: 'harness_e', model: MODEL });
  await until(async () => fake.requests.slice(from).some((r) => r.turn !== null), 'the CLI to call the model', 60_000);
  const procs = jobProcesses(id);
  t.true(procs.length >= 2, `the CLI runs with its children: ${JSON.stringify(procs)}`);
  const cancelled = await w.api.patch(`/jobs/${id}`, { phase: 'cancelled', close_reason: 'conformance' });
  t.is(cancelled.statusCode, 200, JSON.stringify(cancelled.body));
  const { job, attempt } = await ended(w, id);
  t.is(job.phase, 'cancelled');
  t.like(attempt, { status: 'cancelled' });
  const pgids = [...new Set(procs.map((p) => p.pgid))];
  await until(async () => !groupsAlive(pgids) && jobProcesses(id).length === 0, 'every process of the job to end', 15_000);
  t.pass();
});

test.serial('the auth status finds the CLI and says when its version is not the one tested', async (t) => {
  const auth = (await w.api.get('/harnesses/harness_e')).body.auth;
  t.true(auth.available, JSON.stringify(auth));
  if (versionOf('gemini') === PINNED.gemini.version) t.true(auth.reason.includes(`found (version ${PINNED.gemini.version}, as tested)`), auth.reason);
  else t.regex(auth.reason, new RegExp(`version ${versionOf('gemini').replace(/\./g, '\\.')} is (older|newer)`), auth.reason);
});

test.serial('on a managed model the CLI reaches the upstream through svc with its job token: the gateway holds the key and meters the calls', async (t) => {
  // The upstream speaks chat completions: svc's gateway translates the CLI's Gemini requests both ways.
  const upstream = await new ChatServer([
    (body) => {
      const name = functionNamed(body, 'write_file');
      const props = body.tools.find((x: any) => x.function.name === name).function.parameters?.properties ?? {};
      const pathKey = ['file_path', 'absolute_path', 'path'].find((k) => k in props) ?? 'file_path';
      return { toolCalls: [{ name, arguments: { [pathKey]: 'hello.txt', content: 'hello from gemini\n' } }] };
    },
    { text: `I created hello.txt.\n\n${RESULT}` },
  ]).start();
  try {
    const target = await w.api.post('/inference/targets', {
      name: 'gemini-upstream',
      kind: 'openai',
      base_url: `${upstream.url}/v1`,
      credential_secret: 'GEMINI_API_KEY',
    });
    t.is(target.statusCode, 201, JSON.stringify(target.body));
    const model = await w.api.post('/inference/managed-models', { name: 'gemini-managed', target_id: target.body.id, upstream_model: MODEL });
    t.is(model.statusCode, 201, JSON.stringify(model.body));
    const id = await startJob(w, {
      description: 'Create hello.txt saying hello',
      harness: 'harness_e',
      model: 'managed/gemini-managed',
      git: { branch: 'geminim/${job_id}', commit: 'auto', push: 'required' },
    });
    const { job, attempt, logs, receipt } = await ended(w, id);
    t.is(job.phase, 'done', `${JSON.stringify(attempt)}\n${logs}`);
    t.regex(logs, /model managed\/gemini-managed: .*through svc's inference/);
    t.deepEqual(committedPaths(w, `geminim/${id}`), ['hello.txt']);
    t.is(fileAt(w, `geminim/${id}`, 'hello.txt'), 'hello from gemini');
    const calls = upstream.requests.filter((r) => r.method === 'POST');
    t.true(upstream.requests.filter((r) => r.scripted).length === 2, 'the tool call and the answer went through the gateway');
    for (const r of calls) {
      t.is(r.headers.authorization, `Bearer ${KEY}`, "the upstream sees the target's key, which only svc holds");
      t.is(r.body.model, MODEL, 'the gateway asks for the upstream model');
    }
    t.like(receipt.llm, { calls: calls.length }, `every call the gateway made is on the receipt: ${JSON.stringify(receipt.llm)}`);
  } finally {
    await upstream.stop();
  }
});

test.serial(
  'over its budget on a managed model: the call after the one that reached hints.max_tokens is refused by the gateway in Gemini shape, the attempt ends BUDGET_EXCEEDED, the CLI says why, nothing after runs',
  async (t) => {
    const script: ChatTurn[] = [
      (body) => {
        const name = functionNamed(body, 'write_file');
        const props = body.tools.find((x: any) => x.function.name === name).function.parameters?.properties ?? {};
        const pathKey = ['file_path', 'absolute_path', 'path'].find((k) => k in props) ?? 'file_path';
        return { toolCalls: [{ name, arguments: { [pathKey]: 'hello.txt', content: 'hello from gemini\n' } }] };
      },
      { text: `I created hello.txt.\n\n${RESULT}` },
    ];
    const upstream = await new ChatServer(script).start();
    try {
      const target = await w.api.post('/inference/targets', {
        name: 'gemini-budget',
        kind: 'openai',
        base_url: `${upstream.url}/v1`,
        credential_secret: 'GEMINI_API_KEY',
      });
      t.is(target.statusCode, 201, JSON.stringify(target.body));
      const entry = await w.api.post('/inference/managed-models', { name: 'gemini-budget', target_id: target.body.id, upstream_model: MODEL });
      t.is(entry.statusCode, 201, JSON.stringify(entry.body));
      const BUDGET = 3000;
      // Turn 1 (write_file) takes the usage reported so far to exactly the budget: the CLI writes and
      // asks again, and that call is the one the gateway refuses.
      upstream.reachTokens(BUDGET);
      const id = await startJob(w, {
        description: 'Create hello.txt saying hello',
        harness: 'harness_e',
        model: 'managed/gemini-budget',
        hints: { max_tokens: BUDGET, max_attempts: 1 },
        git: { branch: 'geminib/${job_id}', commit: 'auto', push: 'on_success' },
      });
      const { job, attempt, receipt } = await ended(w, id);
      t.is(job.phase, 'cancelled', 'the failed attempt ends the job (max_attempts 1)');
      t.like(attempt, { status: 'failed', error: `BUDGET_EXCEEDED: ${BUDGET} tokens used, at hints.max_tokens ${BUDGET}` }, JSON.stringify(attempt));
      t.is(attempt.result_json?.error_code, 'BUDGET_EXCEEDED');
      const logs = await until(
        async () => {
          const lines = (await logLines(w, id, attempt.id)).map((l) => l.line).join('\n');
          return /^(process ended|stopped:)/m.test(lines) && jobProcesses(id).length === 0 ? lines : null;
        },
        'the CLI to end and its last lines to be logged',
        30_000,
      );
      t.regex(logs, /model call refused: BUDGET_EXCEEDED/, `the CLI shows the gateway's refusal:\n${logs}`);
      t.is(upstream.requests.filter((r) => r.scripted).length, 1, 'only turn 1 went upstream: the call after it never left svc');
      const metered = upstream.requests.filter((r) => r.usage);
      t.is(
        metered.reduce((sum, r) => sum + chatTokens(r.usage!), 0),
        BUDGET,
      );
      t.like(receipt.llm, { calls: metered.length }, JSON.stringify(receipt.llm));
      t.is(git(w.bare, 'branch', '--list', `geminib/${id}`), '', 'no branch was pushed');
    } finally {
      await upstream.stop();
    }
  },
);
