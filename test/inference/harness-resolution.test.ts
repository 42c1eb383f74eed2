import test from 'ava';
import { ManagedModelsToken } from '../../core/ports/inference.ts';
import { call } from '../support/server.ts';
import { managed, target, teardown, world, type World } from './helpers.ts';

/** The ManagedModels port the worker calls for `managed/<name>` models of a harness profile. */
let w: World;
test.before(async () => {
  w = await world();
  // Handed to the CLI directly, the org's Anthropic target's system key reaches the job: shared with jobs (docs/security.md).
  const shared = await call(w.ctx.srv.server, 'PUT', '/system/secrets/FAKE_KEY', { shared_with_jobs: true }, w.ctx.adminToken);
  if (shared.statusCode !== 200) throw new Error(`share FAKE_KEY: ${JSON.stringify(shared.body)}`);
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  const claude = await target(w, { org_id: w.org, name: 'claude', kind: 'anthropic', base_url: w.fake.url, credential_secret: 'FAKE_KEY' });
  await managed(w, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1' });
  await managed(w, { org_id: w.org, name: 'smart', target_id: claude.id, upstream_model: 'claude-fake-1', project_ids: [w.project] });
});
test.after.always(async () => {
  await teardown(w);
});

const resolve = (model: string, speaks: 'openai' | 'anthropic' | 'responses' | 'chat' | 'gemini', projectId = w.project) =>
  w.ctx.srv.kernel.container.resolve(ManagedModelsToken).resolve({ model, speaks, projectId, orgId: w.org, jobToken: 'job-token-value' });

test('a chat-completions CLI goes through the proxy with its job token, whatever the target speaks', async (t) => {
  for (const model of ['managed/fast', 'managed/smart']) {
    const r = await resolve(model, 'openai');
    t.like(r, { model, protocol: 'chat', provider: 'openai', via: 'proxy', apiKey: 'job-token-value', baseUrl: `${w.ctx.srv.url}/inference/v1` });
    t.deepEqual(r.env, { OPENAI_BASE_URL: `${w.ctx.srv.url}/inference/v1`, OPENAI_API_KEY: 'job-token-value' });
    t.false(JSON.stringify(r).includes(w.fake.apiKey), 'no provider key');
  }
});

test('an Anthropic-messages CLI goes through the gateway too, with its job token as ANTHROPIC_API_KEY: never the target key, whatever the target speaks', async (t) => {
  for (const model of ['managed/smart', 'managed/fast']) {
    const r = await resolve(model, 'anthropic');
    t.deepEqual(r, {
      model,
      protocol: 'anthropic',
      provider: 'anthropic',
      via: 'proxy',
      baseUrl: `${w.ctx.srv.url}/inference`,
      apiKey: 'job-token-value',
      env: { ANTHROPIC_BASE_URL: `${w.ctx.srv.url}/inference`, ANTHROPIC_API_KEY: 'job-token-value' },
      secrets: ['job-token-value'],
    });
    t.false(JSON.stringify(r).includes(w.fake.apiKey), 'no provider key');
  }
});

test('each protocol gets its own base URL on the gateway: Responses and chat under /inference/v1, Gemini at /inference; an unknown protocol is 422', async (t) => {
  const base = `${w.ctx.srv.url}/inference`;
  for (const [speaks, env] of [
    ['responses', { OPENAI_BASE_URL: `${base}/v1`, OPENAI_API_KEY: 'job-token-value' }],
    ['chat', { OPENAI_BASE_URL: `${base}/v1`, OPENAI_API_KEY: 'job-token-value' }],
    ['gemini', { GOOGLE_GEMINI_BASE_URL: base, GEMINI_API_KEY: 'job-token-value' }],
  ] as const) {
    const r = await resolve('managed/smart', speaks);
    t.like(r, { model: 'managed/smart', protocol: speaks, via: 'proxy', apiKey: 'job-token-value' }, speaks);
    t.deepEqual(r.env, env, speaks);
    t.false(JSON.stringify(r).includes(w.fake.apiKey), speaks);
  }
  const err = await t.throwsAsync(resolve('managed/fast', 'cobol' as never));
  t.is((err as any).output.statusCode, 422);
  t.is(err!.message, 'a harness speaking cobol cannot use managed/fast: the gateway speaks anthropic, responses, chat, gemini');
});

test('unknown models, and models the project may not use, are 404 naming the model', async (t) => {
  for (const [model, project] of [
    ['managed/nope', w.project],
    ['managed/smart', w.otherProject],
  ]) {
    const err = await t.throwsAsync(resolve(model, 'openai', project));
    t.is((err as any).output.statusCode, 404);
    t.is(err!.message, `model ${model} not found`);
  }
});
