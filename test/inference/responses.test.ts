import test from 'ava';
import { request as httpRequest } from 'node:http';
import { attemptUsage, budgetedJob, jobToken, managed, post, sseEvents, target, teardown, world, type World } from './helpers.ts';

/** OpenAI Responses (`POST /inference/v1/responses`) to both target kinds, translated through chat completions: streamed and not, tools, errors, budgets, the WebSocket refusal. */
let w: World;
const URL = '/inference/v1/responses';
const tools = [
  { type: 'function', name: 'weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  { type: 'custom', name: 'apply_patch', description: 'Apply a patch' },
  { type: 'web_search' },
];

test.before(async () => {
  w = await world({ idleTimeoutMs: 800, requestTimeoutMs: 800 });
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  const claude = await target(w, { name: 'claude', kind: 'anthropic', base_url: w.fake.url, credential_secret: 'FAKE_KEY' });
  await managed(w, { name: 'gpt', target_id: sys.id, upstream_model: 'gpt-fake-1' });
  await managed(w, { name: 'gpt-tools', target_id: sys.id, upstream_model: 'tools-gpt' });
  await managed(w, { name: 'sonnet', target_id: claude.id, upstream_model: 'claude-fake-1' });
  await managed(w, { name: 'sonnet-tools', target_id: claude.id, upstream_model: 'tools-claude' });
});
test.after.always(async () => {
  await teardown(w);
});

const responses = (token: string, body: Record<string, unknown>) => post(w, URL, { input: 'Say hello', ...body }, { authorization: `Bearer ${token}` });
const waitFor = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
};

