// harness_d against the real Codex CLI (test/clis/support/clis.ts pins the version), through svc end
// to end: a server with every role runs the job on a real git repository; the CLI talks to a scripted
// Responses API server on loopback, pointed at by system secrets shared with jobs.
import test, { type ExecutionContext } from 'ava';
import { cliBin, PINNED, versionOf } from './support/clis.ts';
import { RESPONSES_USAGE, responsesTokens, startResponsesServer, type ResponsesServer, type Turn } from './support/responses-server.ts';
import { cliWorld, committedPaths, ended, fileAt, groupsAlive, jobProcesses, PRICE, startJob, until, type CliWorld } from './support/svc-job-world.ts';
import { git, logLines } from '../worker/helpers.ts';

const KEY = 'sk-conformance-codex-0123456789';
const MODEL = 'gpt-conf-codex-1';
/** The model Codex 0.171 uses when neither the job nor its config names one. */
const CODEX_DEFAULT_MODEL = 'gpt-6.2-sol';
const RESULT = '```json-result\n{"svc": {"status": "success", "summary": "wrote hello.txt"}}\n```';
const WRITE: Turn[] = [{ writeFile: { path: 'hello.txt', content: 'hello from codex\n' } }, { text: `I created hello.txt.\n\n${RESULT}` }];

let w: CliWorld;
let fake: ResponsesServer;
test.before(async () => {
  fake = await startResponsesServer((body) => (body.includes('[[hang]]') ? [{ hang: true }] : WRITE), { apiKey: KEY });
  w = await cliWorld('cxconf', 'harness_d', cliBin('codex'), { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: fake.base }, MODEL);
});
test.after.always(async () => {
  await w?.stop();
  await fake?.stop();
});

/** The model requests of one job: those whose prompt carries its marker. */
const requestsOf = (marker: string) => fake.turns().filter((r) => JSON.stringify(r.body).includes(marker));

test.serial('a job writes a file with the real tool, reports through json-result, and the commit holds exactly that file', async (t) => {
  const marker = 'conf-write-1';
  const id = await startJob(w, {
    description: `Create hello.txt saying hello (${marker})`,
    harness: 'harness_d',
    model: MODEL,
    reasoning_effort: 'high',
    git: { branch: 'codex/${job_id}', commit: 'auto', push: 'required' },
  });
  const { job, attempt, logs, receipt } = await ended(w, id);
  t.is(job.phase, 'done', `${JSON.stringify(attempt)}\n${logs}\nserver: ${fake.requests.map((r) => r.error).join('; ')}`);
  t.like(attempt, { status: 'succeeded', result_summary: 'wrote hello.txt' });

  const requests = requestsOf(marker);
  t.deepEqual(
    requests.map((r) => r.turn),
    [0, 1],
    'two model turns: the tool call, then the answer after its output',
  );
  t.true(fake.websocketAttempts > 0, 'the CLI tried the WebSocket first and fell back to HTTP');
  for (const r of requests) {
    t.is(r.headers.authorization, `Bearer ${KEY}`);
    t.is(r.body.model, MODEL, 'the job model reaches the request');
    t.is(r.body.reasoning?.effort, 'high', 'the reasoning effort reaches the request');
  }
  t.regex(JSON.stringify(requests[1].body.input), /hello\.txt/, 'the tool call went back to the model with its output');
  t.regex(logs, /\[tool\] (file_change|command_execution)/, 'the tool call is in the attempt log');
  t.notRegex(logs, /Reconnecting|Falling back/, 'transport retries are no errors in the log');

  t.deepEqual(committedPaths(w, `codex/${id}`), ['hello.txt'], 'the commit holds the agent change only: nothing under .svc/, no CLI config');
  t.is(fileAt(w, `codex/${id}`, 'hello.txt'), 'hello from codex');

  // Codex counts cached input inside input_tokens and reasoning inside output_tokens; two responses.
  const n = requests.length;
  const tokens = {
    input_tokens: n * (RESPONSES_USAGE.input - RESPONSES_USAGE.cached),
    output_tokens: n * RESPONSES_USAGE.output,
    cache_read_tokens: n * RESPONSES_USAGE.cached,
    reasoning_tokens: n * RESPONSES_USAGE.reasoning,
  };
  t.like(receipt.llm, tokens, JSON.stringify(receipt));
  t.like(receipt.llm.models[MODEL], tokens, 'on the receipt under the model used');
  const cost =
    (tokens.input_tokens * PRICE.input +
      (tokens.output_tokens - tokens.reasoning_tokens) * PRICE.output +
      tokens.reasoning_tokens * PRICE.reasoning +
      tokens.cache_read_tokens * PRICE.cache_read) /
    1e6;
  t.is(receipt.llm.models[MODEL].cost_usd, Math.round(cost * 1e6) / 1e6);
  t.like(receipt.cost, { price_table: w.cardId, pricing: 'priced' });
});

