import test from 'ava';
import type { HarnessInput, HarnessInvocation, PermissionPolicy } from '../../core/ports/harness.ts';
import { builtInHarnesses } from '../../harnesses/index.ts';

const [a, b, c, d, e, f] = builtInHarnesses({ harness_a: { mcp_servers: { docs: { command: 'docs-mcp' } } } });
const input = (over: Partial<HarnessInput> = {}): HarnessInput => ({
  prompt: 'Fix it',
  workspace: '/w',
  permissionPolicy: 'default',
  env: { SVC_JOB_ID: 'job-1' },
  ...over,
});
const flagValue = (inv: HarnessInvocation, flag: string) => inv.args[inv.args.indexOf(flag) + 1];
const before = (inv: HarnessInvocation) => inv.args.slice(0, inv.args.indexOf('--'));

test('harness_b: claude -p with stream-json, --verbose, the prompt after --', (t) => {
  const inv = b.build(input({ prompt: '-starts with a dash' }));
  t.is(inv.command, 'claude');
  t.deepEqual(inv.args.slice(0, 4), ['-p', '--output-format', 'stream-json', '--verbose']);
  t.deepEqual(inv.args.slice(-2), ['--', '-starts with a dash']);
  t.is(inv.env.SVC_JOB_ID, 'job-1');
  t.deepEqual(inv.files, {});
});

const CLAUDE_MODES: Record<PermissionPolicy, string> = { default: 'default', auto_edit: 'acceptEdits', never: 'dontAsk', yolo: 'bypassPermissions' };
for (const [policy, mode] of Object.entries(CLAUDE_MODES) as [PermissionPolicy, string][]) {
  test(`claude family: permission policy ${policy} is --permission-mode ${mode}`, (t) => {
    for (const h of [a, b, c]) t.is(flagValue(h.build(input({ permissionPolicy: policy })), '--permission-mode'), mode, h.id);
  });
}

test('claude family: model is --model, reasoning is --effort (x-high is xhigh), before the -- that ends the options', (t) => {
  const inv = b.build(input({ model: 'opus', reasoningEffort: 'high' }));
  t.is(flagValue(inv, '--model'), 'opus');
  t.is(flagValue(inv, '--effort'), 'high');
  t.true(inv.args.indexOf('--effort') < inv.args.indexOf('--'));
  for (const h of [a, b, c]) t.is(flagValue(h.build(input({ reasoningEffort: 'x-high' })), '--effort'), 'xhigh', h.id);
  t.is(flagValue(b.build(input({ reasoningEffort: 'low' })), '--effort'), 'low');
  t.false(b.build(input()).args.includes('--effort'));
  t.false('MAX_THINKING_TOKENS' in b.build(input({ reasoningEffort: 'high' })).env);
});

test('harness_a: the svc skill in a plugin dir and the configured MCP servers, strict', (t) => {
  const inv = a.build(input());
  t.is(flagValue(inv, '--plugin-dir'), '.svc/harness_a/plugin');
  t.is(flagValue(inv, '--mcp-config'), '.svc/harness_a/mcp.json');
  t.true(before(inv).includes('--strict-mcp-config'));
  t.deepEqual(JSON.parse(inv.files['.svc/harness_a/mcp.json']), { mcpServers: { docs: { command: 'docs-mcp' } } });
  t.regex(inv.files['.svc/harness_a/plugin/skills/svc-job/SKILL.md'], /^---\nname: svc-job\n/);
  t.truthy(JSON.parse(inv.files['.svc/harness_a/plugin/.claude-plugin/plugin.json']).name);
  const skillsOnly = a.build(input({ variant: 'skills' }));
  t.false(skillsOnly.args.includes('--mcp-config'));
  t.false('.svc/harness_a/mcp.json' in skillsOnly.files);
  const none = builtInHarnesses({})[0].build(input());
  t.false(none.args.includes('--mcp-config'), 'no servers configured: no MCP config at all');
});

test('harness_c: the provider comes from the variant, else from the credentials present', (t) => {
  t.is(c.build(input({ variant: 'bedrock' })).env.CLAUDE_CODE_USE_BEDROCK, '1');
  t.is(c.build(input({ variant: 'vertex' })).env.CLAUDE_CODE_USE_VERTEX, '1');
  const gateway = c.build(input({ env: { ANTHROPIC_BASE_URL: 'https://gw.example', ANTHROPIC_AUTH_TOKEN: 't' } }));
  t.is(gateway.env.ANTHROPIC_BASE_URL, 'https://gw.example');
  t.false('CLAUDE_CODE_USE_BEDROCK' in gateway.env);
  t.is(c.build(input({ env: { AWS_BEARER_TOKEN_BEDROCK: 'x', AWS_REGION: 'us-east-1' } })).env.CLAUDE_CODE_USE_BEDROCK, '1');
  t.is(c.build(input({ env: { ANTHROPIC_VERTEX_PROJECT_ID: 'p', CLOUD_ML_REGION: 'us-east5' } })).env.CLAUDE_CODE_USE_VERTEX, '1');
});

