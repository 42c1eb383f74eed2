import test from 'ava';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HarnessRegistryToken } from '../../core/ports/harness.ts';
import { as, bootstrapAdmin, call, startTestServer, type TestServer } from '../support/server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = path.join(ROOT, 'test/fixtures/bin');
const EXAMPLE = path.join(ROOT, 'examples/harness-plugin');

// Auth detection reads this process's environment and home directory: make both known.
const home = await mkdtemp(path.join(tmpdir(), 'svc-harness-home-'));
process.env.HOME = home;
for (const name of Object.keys(process.env)) if (/_API_KEY$|^CLAUDE_CODE_|^AWS_|^ANTHROPIC_|^GOOGLE_|^CODEX_|^CLOUD_ML/.test(name)) delete process.env[name];
process.env.CLAUDE_CODE_OAUTH_TOKEN = 'sk-ant-oat-test-not-shown';
process.env.ACME_API_KEY = 'acme-test';
await mkdir(path.join(home, '.local/share/opencode'), { recursive: true });
await writeFile(path.join(home, '.local/share/opencode/auth.json'), '{}');

let s: TestServer;
let api: ReturnType<typeof as>;
let token: string;
test.before(async () => {
  s = await startTestServer({
    env: { SVC_HARNESS_E_COMMAND: '/nonexistent/gemini' },
    overrides: {
      harnesses: {
        plugins: [EXAMPLE],
        acme: { command: path.join(EXAMPLE, 'bin/acme-agent') },
        harness_a: { command: path.join(BIN, 'fake-claude') },
        harness_b: { command: path.join(BIN, 'fake-claude') },
        harness_c: { command: 'svc-no-such-claude' },
        harness_d: { command: path.join(BIN, 'fake-codex') },
        harness_f: { command: path.join(BIN, 'fake-opencode') },
      },
    },
  });
  token = (await bootstrapAdmin(s.server)).token;
  api = as(s.server, token);
});
test.after.always(async () => {
  await s?.stop();
  await rm(home, { recursive: true, force: true });
});

test('GET /harnesses lists the six built-ins and the plugin harness with the spec fields', async (t) => {
  const res = await api.get('/harnesses');
  t.is(res.statusCode, 200);
  t.deepEqual(
    res.body.data.map((h: { name: string }) => h.name),
    ['harness_a', 'harness_b', 'harness_c', 'harness_d', 'harness_e', 'harness_f', 'acme'],
  );
  t.like(res.body.pagination, { limit: 10, offset: 0, count: 7, total: 7, has_more: false });
  const e = res.body.data[4];
  t.deepEqual(Object.keys(e).sort(), ['aliases', 'auth', 'capabilities', 'description', 'name', 'variants']);
  t.deepEqual(e.aliases, ['coder']);
  t.deepEqual(e.variants[0], { name: 'vertex', description: e.variants[0].description, source: 'builtin' });
  t.deepEqual(e.capabilities, {
    supports_model: true,
    model_examples: ['gemini-2.5-pro', 'gemini-2.5-flash'],
    default_model: null,
    reasoning: { supported: false, levels: [], mode: null },
  });
  t.is(res.body.data[3].capabilities.default_model, 'gpt-6.2-sol', "harness_d: Codex's default model, which a job naming none runs explicitly");
  t.deepEqual(res.body.data[1].capabilities.reasoning.levels, ['low', 'medium', 'high', 'x-high']);
  const page = await api.get('/harnesses?limit=2&offset=2');
  t.deepEqual(
    page.body.data.map((h: { name: string }) => h.name),
    ['harness_c', 'harness_d'],
  );
  t.like(page.body.pagination, { count: 2, total: 7, has_more: true });
});

test('auth: available with the binary found and a key in the environment (the value never shown)', async (t) => {
  const res = await api.get('/harnesses/harness_b');
  t.is(res.statusCode, 200);
  t.deepEqual(res.body.auth, {
    available: true,
    reason: `${path.join(BIN, 'fake-claude')} found; credentials from the environment (CLAUDE_CODE_OAUTH_TOKEN)`,
    instructions: [],
  });
  t.false(JSON.stringify(res.body).includes('sk-ant-oat-test-not-shown'));
});