// Codex 0.171's JSONL stream names no model (thread.started, turn.completed carry none). So svc does
// not leave the choice to the CLI: harness_d's default model (the one 0.171 runs when nothing names
// one; harnesses.harness_d.default_model replaces it) is passed explicitly, and the receipt names it.
test.serial('a job naming no model: the request carries Codex default model, and the receipt names it', async (t) => {
  const marker = 'conf-default-model';
  const id = await startJob(w, { description: `Create hello.txt (${marker})`, harness: 'harness_d' });
  const { job, attempt, logs, receipt } = await ended(w, id);
  t.is(job.phase, 'done', JSON.stringify(attempt) + logs);
  const requests = requestsOf(marker);
  t.true(requests.length >= 2);
  for (const r of requests) t.is(r.body.model, CODEX_DEFAULT_MODEL);
  t.regex(logs, new RegExp(`model ${CODEX_DEFAULT_MODEL}: the job names none, and it is harness_d's default model`));
  t.deepEqual(Object.keys(receipt.llm.models), [CODEX_DEFAULT_MODEL], JSON.stringify(receipt));
  t.like(receipt.llm.models[CODEX_DEFAULT_MODEL], { output_tokens: requests.length * RESPONSES_USAGE.output });
});

test.serial('policy auto_edit: the write goes through (once --full-auto, which Codex 0.171 no longer has)', async (t) => {
  const marker = 'conf-auto-edit';
  const id = await startJob(w, {
    description: `Create hello.txt (${marker})`,
    harness: 'harness_d',
    model: MODEL,
    hints: { permission_policy: 'auto_edit' },
    git: { branch: 'auto/${job_id}', commit: 'auto', push: 'required' },
  });
  const { job, attempt, logs } = await ended(w, id);
  t.is(job.phase, 'done', `${JSON.stringify(attempt)}\n${logs}`);
  const output = JSON.stringify(requestsOf(marker)[1]?.body.input.filter((i: any) => /_output$/.test(i.type)));
  t.notRegex(output, /rejected|sandbox|denied|failed/i, output);
  t.deepEqual(attempt.git.commits.length, 1, output);
  t.deepEqual(committedPaths(w, `auto/${id}`), ['hello.txt']);
});

test.serial('policy never: Codex refuses the write; the job ends without a change', async (t) => {
  const marker = 'conf-never';
  const id = await startJob(w, {
    description: `Create hello.txt (${marker})`,
    harness: 'harness_d',
    // Codex's default model gets apply_patch (an unknown one only a shell tool), so the refusal is Codex's policy.
    hints: { permission_policy: 'never' },
    git: { branch: 'never/${job_id}', commit: 'auto', push: 'on_success' },
  });
  const { job, attempt, logs } = await ended(w, id);
  t.is(job.phase, 'done', JSON.stringify(attempt) + logs);
  const requests = requestsOf(marker);
  t.is(requests.length, 2);
  const output = JSON.stringify(requests[1].body.input.filter((i: any) => /_output$/.test(i.type)));
  t.regex(output, /patch rejected: writing is blocked by read-only sandbox/, `the tool output the model got says the write was refused: ${output}`);
  t.deepEqual(attempt.git.commits, [], 'nothing to commit');
  t.throws(() => committedPaths(w, `never/${id}`), undefined, 'no branch was pushed');
});

test.serial('cancelling a running job kills the CLI and every process it started', async (t) => {
  const marker = 'conf-cancel [[hang]]';
  const id = await startJob(w, { description: `Wait (${marker})`, harness: 'harness_d', model: MODEL });
  await until(async () => requestsOf(marker).length > 0, 'the CLI to call the model', 60_000);
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
  const auth = (await w.api.get('/harnesses/harness_d')).body.auth;
  t.true(auth.available, JSON.stringify(auth));
  if (versionOf('codex') === PINNED.codex.version) t.true(auth.reason.includes(`found (version ${PINNED.codex.version}, as tested)`), auth.reason);
  else t.regex(auth.reason, new RegExp(`version ${versionOf('codex').replace(/\./g, '\\.')} is (older|newer)`), auth.reason);
});

let upstreamTarget: string | null = null;

/** `managed/<name>` on the scripted server as an openai target serving Responses, whose key only svc holds. */
async function managedModel(t: ExecutionContext, name: string): Promise<string> {
  upstreamTarget ??= await (async () => {
    const target = await w.api.post('/inference/targets', {
      name: 'codex-upstream',
      kind: 'openai',
      base_url: fake.base,
      credential_secret: 'OPENAI_API_KEY',
      responses_api: true,
    });
    t.is(target.statusCode, 201, JSON.stringify(target.body));
    return target.body.id as string;
  })();
  const model = await w.api.post('/inference/managed-models', { name, target_id: upstreamTarget, upstream_model: MODEL });
  t.is(model.statusCode, 201, JSON.stringify(model.body));
  return `managed/${name}`;
}

