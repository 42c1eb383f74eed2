import test from 'ava';
import { call } from '../support/server.ts';
import { assertError, assertPage, missingOrgId, newUser } from '../orgs/helpers.ts';
import { managed, target, teardown, world, type World } from './helpers.ts';

/** Providers, targets, the managed-model catalog and GET /models: shapes, scopes, access and bad input. */
let w: World;
test.before(async () => {
  w = await world();
});
test.after.always(async () => {
  await teardown(w);
});

const TARGET_FIELDS = [
  'allowed_models',
  'base_url',
  'created_at',
  'created_by',
  'credential_secret',
  'id',
  'idle_timeout_ms',
  'kind',
  'name',
  'org_id',
  'request_timeout_ms',
  'responses_api',
  'scope',
  'updated_at',
];

test.serial('an org admin creates, reads, changes and deletes an org target; the secret name is shown, never its value', async (t) => {
  const created = await w.orgAdmin.api.post('/inference/targets', {
    org_id: w.org,
    name: 'org-ai',
    kind: 'openai',
    base_url: `${w.fake.url}/v1/`,
    credential_secret: 'FAKE_KEY',
    allowed_models: ['gpt-fake-1'],
  });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.deepEqual(Object.keys(created.body).sort(), TARGET_FIELDS);
  t.like(created.body, {
    org_id: w.org,
    scope: 'org',
    kind: 'openai',
    base_url: `${w.fake.url}/v1`,
    credential_secret: 'FAKE_KEY',
    allowed_models: ['gpt-fake-1'],
    request_timeout_ms: null,
  });
  t.regex(created.body.id, /^itgt_/);
  t.false(JSON.stringify(created.body).includes(w.fake.apiKey));

  const again = await w.orgAdmin.api.post('/inference/targets', { org_id: w.org, name: 'org-ai', kind: 'anthropic', base_url: w.fake.url });
  assertError(t, again, 409, `org ${w.org} already has an inference target named org-ai`);

  const patched = await w.orgAdmin.api.patch(`/inference/targets/${created.body.id}`, { request_timeout_ms: 5000, allowed_models: [] });
  t.like(patched.body, { request_timeout_ms: 5000, allowed_models: [] });
  const listed = await w.orgAdmin.api.get(`/inference/targets?org_id=${w.org}`);
  t.deepEqual(assertPage(t, listed, { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [created.body.id]);

  // members may use models but not administer targets; another org's admin does not see them at all
  assertError(t, await w.member.api.get(`/inference/targets?org_id=${w.org}`), 403, 'missing permission inference:admin');
  assertError(
    t,
    await w.member.api.post('/inference/targets', { org_id: w.org, name: 'x', kind: 'openai', base_url: 'https://example.com/v1' }),
    403,
    'missing permission inference:admin',
  );
  const stranger = await newUser(w.ctx, 'inf-stranger');
  assertError(t, await stranger.api.get(`/inference/targets/${created.body.id}`), 404, `inference target ${created.body.id} not found`);
  assertError(t, await stranger.api.get(`/inference/targets?org_id=${missingOrgId}`), 404, /not found/);

  const removed = await call(w.ctx.srv.server, 'DELETE', `/inference/targets/${created.body.id}`, undefined, w.orgAdmin.token);
  t.is(removed.statusCode, 204);
  assertError(t, await w.orgAdmin.api.get(`/inference/targets/${created.body.id}`), 404, `inference target ${created.body.id} not found`);
});

test.serial("system targets are the system administrator's; bad targets are 400 or 422 and write nothing", async (t) => {
  assertError(
    t,
    await w.orgAdmin.api.post('/inference/targets', { name: 'sys', kind: 'openai', base_url: 'https://example.com/v1' }),
    403,
    /system administrator/,
  );
  assertError(t, await w.orgAdmin.api.get('/inference/targets'), 403, /system administrator/);
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  t.like(sys, { org_id: null, scope: 'system' });

  const bad = [
    [{ name: 'Bad Name', kind: 'openai', base_url: 'https://example.com' }, /"name"/],
    [{ name: 'k', kind: 'gemini', base_url: 'https://example.com' }, /"kind" must be one of \[openai, anthropic\]/],
    [{ name: 'k', kind: 'openai', base_url: 'ftp://example.com' }, /"base_url"/],
    [{ name: 'k', kind: 'openai', base_url: 'https://user:sk-secret@example.com/v1' }, /must not carry a user or password/],
    [{ name: 'k', kind: 'openai', base_url: 'https://example.com', credential_secret: 'sk-live-value' }, /"credential_secret"/],
    [{ name: 'k', kind: 'openai', base_url: 'https://example.com', request_timeout_ms: -1 }, /"request_timeout_ms"/],
  ] as const;
  for (const [body, message] of bad) assertError(t, await w.admin.post('/inference/targets', body), 400, message);
  // org targets may not reach metadata addresses
  assertError(
    t,
    await w.orgAdmin.api.post('/inference/targets', { org_id: w.org, name: 'meta', kind: 'openai', base_url: 'http://169.254.169.254/v1' }),
    422,
    /base_url is refused: 169\.254\.169\.254 is a link-local/,
  );
  t.is(Number((await w.ctx.srv.kernel.db('inference_targets').count({ n: '*' }).first())!.n), 1);
});

test.serial('managed models: org and system entries, prices, projects; the catalog and GET /models show them to whom may use them', async (t) => {
  const sys = (await w.admin.get('/inference/targets')).body.data[0];
  const orgTarget = await target(
    w,
    { org_id: w.org, name: 'org-claude', kind: 'anthropic', base_url: w.fake.url, credential_secret: 'FAKE_KEY' },
    w.orgAdmin.api,
  );
  const fast = await managed(w, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1', prices: { input: 0.5, output: 1.5, cache_read: 0.05 } });
  t.like(fast, {
    canonical_model_id: 'managed/fast',
    name: 'fast',
    scope: 'system',
    org_id: null,
    target: { id: sys.id, name: 'sys-ai', kind: 'openai' },
    upstream_model: 'gpt-fake-1',
    prices: { input: 0.5, output: 1.5, cache_read: 0.05, cache_write: null, reasoning: null },
    currency: 'USD',
    project_ids: null,
  });
  t.regex(fast.id, /^imod_/, "the interface's prefix");
  const smart = await managed(
    w,
    { org_id: w.org, name: 'managed/smart', target_id: orgTarget.id, upstream_model: 'claude-fake-1', project_ids: [w.project] },
    w.orgAdmin.api,
  );
  t.like(smart, { canonical_model_id: 'managed/smart', scope: 'org', project_ids: [w.project] });

  // bad input: negative prices, unknown targets, another org's target, projects of another org
  assertError(
    t,
    await w.admin.post('/inference/managed-models', { name: 'neg', target_id: sys.id, upstream_model: 'm', prices: { output: -1 } }),
    400,
    '"prices.output" must be a non-negative price',
  );
  assertError(
    t,
    await w.orgAdmin.api.post('/inference/managed-models', {
      org_id: w.org,
      name: 'dup',
      target_id: orgTarget.id,
      upstream_model: 'm',
      project_ids: ['proj_01h455vb4pex5vsknk084sn02q'],
    }),
    422,
    /is not a live project of org/,
  );
  assertError(
    t,
    await w.admin.post('/inference/managed-models', { name: 'x', target_id: orgTarget.id, upstream_model: 'm' }),
    422,
    `inference target ${orgTarget.id} not found in the system`,
  );
  assertError(
    t,
    await w.orgAdmin.api.post('/inference/managed-models', { org_id: w.org, name: 'smart', target_id: orgTarget.id, upstream_model: 'm' }),
    409,
    `managed/smart already exists in org ${w.org}`,
  );
  assertError(
    t,
    await w.member.api.post('/inference/managed-models', { org_id: w.org, name: 'y', target_id: orgTarget.id, upstream_model: 'm' }),
    403,
    'missing permission inference:admin',
  );

  const forOrg = await w.member.api.get(`/inference/managed-models?org_id=${w.org}`);
  t.deepEqual(assertPage(t, forOrg, { limit: 10, offset: 0, count: 2, total: 2, has_more: false }, 'canonical_model_id'), ['managed/smart', 'managed/fast']);
  const forOther = await w.member.api.get(`/inference/managed-models?project_id=${w.otherProject}`);
  t.deepEqual(
    forOther.body.data.map((m: any) => m.canonical_model_id),
    ['managed/fast'],
  );
  const systemOnly = await (await newUser(w.ctx, 'inf-nobody')).api.get('/inference/managed-models');
  t.deepEqual(
    systemOnly.body.data.map((m: any) => m.canonical_model_id),
    ['managed/fast'],
  );

  const models = await w.member.api.get(`/models?org_id=${w.org}&limit=100`);
  t.is(models.statusCode, 200, JSON.stringify(models.body));
  const ids = models.body.data.map((m: any) => m.id);
  t.deepEqual(ids.slice(0, 2), ['managed/fast', 'managed/smart']);
  t.like(models.body.data[1], { object: 'model', source: 'managed', kind: 'anthropic', target: 'org-claude', provider: null, upstream_model: 'claude-fake-1' });
  t.true(ids.includes('gpt-fake-1') && ids.includes('claude-fake-1'), 'provider models from the fake upstream');
  t.deepEqual(
    (await w.member.api.get(`/models?org_id=${w.org}&source=managed`)).body.data.map((m: any) => m.id),
    ['managed/fast', 'managed/smart'],
  );

  const del = await call(
    w.ctx.srv.server,
    'DELETE',
    `/inference/managed-models/${encodeURIComponent('managed/smart')}?org_id=${w.org}`,
    undefined,
    w.orgAdmin.token,
  );
  t.is(del.statusCode, 204);
  assertError(
    t,
    await call(w.ctx.srv.server, 'DELETE', `/inference/managed-models/managed/smart?org_id=${w.org}`, undefined, w.orgAdmin.token),
    404,
    `model managed/smart not found in org ${w.org}`,
  );
  // a target in use cannot go
  assertError(
    t,
    await call(w.ctx.srv.server, 'DELETE', `/inference/targets/${sys.id}`, undefined, w.ctx.adminToken),
    409,
    'inference target sys-ai is used by managed models managed/fast; delete them first',
  );
});

test.serial('providers: kinds, base URLs and secret names (no values); models from the provider, cached, else configured', async (t) => {
  const providers = await w.member.api.get('/providers');
  t.is(providers.statusCode, 200, JSON.stringify(providers.body));
  const byName = Object.fromEntries(providers.body.data.map((p: any) => [p.name, p]));
  t.like(byName.openai, {
    kind: 'openai',
    base_url: 'https://api.openai.com/v1',
    credential_secret: 'OPENAI_API_KEY',
    models_endpoint: 'https://api.openai.com/v1/models',
  });
  t.like(byName.anthropic, { kind: 'anthropic', credential_secret: 'ANTHROPIC_API_KEY' });
  t.like(byName.fakeclaude, { kind: 'anthropic', base_url: w.fake.url, models_endpoint: `${w.fake.url}/v1/models` });
  t.false(JSON.stringify(providers.body).includes(w.fake.apiKey));

  const before = w.fake.calls.length;
  const models = await w.member.api.get('/providers/fakeclaude/models');
  t.deepEqual(
    models.body.data.map((m: any) => [m.id, m.source]),
    [
      ['gpt-fake-1', 'provider'],
      ['claude-fake-1', 'provider'],
    ],
  );
  await w.member.api.get('/providers/fakeclaude/models');
  t.is(w.fake.calls.filter((c, i) => i >= before && c.path === '/v1/models').length, 0, 'cached from the GET /models call of the test before');
  // no credential set: the provider is not asked, the configured list answers
  t.deepEqual((await w.member.api.get('/providers/openai/models')).body.data, []);
  assertError(t, await w.member.api.get('/providers/nope/models'), 404, /^provider nope not found; configured: /);
  t.is((await call(w.ctx.srv.server, 'GET', '/providers')).statusCode, 401);
});
