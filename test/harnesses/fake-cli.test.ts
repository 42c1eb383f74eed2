/**
 * Each harness's invocation run as a real process through the local runtime against the fake CLIs
 * in test/fixtures/bin (they read their flags and print their CLI's real stream format), the lines
 * parsed with the harness's own parseLine.
 */
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import runtimeAdapter from '../../adapters/runtime/local/index.ts';
import type { AdapterDeps } from '../../core/adapters.ts';
import type { HarnessEvent, HarnessInput } from '../../core/ports/harness.ts';
import type { OutputLine, ProcessExit, Runtime } from '../../core/ports/runtime.ts';
import { messageText } from '../../core/sdk.ts';
import { Harnesses } from '../../plugins/harnesses/registry.ts';
import { HarnessAuth } from '../../plugins/harnesses/service.ts';

const BIN = fileURLToPath(new URL('../fixtures/bin/', import.meta.url));
const FAKE: Record<string, string> = {
  harness_a: 'fake-claude',
  harness_b: 'fake-claude',
  harness_c: 'fake-claude',
  harness_d: 'fake-codex',
  harness_e: 'fake-gemini',
  harness_f: 'fake-opencode',
};
const noSecrets = () => null;

let root = '';
let runtime: Runtime;
let registry: Harnesses;
test.before(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'svc-fake-cli-'));
  const { value } = runtimeAdapter.options.validate({ kill_grace_ms: 500 });
  runtime = await runtimeAdapter.create(value, { logger: pino({ level: 'silent' }) } as unknown as AdapterDeps);
  const config = Object.fromEntries(Object.entries(FAKE).map(([id, bin]) => [id, { command: path.join(BIN, bin) }]));
  registry = await Harnesses.load(
    { plugins: [], ...config, harness_a: { command: path.join(BIN, 'fake-claude'), mcp_servers: { docs: { command: 'docs-mcp' } } } },
    new HarnessAuth(noSecrets),
  );
});
test.after.always(() => rm(root, { recursive: true, force: true }));

interface Run {
  events: HarnessEvent[];
  lines: OutputLine[];
  exit: ProcessExit;
}
let runs = 0;
async function run(id: string, over: Partial<HarnessInput> = {}, timeoutMs = 20_000): Promise<Run> {
  const workspace = await mkdtemp(path.join(root, `w${++runs}-`));
  const inv = registry.get(id)!.build({ prompt: 'Fix the failing test', workspace, permissionPolicy: 'yolo', env: { SVC_JOB_ID: 'job-1' }, ...over });
  const proc = await runtime.start({ ...inv, cwd: workspace, timeoutMs });
  const lines: OutputLine[] = [];
  for await (const line of proc.lines()) lines.push(line);
  const exit = await proc.exited;
  const events = lines.filter((l) => l.stream === 'stdout').flatMap((l) => registry.get(id)!.parseLine(l.line));
  return { events, lines, exit };
}

/** The body of the last json-result block whose body is a JSON object (what the worker keeps). */
function resultBlock(text: string): Record<string, unknown> | null {
  let found: Record<string, unknown> | null = null;
  for (const m of text.matchAll(/```json-result\n([\s\S]*?)\n```/g)) {
    try {
      const v = JSON.parse(m[1]);
      if (v && typeof v === 'object' && !Array.isArray(v)) found = v;
    } catch {
      // not JSON: does not count
    }
  }
  return found;
}
const usageOf = (events: HarnessEvent[]) =>
  events.filter((e) => e.type === 'usage').reduce((s, u) => s + (u.type === 'usage' ? u.inputTokens + u.outputTokens : 0), 0);