test.serial(
  'an OpenAI target: input items (messages, function calls and outputs, custom tool calls) become chat messages; the answer a response; usage exact',
  async (t) => {
    const job = await jobToken(w);
    const res = await responses(job.token, {
      model: 'managed/gpt',
      instructions: 'Be brief.',
      max_output_tokens: 64,
      tools,
      input: [
        { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Use tools.' }] },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
        { type: 'function_call', call_id: 'call_a', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'custom_tool_call', call_id: 'call_b', name: 'apply_patch', input: '*** Begin Patch' },
        { type: 'function_call_output', call_id: 'call_a', output: 'Sunny' },
        { type: 'custom_tool_call_output', call_id: 'call_b', output: 'Done' },
        { role: 'user', content: 'Thanks' },
      ],
    });
    t.is(res.statusCode, 200, res.raw);
    const sent = w.fake.calls.at(-1)!;
    t.is(sent.path, '/v1/chat/completions');
    t.deepEqual(sent.body.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'system', content: 'Use tools.' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'Sunny' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Done' },
      { role: 'user', content: 'Thanks' },
    ]);
    t.like(sent.body, { model: 'gpt-fake-1', max_tokens: 64 });
    t.deepEqual(
      sent.body.tools.map((x: any) => x.function.name),
      ['weather', 'apply_patch'],
      'the hosted web_search tool is left out',
    );
    t.like(res.body, {
      object: 'response',
      status: 'completed',
      model: 'gpt-fake-1',
      output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Hello from gpt-fake-1' }] }],
      usage: {
        input_tokens: 21,
        input_tokens_details: { cached_tokens: 5 },
        output_tokens: 6,
        output_tokens_details: { reasoning_tokens: 2 },
        total_tokens: 27,
      },
    });
    t.regex(res.body.id, /^resp_/);
    t.like((await attemptUsage(w, job.attemptId))[0], { model: 'gpt-fake-1', input_tokens: 16, cache_read_tokens: 5, output_tokens: 6, reasoning_tokens: 2 });

    const called = await responses(job.token, { model: 'managed/gpt-tools', tools });
    t.like(called.body, { output: [{ type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}', status: 'completed' }] });
  },
);

test.serial('an Anthropic target: a response from a message, usage exact (input counts cache reads and writes, as Responses does)', async (t) => {
  const job = await jobToken(w);
  const res = await responses(job.token, { model: 'managed/sonnet' });
  t.is(res.statusCode, 200, res.raw);
  t.like(w.fake.calls.at(-1)!, {
    path: '/v1/messages',
    body: { model: 'claude-fake-1', messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello' }] }] },
  });
  t.like(res.body, {
    status: 'completed',
    output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello from the fake upstream.' }] }],
    usage: { input_tokens: 20, input_tokens_details: { cached_tokens: 4 }, output_tokens: 6, total_tokens: 26 },
  });
  t.like((await attemptUsage(w, job.attemptId))[0], { input_tokens: 13, output_tokens: 6, cache_read_tokens: 4, cache_write_tokens: 3 });
  const called = await responses(job.token, { model: 'managed/sonnet-tools', tools });
  t.like(called.body, { output: [{ type: 'function_call', call_id: 'toolu_1', name: 'weather', arguments: '{"city":"Paris"}' }] });
});

for (const [model, usage] of [
  ['managed/gpt', { input_tokens: 21, output_tokens: 6, cached: 5 }],
  ['managed/sonnet', { input_tokens: 20, output_tokens: 6, cached: 4 }],
] as const) {
  test.serial(`streamed from ${model}: the Responses event sequence, numbered, ending in response.completed with the upstream's usage`, async (t) => {
    const job = await jobToken(w);
    const res = await responses(job.token, { model, stream: true });
    t.is(res.statusCode, 200, res.raw);
    const events = sseEvents(res.raw);
    t.deepEqual(
      events.map((e) => e.event),
      [
        'response.created',
        'response.in_progress',
        'response.output_item.added',
        'response.content_part.added',
        ...Array(6).fill('response.output_text.delta'),
        'response.output_text.done',
        'response.content_part.done',
        'response.output_item.done',
        'response.completed',
      ],
    );
    t.deepEqual(
      events.map((e) => e.data.sequence_number),
      [...events.keys()],
    );
    t.is(events.find((e) => e.event === 'response.output_text.done')!.data.text, 'Hello from the fake upstream.');
    const done = events.at(-1)!.data.response;
    t.like(done, {
      status: 'completed',
      usage: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, input_tokens_details: { cached_tokens: usage.cached } },
    });
    t.is(done.id, events[0].data.response.id);
    await waitFor(async () => (await attemptUsage(w, job.attemptId)).length > 0);
    t.is((await attemptUsage(w, job.attemptId)).length, 1);
  });
}

test.serial('streamed tool calls: function_call items with argument deltas; a custom tool call comes whole with its input', async (t) => {
  const job = await jobToken(w);
  const events = sseEvents((await responses(job.token, { model: 'managed/gpt-tools', tools, stream: true })).raw);
  const added = events.find((e) => e.event === 'response.output_item.added')!.data;
  t.like(added, { output_index: 0, item: { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '', status: 'in_progress' } });
  t.is(
    events
      .filter((e) => e.event === 'response.function_call_arguments.delta')
      .map((e) => e.data.delta)
      .join(''),
    '{"city":"Paris"}',
  );
  t.like(events.find((e) => e.event === 'response.output_item.done')!.data.item, { type: 'function_call', arguments: '{"city":"Paris"}', status: 'completed' });
  t.is(events.at(-1)!.event, 'response.completed');

  // the fake calls the first tool of the request: put the custom one first
  const custom = sseEvents((await responses(job.token, { model: 'managed/sonnet-tools', tools: [tools[1], tools[0]], stream: true })).raw);
  const item = custom.find((e) => e.event === 'response.output_item.done')!.data.item;
  // the fake answers {"city":"Paris"}, not {"input": …}: the raw arguments are the input
  t.like(item, { type: 'custom_tool_call', call_id: 'toolu_1', name: 'apply_patch', input: '{"city":"Paris"}' });
  t.truthy(custom.find((e) => e.event === 'response.custom_tool_call_input.done'));
});

test.serial('errors in OpenAI shape: unknown model, previous_response_id, bad input items, upstream errors, a cut stream', async (t) => {
  const job = await jobToken(w);
  const unknown = await responses(job.token, { model: 'managed/nope' });
  t.is(unknown.statusCode, 404);
  t.deepEqual(unknown.body, { error: { message: 'model managed/nope not found', type: 'not_found_error', param: null, code: null } });
  const chained = await responses(job.token, { model: 'managed/gpt', previous_response_id: 'resp_1' });
  t.is(chained.statusCode, 400);
  t.regex(chained.body.error.message, /^previous_response_id is not supported/);
  const item = await responses(job.token, { model: 'managed/gpt', input: [{ type: 'local_shell_call', call_id: 'x' }] });
  t.is(item.statusCode, 400);
  t.is(item.body.error.message, 'input[0].type local_shell_call cannot be sent to a chat-completions target');
  const missing = await post(w, URL, { model: 'managed/gpt' }, { authorization: `Bearer ${job.token}` });
  t.is(missing.statusCode, 400);
  t.regex(missing.body.error.message, /"input" is required/);
  const limited = await responses(job.token, { model: 'claude/limited-claude' });
  t.is(limited.statusCode, 429);
  t.deepEqual(limited.body, { error: { message: 'rate limited for key ***', type: 'rate_limit_error', param: null, code: null } });
  const cut = sseEvents((await responses(job.token, { model: 'sys-ai/cut-gpt', stream: true })).raw);
  t.is(cut.at(-1)!.event, 'response.failed');
  t.like(cut.at(-1)!.data.response, { status: 'failed', error: { code: 'server_error' } });
});

test.serial('a spent budget: the next call is refused 403 in OpenAI shape and the attempt ends BUDGET_EXCEEDED', async (t) => {
  const job = await budgetedJob(w, { max_tokens: 27 }); // one call to an OpenAI target is 27 tokens (16 + 5 cached + 6)
  t.is((await responses(job.token, { model: 'managed/gpt' })).statusCode, 200);
  const refused = await responses(job.token, { model: 'managed/gpt', stream: true });
  t.is(refused.statusCode, 403);
  t.deepEqual(refused.body, {
    error: { message: 'model call refused: BUDGET_EXCEEDED: 27 tokens used, at hints.max_tokens 27', type: 'permission_error', param: null, code: null },
  });
  const attempt = await w.ctx.srv.kernel.db('job_attempts').where({ id: job.attemptId }).first('status', 'result_json');
  t.not(attempt.status, 'running');
  t.is(attempt.result_json.error_code, 'BUDGET_EXCEEDED');
  // A CLI that retries (Codex does, on any status) now fails authentication: the job token stopped
  // working with its attempt, and the refusal says why.
  const retried = await responses(job.token, { model: 'managed/gpt', stream: true });
  t.is(retried.statusCode, 401);
  t.deepEqual(retried.body.error, {
    message: 'the attempt of this job token has ended (failed: BUDGET_EXCEEDED: 27 tokens used, at hints.max_tokens 27)',
    type: 'authentication_error',
    param: null,
    code: null,
  });
});

test.serial('a WebSocket upgrade on /responses is refused with 426 (Codex then uses HTTP and server-sent events)', async (t) => {
  const url = new globalThis.URL(`${w.ctx.srv.url}${URL}`);
  const status = await new Promise<number>((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'GET',
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('upgrade', () => resolve(101));
    req.on('error', reject);
    req.end();
  });
  t.is(status, 426);
});

test.serial('an openai target with responses_api: Responses calls pass through to its /responses, streamed and not, usage exact', async (t) => {
  const native = await target(w, { name: 'native', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY', responses_api: true });
  t.is(native.responses_api, true);
  const job = await jobToken(w);
  const body = { model: 'native/gpt-fake-5', input: 'Say hello', reasoning: { effort: 'high' }, store: false, include: ['reasoning.encrypted_content'] };
  const res = await responses(job.token, body);
  t.is(res.statusCode, 200, res.raw);
  const sent = w.fake.calls.at(-1)!;
  t.is(sent.path, '/v1/responses');
  t.is(sent.headers.authorization, `Bearer ${w.fake.apiKey}`);
  t.deepEqual(sent.body, { ...body, model: 'gpt-fake-5' }, 'the request as sent: nothing lost in translation');
  t.like(res.body, { id: 'resp_fake1', status: 'completed', usage: { input_tokens: 30, output_tokens: 7 } });
  t.like((await attemptUsage(w, job.attemptId))[0], { model: 'gpt-fake-5', input_tokens: 22, cache_read_tokens: 8, output_tokens: 7, reasoning_tokens: 3 });

  const streamed = await responses(job.token, { ...body, stream: true });
  const events = sseEvents(streamed.raw);
  t.is(events[0].event, 'response.created');
  t.is(events.at(-1)!.event, 'response.completed');
  t.is(events.filter((e) => e.event === 'response.output_text.delta').length, 6);
  await waitFor(async () => (await attemptUsage(w, job.attemptId)).length > 1);
  t.like((await attemptUsage(w, job.attemptId))[1], { input_tokens: 22, cache_read_tokens: 8, output_tokens: 7, reasoning_tokens: 3 });

  const refused = await w.admin.post('/inference/targets', { name: 'bad', kind: 'anthropic', base_url: w.fake.url, responses_api: true });
  t.is(refused.statusCode, 400);
  t.is(refused.body.message, 'responses_api applies to openai targets only');
});
