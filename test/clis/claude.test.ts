/**
 * Conformance of the Claude Code family (harness_a, harness_b, harness_c's gateway variant) with the
 * real CLI (test/clis/support/clis.ts), through svc end to end: a job runs the CLI against a scripted
 * Anthropic Messages server on loopback; its tool call writes a file, its json-result block is read,
 * the commit holds exactly that change, the receipt holds exactly the usage the server reported.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { PINNED, cliBin, versionOf } from './support/clis.ts';
import { git, logLines } from '../worker/helpers.ts';
import { AnthropicServer, resultText, toolNamed, usageTokens, type Recorded, type Turn } from './support/anthropic-server.ts';
import { createJob, ended, inGroups, jobWorld, priceModel, processesWith, until, usageByModel, type Ended, type JobWorld } from './support/harness-jobs.ts';

const CLAUDE = cliBin('claude');
const MODEL = 'claude-conformance-1';
/** USD per million tokens. */
const PRICE = { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 };
const API_KEY = 'sk-ant-conformance-0123456789';
const GATEWAY_TOKEN = 'gw-token-conformance-0123456789';

let w: JobWorld;
let llm: AnthropicServer;

test.before(async () => {
  llm = await new AnthropicServer().start();
  w = await jobWorld(
    'cclaude',
    { harness_a: { command: CLAUDE }, harness_b: { command: CLAUDE }, harness_c: { command: CLAUDE } },
    // harness_c's gateway: every variable from system secrets shared with jobs.
    { ANTHROPIC_API_KEY: API_KEY, ANTHROPIC_AUTH_TOKEN: GATEWAY_TOKEN, ANTHROPIC_BASE_URL: llm.url },
  );
  await priceModel(w, MODEL, PRICE);
});
test.after.always(async () => {
  await w?.stop();
  await llm?.stop();
});

/** The workspace the CLI runs in, from the request (its system prompt and environment name it). */
function workspaceIn(body: unknown): string {
  const found = new RegExp(`${w.workspaceRoot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/[^\\s"\\\\]+`).exec(JSON.stringify(body));
  if (!found) throw new Error('the request does not name the workspace');
  return found[0];
}

/** The last tool result of the conversation so far. */
const lastToolResult = (body: any) =>
  (body.messages as any[])
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((c) => c.type === 'tool_result')
    .at(-1);

/** Whether hello.txt was in the workspace when the model was asked for turn 2 (after the tool ran). */
let writtenAtTurn2: boolean | null = null;

/** Turn 1 writes hello.txt with the CLI's Write tool; turn 2 reports success, or failure when the write came back refused. */
const WRITE_SCRIPT: Turn[] = [
  (body) => [
    { type: 'text', text: 'I will write the file.' },
    { type: 'tool_use', name: toolNamed(body, 'Write'), input: { file_path: path.join(workspaceIn(body), 'hello.txt'), content: 'hello from the agent\n' } },
  ],
  (body) => {
    writtenAtTurn2 = existsSync(path.join(workspaceIn(body), 'hello.txt'));
    const result = lastToolResult(body);
    if (result?.is_error)
      return [
        {
          type: 'text',
          text: `The write was refused.\n\n\`\`\`json-result\n${JSON.stringify({ svc: { status: 'failed', reason: 'the write was refused' } })}\n\`\`\`\n`,
        },
      ];
    return [{ type: 'text', text: resultText('wrote hello.txt') }];
  },
];

/** Runs one job with the write script; the requests it made. */
async function writeJob(body: Record<string, unknown>): Promise<Ended & { requests: Recorded[] }> {
  llm.use(WRITE_SCRIPT);
  writtenAtTurn2 = null;
  const from = llm.requests.length;
  const job = await createJob(w, { description: 'Write hello.txt', ...body });
  const result = await ended(w, job);
  return { ...result, requests: llm.requests.slice(from) };
}

