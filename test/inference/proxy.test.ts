import test from 'ava';
import { assertError } from '../orgs/helpers.ts';
import { call } from '../support/server.ts';
import { chat, jobToken, managed, target, teardown, world, type World } from './helpers.ts';

/** The chat-completions proxy, not streamed: both wire formats, tool calls, upstream errors, failures, usage, and who may use what. */
let w: World;
let sys: any;
let claude: any;
const user = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Say hello' },
];
const ORG = () => ({ 'x-svc-org': w.org });

test.before(async () => {
  w = await world({ requestTimeoutMs: 800, idleTimeoutMs: 800 });
  // The org's own target below uses the system key FAKE_KEY: an org's target is called at a base URL
  // the org chose, so it reaches a system secret only when that is shared with jobs (the system target needs no such thing).
  const shared = await call(w.ctx.srv.server, 'PUT', '/system/secrets/FAKE_KEY', { shared_with_jobs: true }, w.ctx.adminToken);
  if (shared.statusCode !== 200) throw new Error(`share FAKE_KEY: ${JSON.stringify(shared.body)}`);
  sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  claude = await target(w, {
    org_id: w.org,
    name: 'claude',
    kind: 'anthropic',
    base_url: w.fake.url,
    credential_secret: 'FAKE_KEY',
    allowed_models: ['claude-fake-1', 'tools-claude', 'limited-claude', 'cut-claude'],
  });
  await managed(w, { name: 'fast', target_id: sys.id, upstream_model: 'gpt-fake-1' });
  await managed(w, { org_id: w.org, name: 'smart', target_id: claude.id, upstream_model: 'claude-fake-1', project_ids: [w.project] });
});
test.after.always(async () => {
  await teardown(w);
});

const usageRows = () => w.ctx.srv.kernel.db('inference_usage').orderBy('id');

test.serial('an OpenAI-compatible target: the answer passes through, the key goes upstream, usage is recorded in disjoint classes', async (t) => {
  const res = await chat(w, w.member.token, { model: 'managed/fast', messages: user }, ORG());
  t.is(res.statusCode, 200, res.raw);
  t.like(res.body, {
    object: 'chat.completion',
    model: 'gpt-fake-1',
    choices: [{ message: { role: 'assistant', content: 'Hello from gpt-fake-1' }, finish_reason: 'stop' }],
  });
  const sent = w.fake.calls.at(-1)!;
  t.is(sent.path, '/v1/chat/completions');
  t.is(sent.headers.authorization, `Bearer ${w.fake.apiKey}`);
  t.like(sent.body, { model: 'gpt-fake-1', messages: user });
  const [row] = await usageRows();
  t.like(row, {
    org_id: w.org,
    project_id: null,
    job_id: null,
    principal_kind: 'user',
    principal_id: w.member.id,
    target_id: sys.id,
    provider_kind: 'openai',
    model: 'managed/fast',
    upstream_model: 'gpt-fake-1',
    stream: false,
    status: 200,
    error: null,
    input_tokens: 16,
    cache_read_tokens: 5,
    output_tokens: 6,
    reasoning_tokens: 2,
    cache_write_tokens: 0,
  });
  t.true(row.latency_ms >= 0 && row.first_byte_ms >= 0);
});