for (const id of Object.keys(FAKE)) {
  test(`${id}: a successful run streams messages, tools and usage and ends with a json-result block`, async (t) => {
    const { events, exit } = await run(id, { model: id === 'harness_f' ? 'openai/gpt-5' : 'model-x' });
    t.is(exit.exitCode, 0);
    t.true(events.some((e) => e.type === 'tool'));
    t.like(events.filter((e) => e.type === 'progress').at(-1), { message: 'Make the change', percentage: 50 }, 'the plan the CLI keeps reports progress');
    t.deepEqual(resultBlock(messageText(events))?.svc, { status: 'success', summary: 'Handled: Fix the failing test' });
    t.is(usageOf(events), 1540, 'input 1200 + output 340, cached input counted apart');
    t.false(events.some((e) => e.type === 'error'));
  });

  for (const scenario of ['no-block', 'bad-json'] as const) {
    test(`${id}: ${scenario} leaves no json-result object`, async (t) => {
      const { events, exit } = await run(id, { prompt: `Fix it [[fake:${scenario}]]` });
      t.is(exit.exitCode, 0);
      t.true(events.some((e) => e.type === 'message'));
      t.is(resultBlock(messageText(events)), null);
    });
  }

  test(`${id}: a failed run exits non-zero with an error event`, async (t) => {
    const { events, exit } = await run(id, { env: { FAKE_CLI_SCENARIO: 'failure' } });
    t.is(exit.exitCode, 1);
    t.true(events.some((e) => e.type === 'error'));
  });

  test(`${id}: huge output arrives whole, the result block last`, async (t) => {
    const { events, lines, exit } = await run(id, { prompt: 'Read everything [[fake:huge]]' });
    t.is(exit.exitCode, 0);
    t.true(lines.length > 20_000);
    t.true(events.filter((e) => e.type === 'tool').length >= 20_000);
    t.is(resultBlock(messageText(events))?.svc && 'success', 'success');
  });

  test(`${id}: a hanging CLI is killed at the timeout`, async (t) => {
    const { exit } = await run(id, { prompt: 'Wait [[fake:hang]]' }, 1500);
    t.true(exit.timedOut);
  });
}

test('the flags each CLI received are the ones the policy, model and reasoning ask for', async (t) => {
  const claude = await run('harness_b', { permissionPolicy: 'never', model: 'opus', reasoningEffort: 'medium' });
  const init = JSON.parse(claude.lines.find((l) => l.line.includes('"subtype":"init"'))!.line);
  t.like(init, { permissionMode: 'dontAsk', model: 'opus', effort: 'medium' });

  const a = await run('harness_a', { permissionPolicy: 'auto_edit' });
  const aInit = JSON.parse(a.lines.find((l) => l.line.includes('"subtype":"init"'))!.line);
  t.like(aInit, { permissionMode: 'acceptEdits', plugin_dirs: ['.svc/harness_a/plugin'] });
  t.deepEqual(aInit.mcp_servers, [{ name: 'docs', status: 'connected' }]);

  const bedrock = await run('harness_c', { variant: 'bedrock' });
  t.like(JSON.parse(bedrock.lines[0].line), { fake_env: { CLAUDE_CODE_USE_BEDROCK: '1' } });

  const codex = await run('harness_d', { permissionPolicy: 'auto_edit', model: 'gpt-5', reasoningEffort: 'x-high' });
  t.true(codex.lines.some((l) => l.stream === 'stderr' && l.line === 'fake-codex: model=gpt-5 sandbox=danger-full-access approval=never effort=xhigh'));
  const codexNever = await run('harness_d', { permissionPolicy: 'never' });
  t.true(codexNever.lines.some((l) => l.line.includes('sandbox=read-only approval=never')));

  const gemini = await run('harness_e', { permissionPolicy: 'never', model: 'gemini-2.5-flash', variant: 'vertex' });
  t.like(JSON.parse(gemini.lines[0].line), { type: 'init', approval_mode: 'plan', model: 'gemini-2.5-flash', vertex: 'true' });

  const opencode = await run('harness_f', { permissionPolicy: 'never', model: 'openai/gpt-5', reasoningEffort: 'high' });
  t.deepEqual(JSON.parse(opencode.lines[0].line).part.fake, {
    model: 'openai/gpt-5',
    variant: 'high',
    permission: { edit: 'deny', bash: 'deny', webfetch: 'deny' },
  });
});

test('a prompt too long for one argument reaches the CLI through .svc/prompt.md', async (t) => {
  const prompt = `Fix the failing test ${'z'.repeat(200_000)}`;
  for (const id of ['harness_b', 'harness_d', 'harness_e', 'harness_f']) {
    const { events, exit } = await run(id, { prompt });
    t.is(exit.exitCode, 0, id);
    t.truthy(resultBlock(messageText(events)), id);
  }
});