/** The receipt holds exactly the usage the server reported, per model, priced from the card. */
function receiptMatches(t: ExecutionContext, r: Ended & { requests: Recorded[] }) {
  const reported = usageByModel(
    r.requests
      .filter((q) => q.usage)
      .map((q) => ({
        model: String(q.body.model),
        input: q.usage!.input_tokens,
        output: q.usage!.output_tokens,
        cacheRead: q.usage!.cache_read_input_tokens,
        cacheWrite: q.usage!.cache_creation_input_tokens,
      })),
  );
  t.deepEqual(Object.keys(r.receipt.llm.models).sort(), Object.keys(reported).sort(), JSON.stringify(r.receipt.llm));
  for (const [model, tokens] of Object.entries(reported)) t.like(r.receipt.llm.models[model], tokens, model);
  const u = reported[MODEL];
  const cost =
    (u.input_tokens * PRICE.input + u.output_tokens * PRICE.output + u.cache_read_tokens * PRICE.cache_read + u.cache_write_tokens * PRICE.cache_write) / 1e6;
  t.true(Math.abs(r.receipt.llm.models[MODEL].cost_usd - cost) < 1e-6, `${r.receipt.llm.models[MODEL].cost_usd} vs ${cost}`);
  t.is(r.receipt.cost.pricing, 'priced', JSON.stringify(r.receipt.cost));
}

/** A successful write job: done, the file committed alone, the tool in the log, model and effort in every scripted request. */
function wroteTheFile(t: ExecutionContext, r: Ended & { requests: Recorded[] }, effort: string) {
  t.is(r.job.phase, 'done', `${JSON.stringify(r.attempt)}\n${r.logs}`);
  t.like(r.attempt, { status: 'succeeded', result_summary: 'wrote hello.txt' });
  t.is(writtenAtTurn2, true, 'the file was in the workspace once the tool ran');
  t.deepEqual(r.committed, ['hello.txt'], 'the commit holds the agent change and nothing under .svc/');
  t.is(git(w.bare, 'show', `${r.branch}:hello.txt`), 'hello from the agent');
  t.regex(r.logs, /^\[tool\] Write$/m);
  const scripted = r.requests.filter((q) => q.scripted);
  t.is(scripted.length, 2, 'both turns of the script were asked for');
  for (const q of scripted) {
    t.is(q.body.model, MODEL);
    t.is(q.body.output_config?.effort, effort, JSON.stringify(q.body.output_config));
  }
}

test.serial('the auth status of each Claude harness finds the real CLI, its credentials in shared secrets, and names its version', async (t) => {
  for (const id of ['harness_a', 'harness_b', 'harness_c']) {
    const res = await w.api.get(`/harnesses/${id}`);
    t.is(res.statusCode, 200);
    t.true(res.body.auth.available, JSON.stringify(res.body.auth));
    t.regex(res.body.auth.reason, /credentials from secrets/);
    if (versionOf('claude') === PINNED.claude.version)
      t.true(res.body.auth.reason.includes(`found (version ${PINNED.claude.version}, as tested)`), res.body.auth.reason);
    else t.regex(res.body.auth.reason, new RegExp(`version ${versionOf('claude').replace(/\./g, '\\.')} is (older|newer)`), res.body.auth.reason);
  }
});

test.serial(
  'harness_b: the real CLI writes the file with its Write tool; json-result read; exactly that change committed; receipt equals the reported usage',
  async (t) => {
    const r = await writeJob({ harness: 'harness_b', model: MODEL, reasoning_effort: 'x-high', env_overrides: { ANTHROPIC_BASE_URL: llm.url } });
    wroteTheFile(t, r, 'xhigh');
    receiptMatches(t, r);
    t.is(r.requests.find((q) => q.scripted)?.headers['x-api-key'], API_KEY, 'the key from the shared system secret');
    t.false(r.logs.includes(API_KEY), 'the key never reaches the log');
  },
);

test.serial('harness_a: the svc skill from its plugin dir reaches the model; the plugin dir is not committed', async (t) => {
  const r = await writeJob({
    harness: 'harness_a',
    model: MODEL,
    reasoning_effort: 'low',
    hints: { permission_policy: 'auto_edit' },
    env_overrides: { ANTHROPIC_BASE_URL: llm.url },
  });
  wroteTheFile(t, r, 'low');
  receiptMatches(t, r);
  t.true(JSON.stringify(r.requests.find((q) => q.scripted)?.body).includes('svc-job'), 'the svc-job skill is offered to the model');
});