test.serial('an Anthropic target: chat completions translated to messages and back, tool calls included', async (t) => {
  const res = await chat(w, w.member.token, { model: 'managed/smart', messages: user, max_tokens: 50, stop: 'END' }, { 'x-svc-project': w.project });
  t.is(res.statusCode, 200, res.raw);
  const sent = w.fake.calls.at(-1)!;
  t.is(sent.path, '/v1/messages');
  t.is(sent.headers['x-api-key'], w.fake.apiKey);
  t.is(sent.headers['anthropic-version'], '2023-06-01');
  t.deepEqual(sent.body, {
    model: 'claude-fake-1',
    system: 'Be brief.',
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello' }] }],
    max_tokens: 50,
    stop_sequences: ['END'],
  });
  t.like(res.body, {
    id: 'msg_fake1',
    object: 'chat.completion',
    model: 'claude-fake-1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the fake upstream.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 20, completion_tokens: 6, total_tokens: 26, prompt_tokens_details: { cached_tokens: 4 } },
  });
  t.like((await usageRows()).at(-1), {
    project_id: w.project,
    provider_kind: 'anthropic',
    input_tokens: 13,
    cache_read_tokens: 4,
    cache_write_tokens: 3,
    output_tokens: 6,
  });

  const tools = [
    {
      type: 'function',
      function: { name: 'weather', description: 'Weather of a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    },
  ];
  const called = await chat(
    w,
    w.member.token,
    {
      model: 'claude/tools-claude',
      tools,
      tool_choice: 'required',
      messages: [
        ...user,
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } }] },
        { role: 'tool', tool_call_id: 'call_0', content: 'sunny' },
      ],
    },
    ORG(),
  );
  t.is(called.statusCode, 200, called.raw);
  t.like(w.fake.calls.at(-1)!.body, {
    tools: [{ name: 'weather', description: 'Weather of a city', input_schema: { type: 'object' } }],
    tool_choice: { type: 'any' },
    max_tokens: 4096,
    messages: [
      { role: 'user' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_0', name: 'weather', input: { city: 'Rome' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_0', content: 'sunny' }] },
    ],
  });
  t.like(called.body.choices[0], {
    finish_reason: 'tool_calls',
    message: { content: null, tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
  });

  const openAiTools = await chat(w, w.member.token, { model: 'sys-ai/tools-gpt', tools, messages: user }, ORG());
  t.like(openAiTools.body.choices[0], {
    finish_reason: 'tool_calls',
    message: { tool_calls: [{ function: { name: 'weather', arguments: '{"city":"Paris"}' } }] },
  });
});

test.serial('upstream errors pass through with their status, never with the key in them; no answer is 504, a broken one 502', async (t) => {
  const limited = await chat(w, w.member.token, { model: 'sys-ai/limited-gpt', messages: user }, ORG());
  t.is(limited.statusCode, 429);
  t.is(limited.headers['retry-after'], '7');
  t.is(limited.body.error.code, 'rate_limit_exceeded');
  t.is(limited.body.error.message, 'Rate limit reached for key ***');
  const limitedClaude = await chat(w, w.member.token, { model: 'claude/limited-claude', messages: user }, ORG());
  t.is(limitedClaude.statusCode, 429);
  t.deepEqual(limitedClaude.body, { error: { message: 'rate limited for key ***', type: 'rate_limit_error', code: null } });

  const broken = await chat(w, w.member.token, { model: 'sys-ai/broken-gpt', messages: user }, ORG());
  t.is(broken.statusCode, 500);
  t.is(broken.body.error.message, 'The server had an error');

  assertError(
    t,
    await chat(w, w.member.token, { model: 'sys-ai/silent-gpt', messages: user }, ORG()),
    504,
    'inference target sys-ai: the upstream did not answer within 800 ms',
  );
  assertError(
    t,
    await chat(w, w.member.token, { model: 'claude/cut-claude', messages: user }, ORG()),
    502,
    /^inference target claude: the upstream (broke off|closed the connection)/,
  );

  // a wrong key: the upstream echoes it, we do not (the stored key is the one masked; a wrong one set by an admin is its own problem, but never ours to show)
  await w.admin.post('/system/secrets', { name: 'WRONG_KEY', value: 'sk-wrong-value-123' });
  const wrong = await target(w, { name: 'wrong', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'WRONG_KEY' });
  const denied = await chat(w, w.member.token, { model: 'wrong/gpt-fake-1', messages: user }, ORG());
  t.is(denied.statusCode, 401);
  t.is(denied.body.error.message, 'Incorrect API key provided: ***');
  t.false(denied.raw.includes('sk-wrong-value-123'));
  t.truthy(wrong.id);

  const failed = await w.ctx.srv.kernel.db('inference_usage').whereNot({ status: 200 }).orderBy('id').select('status', 'error');
  t.deepEqual(
    failed.map((r) => r.status),
    [429, 429, 500, 504, 502, 401],
  );
  t.false(JSON.stringify(failed).includes(w.fake.apiKey));
});

