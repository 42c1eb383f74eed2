import test from 'ava';
import { ManagedModelsToken } from '../../core/ports/inference.ts';
import { managed, target, teardown, world, type World } from './helpers.ts';

/** The ManagedModels port the worker calls for `managed/<name>` models of a harness profile. */
let w: World;
test.before(async () => {
  w = await world();
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  const claude = await target(w, { org_id: w.org, name: 'claude', kind: 'anthropic', base_url: w.fake.url, credential_secret: 'FAKE_KEY' });
  await managed(w, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1' });
  await managed(w, { org_id: w.org, name: 'smart', target_id: claude.id, upstream_model: 'claude-fake-1', project_ids: [w.project] });
});
test.after.always(async () => {
  await teardown(w);
});

const resolve = (model: string, speaks: 'openai' | 'anthropic', projectId = w.project) =>
  w.ctx.srv.kernel.container.resolve(ManagedModelsToken).resolve({ model, speaks, projectId, orgId: w.org, jobToken: 'job-token-value' });

test('a chat-completions CLI goes through the proxy with its job token, whatever the target speaks', async (t) => {
  for (const model of ['managed/fast', 'managed/smart']) {
    const r = await resolve(model, 'openai');
    t.like(r, { model, provider: 'openai', via: 'proxy', apiKey: 'job-token-value', baseUrl: `${w.ctx.srv.url}/inference/v1` });
    t.deepEqual(r.env, { OPENAI_BASE_URL: `${w.ctx.srv.url}/inference/v1`, OPENAI_API_KEY: 'job-token-value' });
    t.false(JSON.stringify(r).includes(w.fake.apiKey), 'no provider key');
  }
});

test('an Anthropic-messages CLI gets the Anthropic target directly, its key marked secret; an OpenAI target cannot serve it', async (t) => {
  const r = await resolve('managed/smart', 'anthropic');
  t.deepEqual(r, {
    model: 'claude-fake-1',
    provider: 'anthropic',
    via: 'direct',
    baseUrl: w.fake.url,
    apiKey: w.fake.apiKey,
    env: { ANTHROPIC_BASE_URL: w.fake.url, ANTHROPIC_API_KEY: w.fake.apiKey },
    secrets: [w.fake.apiKey],
  });
  const err = await t.throwsAsync(resolve('managed/fast', 'anthropic'));
  t.is((err as any).output.statusCode, 422);
  t.is(err!.message, 'managed/fast is served by inference target sys-ai (openai); a harness speaking Anthropic messages cannot use it');
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