const CODEX_POLICY: Record<PermissionPolicy, string[]> = {
  default: [],
  auto_edit: ['--sandbox', 'danger-full-access', '-c', 'approval_policy="never"'],
  never: ['--sandbox', 'read-only', '-c', 'approval_policy="never"'],
  yolo: ['--dangerously-bypass-approvals-and-sandbox'],
};
for (const [policy, flags] of Object.entries(CODEX_POLICY) as [PermissionPolicy, string[]][]) {
  test(`harness_d: permission policy ${policy} → ${flags.join(' ') || 'the CLI defaults'}`, (t) => {
    const inv = d.build(input({ permissionPolicy: policy }));
    t.deepEqual(before(inv), ['exec', '--json', '--skip-git-repo-check', ...flags]);
  });
}

test('harness_d: codex exec --json, --model, reasoning through -c model_reasoning_effort', (t) => {
  const inv = d.build(input({ model: 'gpt-5-codex', reasoningEffort: 'x-high' }));
  t.is(inv.command, 'codex');
  t.is(flagValue(inv, '--model'), 'gpt-5-codex');
  t.true(inv.args.includes('model_reasoning_effort="xhigh"'));
  t.deepEqual(inv.args.slice(-2), ['--', 'Fix it']);
});

test('harness_d: OPENAI_BASE_URL becomes -c openai_base_url, OPENAI_API_KEY also CODEX_API_KEY (which exec reads)', (t) => {
  const inv = d.build(input({ env: { OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', OPENAI_API_KEY: 'sk-1' } }));
  t.is(flagValue(inv, '-c'), 'openai_base_url="http://127.0.0.1:9/v1"');
  t.like(inv.env, { OPENAI_API_KEY: 'sk-1', CODEX_API_KEY: 'sk-1' });
  t.is(d.build(input({ env: { OPENAI_API_KEY: 'sk-1', CODEX_API_KEY: 'sk-2' } })).env.CODEX_API_KEY, 'sk-2', 'a CODEX_API_KEY of its own wins');
  t.false(d.build(input()).args.some((a) => a.startsWith('openai_base_url')));
});

for (const [policy, mode] of [
  ['default', 'default'],
  ['auto_edit', 'auto_edit'],
  ['never', 'plan'],
  ['yolo', 'yolo'],
] as [PermissionPolicy, string][]) {
  test(`harness_e: permission policy ${policy} is --approval-mode ${mode}`, (t) => {
    t.is(flagValue(e.build(input({ permissionPolicy: policy })), '--approval-mode'), mode);
  });
}

test('harness_e: --prompt= keeps a leading dash, --model, no reasoning flag, vertex variant', (t) => {
  const inv = e.build(input({ prompt: '--not-a-flag', model: 'gemini-2.5-flash', reasoningEffort: 'high' }));
  t.is(inv.command, 'gemini');
  t.is(inv.args[0], '--prompt=--not-a-flag');
  t.is(flagValue(inv, '--output-format'), 'stream-json');
  t.is(flagValue(inv, '--model'), 'gemini-2.5-flash');
  t.deepEqual(inv, e.build(input({ prompt: '--not-a-flag', model: 'gemini-2.5-flash' })), 'reasoning is not supported, so ignored');
  t.is(e.build(input({ variant: 'vertex' })).env.GOOGLE_GENAI_USE_VERTEXAI, 'true');
  t.deepEqual(e.aliases, ['coder']);
});

test('harness_e: trusts the checkout; with GOOGLE_GEMINI_BASE_URL, API-key auth selected in a CLI home under .svc/home', (t) => {
  t.is(e.build(input()).env.GEMINI_CLI_TRUST_WORKSPACE, 'true');
  const plain = e.build(input({ env: { GEMINI_API_KEY: 'k' } }));
  t.false('GEMINI_CLI_HOME' in plain.env, "without a base URL the CLI keeps the user's own home (a login)");
  t.deepEqual(plain.files, {});
  const gateway = e.build(input({ env: { GEMINI_API_KEY: 'k', GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9' } }));
  t.is(gateway.env.GEMINI_CLI_HOME, '/w/.svc/home');
  t.deepEqual(JSON.parse(gateway.files['.svc/home/.gemini/settings.json']), { security: { auth: { selectedType: 'gemini-api-key' } } });
  const vertex = e.build(input({ variant: 'vertex', env: { GOOGLE_API_KEY: 'k', GOOGLE_GEMINI_BASE_URL: 'http://127.0.0.1:9' } }));
  t.is(JSON.parse(vertex.files['.svc/home/.gemini/settings.json']).security.auth.selectedType, 'vertex-ai');
});

test('harness_f: opencode run --format json, --model, --variant for reasoning, permissions as inline config', (t) => {
  const inv = f.build(input({ model: 'anthropic/claude-sonnet-4-5', reasoningEffort: 'x-high', permissionPolicy: 'never' }));
  t.is(inv.command, 'opencode');
  t.deepEqual(inv.args.slice(0, 3), ['run', '--format', 'json']);
  t.is(flagValue(inv, '--model'), 'anthropic/claude-sonnet-4-5');
  t.is(flagValue(inv, '--variant'), 'max');
  t.deepEqual(JSON.parse(inv.env.OPENCODE_CONFIG_CONTENT).permission, { edit: 'deny', bash: 'deny', webfetch: 'deny' });
  t.deepEqual(JSON.parse(f.build(input({ permissionPolicy: 'auto_edit' })).env.OPENCODE_CONFIG_CONTENT).permission, { edit: 'allow' });
  t.is(JSON.parse(f.build(input({ permissionPolicy: 'yolo' })).env.OPENCODE_CONFIG_CONTENT).permission.bash, 'allow');
  t.false('OPENCODE_CONFIG_CONTENT' in f.build(input()).env, "default keeps the user's own config");
});

test('harness_f: inline config the job carries (a provider) is kept under the policy permissions; its model is the invocation model when none is given', (t) => {
  const provider = { fake: { npm: '@ai-sdk/openai-compatible', options: { baseURL: 'http://127.0.0.1:9/v1' }, models: { m1: {} } } };
  const env = { OPENCODE_CONFIG_CONTENT: JSON.stringify({ provider, model: 'fake/m1', permission: { webfetch: 'allow', read: 'allow' } }) };
  const never = f.build(input({ permissionPolicy: 'never', env }));
  t.deepEqual(JSON.parse(never.env.OPENCODE_CONFIG_CONTENT), {
    provider,
    model: 'fake/m1',
    permission: { read: 'allow', edit: 'deny', bash: 'deny', webfetch: 'deny' },
  });
  t.is(never.model, 'fake/m1', 'no --model: the config names the model the CLI runs');
  t.false(never.args.includes('--model'));
  t.is(f.build(input({ model: 'openai/gpt-5', env })).model, 'openai/gpt-5');
  t.is(f.build(input({ env })).env.OPENCODE_CONFIG_CONTENT, env.OPENCODE_CONFIG_CONTENT, 'default leaves the config as it is');
  t.is(f.build(input({ permissionPolicy: 'yolo', env: { OPENCODE_CONFIG_CONTENT: 'not json' } })).model, undefined);
  t.is(f.build(input()).model, undefined);
});

test('harness_f on a managed model: a `managed` provider on the gateway (chat completions, the job token as key), its model sent as managed/<name>, title calls on it too', (t) => {
  t.is(f.speaks, 'chat');
  const own = { fake: { npm: '@ai-sdk/openai-compatible', options: { baseURL: 'http://127.0.0.1:9/v1' }, models: { m1: {} } } };
  const env = { OPENAI_BASE_URL: 'http://svc/inference/v1', OPENAI_API_KEY: 'job-token', OPENCODE_CONFIG_CONTENT: JSON.stringify({ provider: own }) };
  const inv = f.build(input({ model: 'managed/coder', reasoningEffort: 'high', permissionPolicy: 'auto_edit', env }));
  t.is(flagValue(inv, '--model'), 'managed/coder', 'opencode reads it as provider managed, model coder');
  t.is(flagValue(inv, '--variant'), 'high');
  const config = JSON.parse(inv.env.OPENCODE_CONFIG_CONTENT);
  t.deepEqual(config.provider.fake, own.fake, "the job's own providers stay");
  t.like(config.provider.managed, {
    npm: '@ai-sdk/openai-compatible',
    options: { baseURL: '{env:OPENAI_BASE_URL}', apiKey: '{env:OPENAI_API_KEY}' },
    models: { coder: { id: 'managed/coder', variants: { high: { reasoningEffort: 'high' }, max: { reasoningEffort: 'xhigh' } } } },
  });
  t.is(config.small_model, 'managed/coder');
  t.deepEqual(config.permission, { edit: 'allow' });
  t.false(inv.env.OPENCODE_CONFIG_CONTENT.includes('job-token'), 'the key is read from the environment, not copied into the config');
  t.truthy(JSON.parse(f.build(input({ model: 'managed/coder', env })).env.OPENCODE_CONFIG_CONTENT).provider.managed, 'under the default policy too');
  t.falsy(JSON.parse(f.build(input({ model: 'fake/m1', permissionPolicy: 'yolo', env })).env.OPENCODE_CONFIG_CONTENT).provider.managed);
});

test('every harness: a prompt over 100 kB goes to .svc/prompt.md and the argument points at it', (t) => {
  const prompt = `big ${'y'.repeat(150_000)}`;
  for (const h of [a, b, c, d, e, f]) {
    const inv = h.build(input({ prompt }));
    t.is(inv.files['.svc/prompt.md'], prompt, h.id);
    t.true(
      inv.args.every((arg) => arg.length < 100_000),
      h.id,
    );
    t.true(
      inv.args.some((arg) => arg.includes('.svc/prompt.md')),
      h.id,
    );
  }
});