test.serial('bad input: unknown models are 404 naming them, a missing scope or messages 400, a model outside allowed_models 404', async (t) => {
  assertError(t, await chat(w, w.member.token, { model: 'managed/nope', messages: user }, ORG()), 404, 'model managed/nope not found');
  assertError(t, await chat(w, w.member.token, { model: 'gpt-unknown', messages: user }, ORG()), 404, /^model gpt-unknown not found: not a managed model/);
  assertError(
    t,
    await chat(w, w.member.token, { model: 'claude/other-model', messages: user }, ORG()),
    404,
    'model claude/other-model not found: inference target claude allows claude-fake-1, tools-claude, limited-claude, cut-claude',
  );
  assertError(t, await chat(w, w.member.token, { model: 'managed/fast' }, ORG()), 400, /"messages" is required/);
  assertError(t, await chat(w, w.member.token, { model: 'managed/fast', messages: user }), 400, /X-Svc-Org or X-Svc-Project/);
  // the org-restricted entry is invisible without its project, and from another org
  assertError(t, await chat(w, w.member.token, { model: 'managed/smart', messages: user }, ORG()), 404, 'model managed/smart not found');
  const res = await chat(w, w.ctx.adminToken, { model: 'managed/smart', messages: user }, { 'x-svc-org': w.ctx.lobbyId });
  assertError(t, res, 404, 'model managed/smart not found');
  t.is((await chat(w, 'not-a-token', { model: 'managed/fast', messages: user }, ORG())).statusCode, 401);
});

test.serial('a job token: only the models its project may use, and its calls count on the attempt receipt', async (t) => {
  const job = await jobToken(w);
  const res = await chat(w, job.token, { model: 'managed/smart', messages: user });
  t.is(res.statusCode, 200, res.raw);
  t.like((await usageRows()).at(-1), { principal_kind: 'job', job_id: job.jobId, attempt_id: job.attemptId, project_id: w.project, org_id: w.org });
  const usage = await w.ctx.srv.kernel.db('attempt_usage').where({ attempt_id: job.attemptId });
  t.is(usage.length, 1);
  t.like(usage[0], { model: 'claude-fake-1', input_tokens: 13, output_tokens: 6, cache_read_tokens: 4, cache_write_tokens: 3 });
  const event = await w.ctx.srv.kernel.db('events').where({ type: 'llm.call' }).whereRaw("payload_json->>'attempt_id' = ?", [job.attemptId]).first();
  t.truthy(event, 'an llm.call usage event on the job');

  const other = await jobToken(w, w.otherProject);
  assertError(t, await chat(w, other.token, { model: 'managed/smart', messages: user }), 404, 'model managed/smart not found');
  t.is((await chat(w, other.token, { model: 'managed/fast', messages: user })).statusCode, 200);
  // naming another project does not widen a job token
  assertError(t, await chat(w, other.token, { model: 'managed/smart', messages: user }, { 'x-svc-project': w.project }), 404, /not found/);
  const without = await jobToken(w, w.project, ['jobs:read']);
  assertError(t, await chat(w, without.token, { model: 'managed/fast', messages: user }), 403, 'missing permission inference:use');
});

test.serial('a call that takes the attempt over its token budget ends the attempt; the job token stops working', async (t) => {
  const job = await w.admin.post(`/projects/${w.project}/jobs`, { description: 'tight budget', hints: { max_tokens: 10 } });
  t.is(job.statusCode, 201, JSON.stringify(job.body));
  const claimed = await w.admin.post(`/jobs/${job.body.id}/claim`, {});
  const { MachineTokens } = await import('../../core/auth/machine-tokens.ts');
  const { token } = await w.ctx.srv.kernel.container.resolve(MachineTokens).signJobToken({
    jobId: job.body.id,
    attemptId: claimed.body.attempt.id,
    projectId: w.project,
    orgId: w.org,
    permissions: ['inference:use'],
    ttlSeconds: 600,
  });
  t.is((await chat(w, token, { model: 'managed/fast', messages: user })).statusCode, 200);
  const attempt = await w.ctx.srv.kernel.db('job_attempts').where({ id: claimed.body.attempt.id }).first('status', 'error');
  t.not(attempt.status, 'running');
  t.is((await chat(w, token, { model: 'managed/fast', messages: user })).statusCode, 401);
});