test('auth: a login file under the home directory counts', async (t) => {
  t.like((await api.get('/harnesses/harness_f')).body.auth, {
    available: true,
    reason: `${path.join(BIN, 'fake-opencode')} found; logged in (~/.local/share/opencode/auth.json)`,
  });
});

test('auth: a binary that is not there is unavailable, with how to install or configure it', async (t) => {
  const { auth } = (await api.get('/harnesses/coder')).body;
  t.false(auth.available);
  t.is(auth.reason, "binary '/nonexistent/gemini' not found");
  t.is(auth.instructions[0], 'Install the CLI for the user that runs jobs, or set harnesses.harness_e.command (SVC_HARNESS_E_COMMAND) to its path.');
  t.true(auth.instructions.some((i: string) => i.includes('GEMINI_API_KEY')));
  const c = (await api.get('/harnesses/harness_c')).body.auth;
  t.false(c.available);
  t.is(c.reason, "binary 'svc-no-such-claude' not found on PATH");
});

test('auth: no credentials is unavailable with the variables to set; a system secret shared with jobs then makes it available', async (t) => {
  const before = (await api.get('/harnesses/harness_d')).body.auth;
  t.false(before.available);
  t.is(before.reason, 'no credentials: set OPENAI_API_KEY, or CODEX_API_KEY, or log in (~/.codex/auth.json)');
  t.true(before.instructions[0].includes('OPENAI_API_KEY'));
  t.is((await api.post('/system/secrets', { name: 'OPENAI_API_KEY', value: 'sk-openai-secret-value' })).statusCode, 201);
  // The key goes into the agent's process: a system secret must be shared with jobs first.
  const unshared = (await api.get('/harnesses/harness_d')).body.auth;
  t.false(unshared.available);
  t.is(
    unshared.reason,
    'no credentials: set OPENAI_API_KEY, or CODEX_API_KEY, or log in (~/.codex/auth.json); secret OPENAI_API_KEY exists only at system scope and is not shared with jobs; a system admin can set shared_with_jobs',
  );
  const registry0 = s.kernel.container.resolve(HarnessRegistryToken);
  t.deepEqual(await registry0.credentials('harness_d'), {});
  t.is((await call(s.server, 'PUT', '/system/secrets/OPENAI_API_KEY', { shared_with_jobs: true }, token)).statusCode, 200);
  const after = await api.get('/harnesses/harness_d');
  t.deepEqual(after.body.auth, {
    available: true,
    reason: `${path.join(BIN, 'fake-codex')} found; credentials from secrets and the environment (OPENAI_API_KEY)`,
    instructions: [],
  });
  t.false(JSON.stringify(after.body).includes('sk-openai-secret-value'));
  const registry = s.kernel.container.resolve(HarnessRegistryToken);
  t.deepEqual(await registry.credentials('harness_d'), { OPENAI_API_KEY: 'sk-openai-secret-value' });
  // The endpoint variable is no credential, but is passed along like one when set.
  t.is((await api.post('/system/secrets', { name: 'OPENAI_BASE_URL', value: 'http://127.0.0.1:9/v1', shared_with_jobs: true })).statusCode, 201);
  t.deepEqual(await registry.credentials('harness_d'), { OPENAI_API_KEY: 'sk-openai-secret-value', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
  t.is((await api.get('/harnesses/harness_d')).body.auth.reason, after.body.auth.reason);
});

test('the plugin harness from config: listed, its variants sourced to the plugin, configured binary, available', async (t) => {
  const res = await api.get('/harnesses/acme');
  t.is(res.statusCode, 200);
  t.deepEqual(res.body.variants, [{ name: 'fast', description: 'Shorter plans (--fast)', source: EXAMPLE }]);
  t.like(res.body.auth, { available: true });
  const registry = s.kernel.container.resolve(HarnessRegistryToken);
  const inv = registry.get('acme')!.build({ prompt: 'hi', workspace: '/w', permissionPolicy: 'yolo', env: {} });
  t.is(inv.command, path.join(EXAMPLE, 'bin/acme-agent'));
  t.is(inv.env.ACME_API_KEY, 'acme-test', "the server's credential variables reach the CLI");
});

test('the registry serves the worker: configured commands, env override, profiles with availability', async (t) => {
  const registry = s.kernel.container.resolve(HarnessRegistryToken);
  t.is(s.kernel.config.harnesses.harness_e && (s.kernel.config.harnesses.harness_e as { command: string }).command, '/nonexistent/gemini');
  t.is(registry.get('coder')?.id, 'harness_e');
  t.is(registry.get('harness_b')!.build({ prompt: 'x', workspace: '/w', permissionPolicy: 'default', env: {} }).command, path.join(BIN, 'fake-claude'));
  const agents = {
    version: 1 as const,
    profiles: { p: [{ harness: 'coder' }, { harness: 'harness_c' }, { harness: 'acme', model: 'acme-small' }] },
    availability: { drop_unavailable: true },
  };
  const choice = await registry.resolve({ harness_profile: 'p' }, agents);
  t.like(choice, { harness: 'acme', model: 'acme-small' });
  t.deepEqual(
    choice.dropped.map((d) => d.harness),
    ['harness_e', 'harness_c'],
  );
});

test('bad input: the colon syntax, unknown names, bad paging, no token', async (t) => {
  const colon = await api.get('/harnesses/harness_b:fast');
  t.is(colon.statusCode, 400);
  t.regex(colon.body.message, /harness:variant syntax is not parsed, use harness_options\.variant/);
  const unknown = await api.get('/harnesses/harness_z');
  t.is(unknown.statusCode, 404);
  t.regex(unknown.body.message, /^unknown harness 'harness_z' \(known: harness_a, .*coder.*acme\)$/);
  t.is((await api.get('/harnesses/CODER')).statusCode, 400);
  t.is((await api.get(`/harnesses/${'a'.repeat(101)}`)).statusCode, 400);
  t.is((await api.get('/harnesses?limit=0')).statusCode, 400);
  t.is((await api.get('/harnesses?offset=-1')).statusCode, 400);
  t.is((await as(s.server).get('/harnesses')).statusCode, 401);
  t.is((await as(s.server).get('/harnesses/harness_b')).statusCode, 401);
});

const bootFails = async (harnesses: Record<string, unknown>) => {
  const err = await startTestServer({ overrides: { harnesses } }).then(
    async (srv) => {
      await srv.stop();
      return null;
    },
    (e: Error) => e,
  );
  return err?.message ?? 'booted';
};

test('a plugin with the wrong shape fails the boot with an error naming it', async (t) => {
  t.regex(
    await bootFails({ plugins: ['./test/fixtures/harness-plugins/bad-shape.ts'] }),
    /^harnesses\.plugins: '\.\/test\/fixtures\/harness-plugins\/bad-shape\.ts' does not export a harness definition .*build must be a function/,
  );
});

test('a plugin that does not load, an id clash and settings for an unknown harness fail the boot by name', async (t) => {
  t.regex(await bootFails({ plugins: ['svc-harness-does-not-exist'] }), /^harnesses\.plugins: 'svc-harness-does-not-exist' could not be loaded/);
  t.regex(
    await bootFails({ plugins: ['./test/fixtures/harness-plugins/clash.ts'] }),
    /harness name 'harness_b' of plugin '\.\/test\/fixtures\/harness-plugins\/clash\.ts' is already taken by harness_b \(builtin\)/,
  );
  t.regex(await bootFails({ harness_zz: { command: 'x' } }), /^harnesses\.harness_zz: no harness has this id/);
  t.regex(await bootFails({ harness_b: { command: '' } }), /harnesses\.harness_b\.command/);
});
