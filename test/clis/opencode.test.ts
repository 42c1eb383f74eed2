/**
 * Conformance of harness_f with the real opencode CLI (test/clis/support/clis.ts), through svc end to
 * end: the job's inline config (OPENCODE_CONFIG_CONTENT in env_overrides) names an OpenAI-compatible
 * provider on a scripted chat completions server on loopback, whose key is a system secret shared
 * with jobs. A tool call writes a file, the json-result block is read, the commit holds exactly that
 * change, the receipt holds the usage the CLI reports (all but its title call, which its JSON stream
 * never shows) under the model it ran.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { PINNED, cliBin, versionOf } from './support/clis.ts';
import { ChatServer, chatTokens, functionNamed, type ChatRecorded, type ChatTurn } from './support/chat-server.ts';
import { resultText } from './support/anthropic-server.ts';
import { git, logLines } from '../worker/helpers.ts';
import { createJob, ended, inGroups, jobWorld, priceModel, processesWith, until, usageByModel, type Ended, type JobWorld } from './support/harness-jobs.ts';

const OPENCODE = cliBin('opencode');
const MODEL = 'fake/conf-model-1';
const PRICE = { input: 2, output: 8, cache_read: 0.5, cache_write: 2 };
const API_KEY = 'sk-oc-conformance-0123456789';

let w: JobWorld;
let llm: ChatServer;

/** The provider opencode is configured with: its variants carry the reasoning effort. */
const config = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    provider: {
      fake: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Fake',
        options: { baseURL: `${llm.url}/v1`, apiKey: '{env:OPENAI_API_KEY}' },
        models: {
          'conf-model-1': {
            name: 'Conformance 1',
            variants: {
              low: { reasoningEffort: 'low' },
              medium: { reasoningEffort: 'medium' },
              high: { reasoningEffort: 'high' },
              max: { reasoningEffort: 'xhigh' },
            },
          },
        },
      },
    },
    ...extra,
  });

test.before(async () => {
  llm = await new ChatServer().start();
  w = await jobWorld('copenc', { harness_f: { command: OPENCODE } }, { OPENAI_API_KEY: API_KEY });
  // A card prices a model by its id without the provider prefix (domain/pricing/prices.ts).
  await priceModel(w, 'conf-model-1', PRICE);
});
test.after.always(async () => {
  await w?.stop();
  await llm?.stop();
});

function workspaceIn(body: unknown): string {
  const found = new RegExp(`${w.workspaceRoot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/[^\\s"\\\\]+`).exec(JSON.stringify(body));
  if (!found) throw new Error('the request does not name the workspace');
  return found[0];
}

let writtenAtTurn2: boolean | null = null;

const WRITE_SCRIPT: ChatTurn[] = [
  (body) => ({
    text: 'I will write the file.',
    toolCalls: [{ name: functionNamed(body, 'write'), arguments: { filePath: path.join(workspaceIn(body), 'hello.txt'), content: 'hello from the agent\n' } }],
  }),
  (body) => {
    writtenAtTurn2 = existsSync(path.join(workspaceIn(body), 'hello.txt'));
    return { text: resultText('wrote hello.txt') };
  },
];

async function writeJob(body: Record<string, unknown>, script = WRITE_SCRIPT): Promise<Ended & { requests: ChatRecorded[] }> {
  llm.use(script);
  writtenAtTurn2 = null;
  const from = llm.requests.length;
  const job = await createJob(w, { description: 'Write hello.txt', ...body });
  const result = await ended(w, job);
  return { ...result, requests: llm.requests.slice(from) };
}

/**
 * The receipt holds the scripted calls' usage under the model opencode ran, priced: opencode counts
 * cached prompt tokens apart from input. Its title call (no tools) is not in its JSON stream, so it
 * is the one call not on the receipt.
 */