test.serial('harness_c (gateway): base URL and auth token from shared system secrets; the token is the bearer', async (t) => {
  const r = await writeJob({
    harness: 'harness_c',
    harness_variant: 'gateway',
    model: MODEL,
    reasoning_effort: 'high',
    hints: { permission_policy: 'auto_edit' },
  });
  wroteTheFile(t, r, 'high');
  receiptMatches(t, r);
  t.is(r.requests.find((q) => q.scripted)?.headers.authorization, `Bearer ${GATEWAY_TOKEN}`);
});

test.serial('policy never: the write is refused (dontAsk), the refusal is in the log, no file, nothing pushed, the failed attempt ends the job', async (t) => {
  const r = await writeJob({ harness: 'harness_b', model: MODEL, hints: { permission_policy: 'never' }, env_overrides: { ANTHROPIC_BASE_URL: llm.url } });
  t.is(r.job.phase, 'cancelled', r.logs);
  t.like(r.attempt, { status: 'failed' });
  t.regex(r.logs, /^\[tool\] Write$/m);
  t.regex(r.logs, /\[tool error\] Permission to use Write has been denied/);
  t.is(writtenAtTurn2, false, 'no file in the workspace after the refused write');
  t.is(r.committed, null);
  t.true(lastToolResult(r.requests.filter((q) => q.scripted)[1].body)?.is_error, 'the CLI told the model its write was refused');
});

test.serial('cancel kills the CLI and the command its Bash tool started: no process of the job is left', async (t) => {
  const marker = `hold-${process.pid}-${Date.now()}`;
  llm.use([
    () => [{ type: 'tool_use', name: 'Bash', input: { command: `node -e "setInterval(() => {}, 1000)" ${marker}`, description: 'keep running' } }],
    () => [{ type: 'text', text: resultText('never reached') }],
  ]);
  const job = await createJob(w, { description: `Run it ${marker}`, harness: 'harness_b', model: MODEL, env_overrides: { ANTHROPIC_BASE_URL: llm.url } });
  // The CLI (its prompt holds the marker) and the command its tool started (whose arguments hold it).
  const procs = await until(
    async () => {
      const found = processesWith(marker);
      return found.some((p) => p.args.startsWith('node -e')) && found.some((p) => p.args.includes('--output-format')) ? found : null;
    },
    'the CLI and its tool command to run',
    90_000,
  );
  const groups = [...new Set(procs.map((p) => p.pgid))];
  const cancelled = await w.api.patch(`/jobs/${job.id}`, { phase: 'cancelled', close_reason: 'conformance cancel' });
  t.is(cancelled.statusCode, 200, JSON.stringify(cancelled.body));
  const r = await ended(w, job, 30_000);
  t.is(r.job.phase, 'cancelled');
  t.like(r.attempt, { status: 'cancelled' });
  await until(async () => processesWith(marker).length === 0 && inGroups(groups).length === 0, 'every process of the job to be gone', 15_000).catch(() => null);
  t.deepEqual(processesWith(marker), [], 'no process with the marker is left');
  t.deepEqual(inGroups(groups), [], 'no process is left in the process groups of the CLI and its tool');
});

let upstreamTarget: string | null = null;

/** `managed/<name>` on the scripted server as an anthropic target whose key only svc holds. */
async function managedModel(t: ExecutionContext, name: string): Promise<string> {
  upstreamTarget ??= await (async () => {
    const target = await w.api.post('/inference/targets', {
      name: 'claude-upstream',
      kind: 'anthropic',
      base_url: llm.url,
      credential_secret: 'ANTHROPIC_API_KEY',
    });
    t.is(target.statusCode, 201, JSON.stringify(target.body));
    return target.body.id as string;
  })();
  const model = await w.api.post('/inference/managed-models', { name, target_id: upstreamTarget, upstream_model: MODEL });
  t.is(model.statusCode, 201, JSON.stringify(model.body));
  return `managed/${name}`;
}