test.serial('on a managed model the CLI reaches the upstream through svc with its job token: the gateway holds the key and meters the calls', async (t) => {
  await managedModel(t, 'codex-conf');
  const marker = 'conf-managed-1';
  const id = await startJob(w, {
    description: `Create hello.txt saying hello (${marker})`,
    harness: 'harness_d',
    model: 'managed/codex-conf',
    git: { branch: 'codexm/${job_id}', commit: 'auto', push: 'required' },
  });
  const { job, attempt, logs, receipt } = await ended(w, id);
  t.is(job.phase, 'done', `${JSON.stringify(attempt)}\n${logs}\nserver: ${fake.requests.map((r) => r.error).join('; ')}`);
  t.regex(logs, /model managed\/codex-conf: .*through svc's inference/);
  t.deepEqual(committedPaths(w, `codexm/${id}`), ['hello.txt']);
  const requests = requestsOf(marker);
  t.true(requests.length >= 2, `the tool call and the answer went through the gateway: ${requests.length}`);
  for (const r of requests) {
    t.is(r.headers.authorization, `Bearer ${KEY}`, "the upstream sees the target's key, which only svc holds");
    t.is(r.body.model, MODEL, 'the gateway asks for the upstream model');
  }
  t.like(receipt.llm, { calls: requests.length }, 'the receipt counts the calls the gateway made');
  t.like(receipt.llm.models[MODEL], { output_tokens: requests.length * RESPONSES_USAGE.output }, JSON.stringify(receipt.llm));
});

test.serial(
  'over its budget on a managed model: the call after the one that reached hints.max_tokens is refused by the gateway in OpenAI shape, the attempt ends BUDGET_EXCEEDED, Codex says why, nothing after runs',
  async (t) => {
    const model = await managedModel(t, 'codex-budget');
    const BUDGET = 3000;
    const marker = 'conf-budget';
    // Turn 0 (the patch) takes the usage reported so far to exactly the budget: Codex applies it and
    // asks again, and that call is the one the gateway refuses.
    fake.reachTokens(BUDGET);
    const id = await startJob(w, {
      description: `Create hello.txt (${marker})`,
      harness: 'harness_d',
      model,
      hints: { max_tokens: BUDGET, max_attempts: 1 },
      git: { branch: 'budget/${job_id}', commit: 'auto', push: 'on_success' },
    });
    const { job, attempt, receipt } = await ended(w, id);
    t.is(job.phase, 'cancelled', 'the failed attempt ends the job (max_attempts 1)');
    t.like(attempt, { status: 'failed', error: `BUDGET_EXCEEDED: ${BUDGET} tokens used, at hints.max_tokens ${BUDGET}` }, JSON.stringify(attempt));
    t.is(attempt.result_json?.error_code, 'BUDGET_EXCEEDED');
    // Codex got the refusal and printed it; then its process ended (no process of the job is left).
    const logs = await until(
      async () => {
        const lines = (await logLines(w, id, attempt.id)).map((l) => l.line).join('\n');
        return /^(process ended|stopped:)/m.test(lines) && jobProcesses(id).length === 0 ? lines : null;
      },
      'the CLI to end and its last lines to be logged',
      30_000,
    );
    t.regex(logs, /model call refused: BUDGET_EXCEEDED/, `Codex shows the gateway's refusal:\n${logs}`);
    // Codex retries any status (Reconnecting... n/5); the retries fail authentication, since the job
    // token stopped with its attempt, and its last error, the turn's, still says why.
    t.regex(logs, /^unexpected status 401 Unauthorized: the attempt of this job token has ended \(failed: BUDGET_EXCEEDED: /m, logs);
    const requests = fake.requests.filter((r) => JSON.stringify(r.body ?? '').includes(marker));
    t.deepEqual(
      requests.filter((r) => r.turn !== null).map((r) => r.turn),
      [0],
      'only turn 0 went upstream: the call after it never left svc',
    );
    const metered = requests.filter((r) => r.usage);
    t.is(
      metered.reduce((sum, r) => sum + responsesTokens(r.usage!), 0),
      BUDGET,
    );
    t.like(receipt.llm, { calls: metered.length }, JSON.stringify(receipt.llm));
    t.is(receipt.llm.input_tokens + receipt.llm.output_tokens + receipt.llm.cache_read_tokens + receipt.llm.cache_write_tokens, BUDGET);
    t.is(git(w.bare, 'branch', '--list', `budget/${id}`), '', 'no branch was pushed');
  },
);