function receiptMatches(t: ExecutionContext, r: Ended & { requests: ChatRecorded[] }) {
  const scripted = r.requests.filter((q) => q.scripted && q.usage);
  const reported = usageByModel(
    scripted.map((q) => ({
      model: MODEL,
      input: q.usage!.prompt_tokens - q.usage!.prompt_tokens_details.cached_tokens,
      output: q.usage!.completion_tokens,
      cacheRead: q.usage!.prompt_tokens_details.cached_tokens,
      cacheWrite: 0,
    })),
  );
  t.deepEqual(Object.keys(r.receipt.llm.models), [MODEL], JSON.stringify(r.receipt.llm));
  t.like(r.receipt.llm.models[MODEL], reported[MODEL]);
  const u = reported[MODEL];
  const cost = (u.input_tokens * PRICE.input + u.output_tokens * PRICE.output + u.cache_read_tokens * PRICE.cache_read) / 1e6;
  t.true(Math.abs(r.receipt.llm.models[MODEL].cost_usd - cost) < 1e-6, `${r.receipt.llm.models[MODEL].cost_usd} vs ${cost}`);
  t.is(r.receipt.cost.pricing, 'priced', JSON.stringify(r.receipt.cost));
  t.true(
    r.requests.some((q) => !q.scripted && q.usage),
    'the title call was made (and is the one not counted)',
  );
}

function wroteTheFile(t: ExecutionContext, r: Ended & { requests: ChatRecorded[] }) {
  t.is(r.job.phase, 'done', `${JSON.stringify(r.attempt)}\n${r.logs}`);
  t.like(r.attempt, { status: 'succeeded', result_summary: 'wrote hello.txt' });
  t.is(writtenAtTurn2, true, 'the file was in the workspace once the tool ran');
  t.deepEqual(r.committed, ['hello.txt'], 'the commit holds the agent change and nothing else');
  t.is(git(w.bare, 'show', `${r.branch}:hello.txt`), 'hello from the agent');
  t.regex(r.logs, /^\[tool\] write$/m);
  const scripted = r.requests.filter((q) => q.scripted);
  t.is(scripted.length, 2);
  for (const q of scripted) {
    t.is(q.body.model, 'conf-model-1');
    t.is(q.headers.authorization, `Bearer ${API_KEY}`, 'the key from the shared system secret, through the config');
  }
  t.false(r.logs.includes(API_KEY));
}

test.serial('the auth status of harness_f finds the real CLI, its key in a shared secret, and names its version', async (t) => {
  const res = await w.api.get('/harnesses/harness_f');
  t.is(res.statusCode, 200);
  t.true(res.body.auth.available, JSON.stringify(res.body.auth));
  if (versionOf('opencode') === PINNED.opencode.version)
    t.true(res.body.auth.reason.includes(`found (version ${PINNED.opencode.version}, as tested)`), res.body.auth.reason);
  else t.regex(res.body.auth.reason, new RegExp(`version ${versionOf('opencode').replace(/\./g, '\\.')} is (older|newer)`), res.body.auth.reason);
});

test.serial(
  'harness_f: the real CLI writes the file with its write tool; json-result read; exactly that change committed; receipt priced; model and effort reach the request',
  async (t) => {
    const r = await writeJob({
      harness: 'harness_f',
      model: MODEL,
      reasoning_effort: 'x-high',
      hints: { permission_policy: 'auto_edit' },
      env_overrides: { OPENCODE_CONFIG_CONTENT: config() },
    });
    wroteTheFile(t, r);
    receiptMatches(t, r);
    for (const q of r.requests.filter((x) => x.scripted)) t.is(q.body.reasoning_effort, 'xhigh', '--variant max, the variant the config maps to xhigh');
  },
);

test.serial('harness_f with no model in the job: the receipt names the model the config chose, not unknown', async (t) => {
  const r = await writeJob({ harness: 'harness_f', env_overrides: { OPENCODE_CONFIG_CONTENT: config({ model: MODEL }) } });
  wroteTheFile(t, r);
  receiptMatches(t, r);
});