for (const harness of ['harness_a', 'harness_b', 'harness_c']) {
  test.serial(
    `${harness} on a managed model reaches the upstream through svc with its job token: the gateway holds the key and meters every call`,
    async (t) => {
      const name = `claude-conf-${harness.slice(-1)}`;
      await managedModel(t, name);
      const r = await writeJob({ harness, model: `managed/${name}` });
      t.is(r.job.phase, 'done', `${JSON.stringify(r.attempt)}\n${r.logs}`);
      t.regex(r.logs, new RegExp(`model managed/${name}: .*through svc's inference`));
      t.deepEqual(r.committed, ['hello.txt']);
      const scripted = r.requests.filter((q) => q.scripted);
      t.is(scripted.length, 2, 'both turns went through the gateway');
      for (const q of r.requests.filter((q) => q.method === 'POST')) {
        t.is(q.headers['x-api-key'], API_KEY, "the upstream sees the target's key, which only svc holds");
        t.is(q.body.model, MODEL, 'the gateway asks for the upstream model');
        t.notRegex(String(q.headers['user-agent'] ?? ''), /claude-cli/, 'svc made the call, not the CLI');
      }
      const metered = r.requests.filter((q) => q.usage);
      t.like(r.receipt.llm, { calls: metered.length }, `every call the gateway made is on the receipt: ${JSON.stringify(r.receipt.llm)}`);
    },
  );
}

test.serial(
  'harness_b over its budget: the call after the one that reached hints.max_tokens is refused by the gateway in Anthropic shape, the attempt ends BUDGET_EXCEEDED, the CLI says why, nothing after runs',
  async (t) => {
    const model = await managedModel(t, 'claude-budget');
    const BUDGET = 4000;
    const marker = `budget-${process.pid}-${Date.now()}`;
    llm.use(WRITE_SCRIPT);
    // Turn 1 (the Write tool call) takes the usage reported so far to exactly the budget: the CLI runs
    // the tool and asks again, and that call is the one the gateway refuses.
    llm.reachTokens(BUDGET);
    writtenAtTurn2 = null;
    const from = llm.requests.length;
    const job = await createJob(w, { description: `Write hello.txt (${marker})`, harness: 'harness_b', model, hints: { max_tokens: BUDGET } });
    const r = await ended(w, job);
    t.like(r.attempt, { status: 'failed' }, JSON.stringify(r.attempt));
    t.is(r.job.phase, 'cancelled', 'the failed attempt ends the job (max_attempts 1)');
    t.is(r.attempt.result_json?.error_code, 'BUDGET_EXCEEDED', JSON.stringify(r.attempt));
    // Claude Code's side call (no tools) may be in flight beside turn 1: both began under the budget, so
    // both are served and the total can pass it; what may not happen is a call begun after it was reached.
    const used = /^BUDGET_EXCEEDED: (\d+) tokens used, (?:at|over) hints\.max_tokens (\d+)$/.exec(r.attempt.error ?? '');
    t.truthy(used, r.attempt.error);
    t.is(Number(used?.[2]), BUDGET);
    t.true(Number(used?.[1]) >= BUDGET);
    // The CLI got the refusal and printed it; then its process ended (no process of the job is left).
    const logs = await until(
      async () => {
        const lines = (await logLines(w, job.id, r.attempt.id)).map((l) => l.line).join('\n');
        return /process ended|stopped:/.test(lines) && processesWith(marker).length === 0 ? lines : null;
      },
      'the CLI to end and its last lines to be logged',
      30_000,
    );
    t.regex(logs, /model call refused: BUDGET_EXCEEDED/, `the CLI shows the gateway's refusal:\n${logs}`);
    const requests = llm.requests.slice(from);
    t.is(requests.filter((q) => q.scripted).length, 1, 'only turn 1 went upstream: the call after it never left svc');
    t.is(writtenAtTurn2, null, 'the script never got to turn 2');
    const metered = requests.filter((q) => q.usage);
    t.is(
      metered.reduce((sum, q) => sum + usageTokens(q.usage!), 0),
      Number(used?.[1]),
      'the receipt counts every metered call, and the refusal named that total',
    );
    t.like(r.receipt.llm, { calls: metered.length }, JSON.stringify(r.receipt.llm));
    t.is(r.receipt.llm.input_tokens + r.receipt.llm.output_tokens + r.receipt.llm.cache_read_tokens + r.receipt.llm.cache_write_tokens, Number(used?.[1]));
    t.is(r.committed, null, 'nothing committed or pushed');
    await until(async () => processesWith(marker).length === 0, 'no process of the job left', 15_000);
  },
);
