/**
 * What the registry adds to a harness's build: the default model (`HarnessDefinition.defaultModel`,
 * config `harnesses.<id>.default_model`: a job that names no model gets it explicitly, and the
 * invocation names it, the receipt's model), and the server's own credentials, but not on svc's gateway.
 */
import test from 'ava';
import { loadConfig } from '../../core/config/load.ts';
import type { HarnessInput, HarnessInvocation } from '../../core/ports/harness.ts';
import { defineHarness } from '../../core/sdk.ts';
import { Harnesses } from '../../plugins/harnesses/registry.ts';
import { HarnessAuth } from '../../plugins/harnesses/service.ts';

const input = (over: Partial<HarnessInput> = {}): HarnessInput => ({ prompt: 'Fix it', workspace: '/w', permissionPolicy: 'default', env: {}, ...over });
const modelFlag = (inv: HarnessInvocation) => (inv.args.includes('--model') ? inv.args[inv.args.indexOf('--model') + 1] : undefined);
const load = (config: Record<string, unknown> = {}) => Harnesses.load({ plugins: [], ...config } as never, new HarnessAuth(() => null));

test("harness_d: a job naming no model runs Codex's default model by name, and the invocation names it", async (t) => {
  const d = (await load()).get('harness_d')!;
  t.is(d.defaultModel, 'gpt-6.2-sol');
  const inv = d.build(input());
  t.is(modelFlag(inv), 'gpt-6.2-sol');
  t.is(inv.model, 'gpt-6.2-sol');
  const named = d.build(input({ model: 'gpt-5' }));
  t.is(modelFlag(named), 'gpt-5', "the job's model wins");
  t.is(named.model, undefined, 'the job names its model itself');
});

test('config replaces the default model, or turns it off (false: the CLI chooses, the receipt cannot say)', async (t) => {
  const other = (await load({ harness_d: { command: null, default_model: 'gpt-5-codex' } })).get('harness_d')!;
  t.is(other.defaultModel, 'gpt-5-codex');
  t.is(modelFlag(other.build(input())), 'gpt-5-codex');
  const off = (await load({ harness_d: { command: null, default_model: false } })).get('harness_d')!;
  t.is(off.defaultModel, undefined);
  t.is(modelFlag(off.build(input())), undefined);
  t.is(off.build(input()).model, undefined);
});

test("harnesses without a default model are left alone: harness_f's config model still names the receipt's", async (t) => {
  const registry = await load();
  for (const id of ['harness_a', 'harness_b', 'harness_c', 'harness_e', 'harness_f']) {
    t.is(registry.get(id)!.defaultModel, undefined, id);
    t.is(modelFlag(registry.get(id)!.build(input())), undefined, id);
  }
  const f = registry.get('harness_f')!.build(input({ env: { OPENCODE_CONFIG_CONTENT: JSON.stringify({ model: 'fake/m1' }) } }));
  t.is(f.model, 'fake/m1');
});

test('config: default_model is a model name, false or null; anything else fails the start with its path', (t) => {
  const load = (value: unknown) =>
    loadConfig({ cwd: '/nonexistent', env: {}, overrides: { harnesses: { harness_d: { command: null, default_model: value } } } });
  for (const ok of ['gpt-5', false, null]) t.notThrows(() => load(ok), String(ok));
  for (const bad of ['', true, 3]) t.throws(() => load(bad), { message: /harnesses\.harness_d\.default_model/ }, String(bad));
});

test('defineHarness refuses an empty defaultModel', (t) => {
  const base = { id: 'x', description: 'x', build: () => ({ command: 'x', args: [], env: {}, files: {} }), parseLine: () => [] };
  t.notThrows(() => defineHarness({ ...base, defaultModel: 'm' }));
  t.throws(() => defineHarness({ ...base, defaultModel: ' ' }), { message: /defaultModel must be a non-empty string/ });
});

test.serial("the server's own credentials go to a CLI on its provider, never to one on svc's gateway (a managed model)", async (t) => {
  process.env.ANTHROPIC_API_KEY = 'sk-server-anthropic';
  process.env.OPENROUTER_API_KEY = 'sk-server-openrouter';
  try {
    const f = (await load()).get('harness_f')!;
    const own = f.build(input({ model: 'anthropic/claude-sonnet-4-5' }));
    t.is(own.env.ANTHROPIC_API_KEY, 'sk-server-anthropic', 'on its own provider the CLI reads the key the server holds');
    const managed = f.build(
      input({ model: 'managed/coder', gateway: true, env: { OPENAI_BASE_URL: 'http://svc/inference/v1', OPENAI_API_KEY: 'job-token', SVC_JOB_ID: 'j' } }),
    );
    t.is(managed.env.OPENAI_API_KEY, 'job-token');
    for (const name of ['ANTHROPIC_API_KEY', 'OPENROUTER_API_KEY']) t.false(name in managed.env, name);
  } finally {
    delete process.env.ANTHROPIC_API_KEY;
    delete process.env.OPENROUTER_API_KEY;
  }
});