test.serial('policy never: opencode offers the model no tool that writes; no file, nothing pushed, the failed attempt ends the job', async (t) => {
  let offered: string[] = [];
  const r = await writeJob(
    { harness: 'harness_f', model: MODEL, hints: { permission_policy: 'never' }, env_overrides: { OPENCODE_CONFIG_CONTENT: config() } },
    [
      (body) => {
        offered = (body.tools as any[]).map((x) => x.function.name);
        writtenAtTurn2 = existsSync(path.join(workspaceIn(body), 'hello.txt'));
        return {
          text: `No tool can write here.\n\n\`\`\`json-result\n${JSON.stringify({ svc: { status: 'failed', reason: 'no tool may write' } })}\n\`\`\`\n`,
        };
      },
    ],
  );
  t.true(offered.length > 0, 'the model was asked with tools');
  for (const name of ['write', 'edit', 'bash']) t.false(offered.includes(name), `${name} is not offered: ${offered.join(', ')}`);
  t.is(r.job.phase, 'cancelled', r.logs);
  t.like(r.attempt, { status: 'failed' });
  t.is(writtenAtTurn2, false);
  t.is(r.committed, null);
});

test.serial('cancel kills the CLI and the command its bash tool started: no process of the job is left', async (t) => {
  const marker = `hold-${process.pid}-${Date.now()}`;
  const job = await (async () => {
    llm.use([
      (body) => ({
        toolCalls: [
          { name: functionNamed(body, 'bash'), arguments: { command: `node -e "setInterval(() => {}, 1000)" ${marker}`, description: 'keep running' } },
        ],
      }),
      () => ({ text: resultText('never reached') }),
    ]);
    return createJob(w, { description: `Run it ${marker}`, harness: 'harness_f', model: MODEL, env_overrides: { OPENCODE_CONFIG_CONTENT: config() } });
  })();
  const procs = await until(
    async () => {
      const found = processesWith(marker);
      return found.some((p) => p.args.startsWith('node -e')) && found.some((p) => p.args.includes('--format')) ? found : null;
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

/**
 * `managed/<name>` on the scripted chat server as an openai target whose key only svc holds. The job
 * carries no provider config of its own: harness_f gives opencode a `managed` provider on the gateway.
 */
async function managedModel(t: ExecutionContext, name: string): Promise<string> {
  upstreamTarget ??= await (async () => {
    const target = await w.api.post('/inference/targets', {
      name: 'opencode-upstream',
      kind: 'openai',
      base_url: `${llm.url}/v1`,
      credential_secret: 'OPENAI_API_KEY',
    });
    t.is(target.statusCode, 201, JSON.stringify(target.body));
    return target.body.id as string;
  })();
  const entry = await w.api.post('/inference/managed-models', { name, target_id: upstreamTarget, upstream_model: 'conf-model-1' });
  t.is(entry.statusCode, 201, JSON.stringify(entry.body));
  return `managed/${name}`;
}

test.serial('harness_f on a managed model reaches the upstream through svc with its job token: the gateway holds the key and meters every call', async (t) => {
  const model = await managedModel(t, 'opencode-conf');
  const r = await writeJob({ harness: 'harness_f', model, reasoning_effort: 'high', hints: { permission_policy: 'auto_edit' } });
  t.is(r.job.phase, 'done', `${JSON.stringify(r.attempt)}\n${r.logs}`);
  t.like(r.attempt, { status: 'succeeded', result_summary: 'wrote hello.txt' });
  t.regex(r.logs, /model managed\/opencode-conf: .*through svc's inference/);
  t.is(writtenAtTurn2, true);
  t.deepEqual(r.committed, ['hello.txt'], 'the commit holds the agent change and nothing else');
  const scripted = r.requests.filter((q) => q.scripted);
  t.is(scripted.length, 2, 'both turns went through the gateway');
  for (const q of scripted) t.is(q.body.reasoning_effort, 'high', "--variant high, a variant of the managed provider's model");
  const posts = r.requests.filter((q) => q.method === 'POST');
  for (const q of posts) {
    t.is(q.headers.authorization, `Bearer ${API_KEY}`, "the upstream sees the target's key, which only svc holds");
    t.is(q.body.model, 'conf-model-1', 'the gateway asks for the upstream model');
    t.notRegex(String(q.headers['user-agent'] ?? ''), /opencode/i, 'svc made the call, not the CLI');
  }
  // Every call went through the gateway, the title call too (small_model is the managed model), so
  // the receipt holds them all, counted by the gateway from the upstream's own usage.
  const metered = posts.filter((q) => q.usage);
  t.true(
    metered.some((q) => !q.scripted),
    'the title call went through the gateway as well',
  );
  t.like(r.receipt.llm, { calls: metered.length }, `every call the gateway made is on the receipt: ${JSON.stringify(r.receipt.llm)}`);
  t.deepEqual(Object.keys(r.receipt.llm.models), ['conf-model-1'], JSON.stringify(r.receipt.llm));
  const reported = usageByModel(
    metered.map((q) => ({
      model: 'conf-model-1',
      input: q.usage!.prompt_tokens - q.usage!.prompt_tokens_details.cached_tokens,
      output: q.usage!.completion_tokens,
      cacheRead: q.usage!.prompt_tokens_details.cached_tokens,
      cacheWrite: 0,
    })),
  );
  t.like(r.receipt.llm.models['conf-model-1'], reported['conf-model-1']);
  t.is(r.receipt.cost.pricing, 'priced', JSON.stringify(r.receipt.cost));
});

test.serial(
  'harness_f over its budget on a managed model: the call after the one that reached hints.max_tokens is refused by the gateway, the attempt ends BUDGET_EXCEEDED, the CLI says why, nothing after runs',
  async (t) => {
    const model = await managedModel(t, 'opencode-budget');
    // Turn 1 (the write) takes the usage reported so far to exactly the budget: opencode writes and
    // asks again, and that call is the one the gateway refuses.
    const BUDGET = 6000;
    const marker = `budget-${process.pid}-${Date.now()}`;
    llm.use(WRITE_SCRIPT);
    llm.reachTokens(BUDGET);
    writtenAtTurn2 = null;
    const from = llm.requests.length;
    const job = await createJob(w, {
      description: `Write hello.txt (${marker})`,
      harness: 'harness_f',
      model,
      hints: { permission_policy: 'auto_edit', max_tokens: BUDGET },
    });
    const r = await ended(w, job);
    t.is(r.job.phase, 'cancelled', 'the failed attempt ends the job (max_attempts 1)');
    t.like(r.attempt, { status: 'failed', error: `BUDGET_EXCEEDED: ${BUDGET} tokens used, at hints.max_tokens ${BUDGET}` }, JSON.stringify(r.attempt));
    t.is(r.attempt.result_json?.error_code, 'BUDGET_EXCEEDED');
    const logs = await until(
      async () => {
        const lines = (await logLines(w, job.id, r.attempt.id)).map((l) => l.line).join('\n');
        return /^(process ended|stopped:)/m.test(lines) && processesWith(marker).length === 0 ? lines : null;
      },
      'the CLI to end and its last lines to be logged',
      30_000,
    );
    t.regex(logs, /model call refused: BUDGET_EXCEEDED/, `the CLI shows the gateway's refusal:\n${logs}`);
    const requests = llm.requests.slice(from);
    t.is(requests.filter((q) => q.scripted).length, 1, 'only turn 1 went upstream: the call after it never left svc');
    t.is(writtenAtTurn2, null, 'the script never got to turn 2');
    t.is(
      requests.filter((q) => q.usage).reduce((sum, q) => sum + chatTokens(q.usage!), 0),
      BUDGET,
    );
    t.is(r.committed, null, 'nothing committed or pushed');
  },
);
