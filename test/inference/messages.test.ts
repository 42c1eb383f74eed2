import test from 'ava';
import { attemptUsage, budgetedJob, jobToken, managed, post, sseEvents, target, teardown, world, type World } from './helpers.ts';
import { messagesToChat } from '../../plugins/inference/protocols/anthropic.ts';
import { messagesRequest } from '../../plugins/inference/protocol-schemas.ts';

/** Anthropic Messages (`POST /inference/v1/messages`) to both target kinds: passed through or translated, streamed and not, tools, errors, budgets. */
let w: World;
const URL = '/inference/v1/messages';
const ask = { max_tokens: 100, messages: [{ role: 'user', content: 'Say hello' }] };
const tools = [{ name: 'weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];

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

const messages = (token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  post(w, URL, { ...ask, ...body }, { 'x-api-key': token, 'anthropic-version': '2023-06-01', ...headers });

test.serial(
  'an Anthropic target: the request and the answer pass through (model rewritten), the job token as x-api-key, usage exactly on the receipt',
  async (t) => {
    const job = await jobToken(w);
    const res = await messages(
      job.token,
      { model: 'managed/sonnet', system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }] },
      {
        'anthropic-beta': 'prompt-caching-2024-07-31',
      },
    );
    t.is(res.statusCode, 200, res.raw);
    t.deepEqual(res.body, {
      id: 'msg_fake1',
      type: 'message',
      role: 'assistant',
      model: 'claude-fake-1',
      content: [{ type: 'text', text: 'Hello from the fake upstream.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 13, output_tokens: 6, cache_read_input_tokens: 4, cache_creation_input_tokens: 3 },
    });
    const sent = w.fake.calls.at(-1)!;
    t.is(sent.path, '/v1/messages');
    t.is(sent.headers['x-api-key'], w.fake.apiKey, 'the target key goes upstream, not the job token');
    t.is(sent.headers['anthropic-beta'], 'prompt-caching-2024-07-31');
    t.deepEqual(sent.body, { ...ask, model: 'claude-fake-1', system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }] });
    const [row] = await attemptUsage(w, job.attemptId);
    t.like(row, { model: 'claude-fake-1', input_tokens: 13, output_tokens: 6, cache_read_tokens: 4, cache_write_tokens: 3 });
  },
);

test.serial('an Anthropic target, streamed: every event passes through unchanged; usage from message_start and message_delta', async (t) => {
  const job = await jobToken(w);
  const res = await messages(job.token, { model: 'managed/sonnet', stream: true });
  t.is(res.statusCode, 200);
  t.regex(String(res.headers['content-type']), /^text\/event-stream/);
  const events = sseEvents(res.raw);
  t.deepEqual(
    events.map((e) => e.event),
    ['message_start', 'ping', 'content_block_start', ...Array(6).fill('content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop'],
  );
  t.is(events.map((e) => e.data.delta?.text ?? '').join(''), 'Hello from the fake upstream.');
  await waitFor(async () => (await attemptUsage(w, job.attemptId)).length > 0);
  const [row] = await attemptUsage(w, job.attemptId);
  t.like(row, { input_tokens: 13, output_tokens: 6, cache_read_tokens: 4, cache_write_tokens: 3 });
});

test.serial('an OpenAI target: messages translated to chat completions (system, tool_use, tool_result) and the answer back, usage exact', async (t) => {
  const job = await jobToken(w);
  const res = await messages(
    job.token,
    {
      model: 'managed/gpt',
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Use tools.', cache_control: { type: 'ephemeral' } },
      ],
      stop_sequences: ['END'],
      tools,
      tool_choice: { type: 'auto' },
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me look.' },
            { type: 'tool_use', id: 'toolu_9', name: 'weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_9', content: [{ type: 'text', text: 'Sunny' }] },
            { type: 'text', text: 'And now?' },
          ],
        },
      ],
    },
    { authorization: `Bearer ${job.token}`, 'x-api-key': '' },
  );
  t.is(res.statusCode, 200, res.raw);
  const sent = w.fake.calls.at(-1)!;
  t.is(sent.path, '/v1/chat/completions');
  t.is(sent.headers.authorization, `Bearer ${w.fake.apiKey}`);
  t.deepEqual(sent.body.messages, [
    { role: 'system', content: 'Be brief.\n\nUse tools.' },
    { role: 'user', content: 'Weather in Paris?' },
    {
      role: 'assistant',
      content: 'Let me look.',
      tool_calls: [{ id: 'toolu_9', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
    },
    { role: 'tool', tool_call_id: 'toolu_9', content: 'Sunny' },
    { role: 'user', content: 'And now?' },
  ]);
  t.like(sent.body, { model: 'gpt-fake-1', max_tokens: 100, stop: ['END'], tool_choice: 'auto' });
  t.deepEqual(sent.body.tools, [{ type: 'function', function: { name: 'weather', description: 'The weather in a city', parameters: tools[0].input_schema } }]);
  t.like(res.body, {
    type: 'message',
    role: 'assistant',
    model: 'gpt-fake-1',
    content: [{ type: 'text', text: 'Hello from gpt-fake-1' }],
    stop_reason: 'end_turn',
    // the upstream's 21 prompt tokens of which 5 cached, 6 completion tokens
    usage: { input_tokens: 16, output_tokens: 6, cache_read_input_tokens: 5, cache_creation_input_tokens: 0 },
  });
  const [row] = await attemptUsage(w, job.attemptId);
  t.like(row, { model: 'gpt-fake-1', input_tokens: 16, output_tokens: 6, cache_read_tokens: 5, reasoning_tokens: 2 });

  const called = await messages(job.token, { model: 'managed/gpt-tools', tools });
  t.like(called.body, { stop_reason: 'tool_use', content: [{ type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } }] });
});

test.serial('an OpenAI target, streamed: chat chunks become the Anthropic event sequence, text and tool calls, usage in message_delta', async (t) => {
  const job = await jobToken(w);
  const res = await messages(job.token, { model: 'managed/gpt', stream: true });
  t.is(res.statusCode, 200, res.raw);
  t.true(w.fake.calls.at(-1)!.body.stream_options.include_usage, 'usage asked of the upstream');
  const events = sseEvents(res.raw);
  t.deepEqual(
    events.map((e) => e.event),
    ['message_start', 'content_block_start', ...Array(6).fill('content_block_delta'), 'content_block_stop', 'message_delta', 'message_stop'],
  );
  t.true(
    events.every((e) => e.data.type === e.event),
    'data.type names each event',
  );
  t.like(events[0].data.message, { type: 'message', role: 'assistant', model: 'gpt-fake-1', content: [] });
  t.deepEqual(events[1].data, { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  t.is(events.map((e) => e.data.delta?.text ?? '').join(''), 'Hello from the fake upstream.');
  t.deepEqual(events.at(-2)!.data, {
    type: 'message_delta',
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { input_tokens: 16, output_tokens: 6, cache_read_input_tokens: 5, cache_creation_input_tokens: 0 },
  });
  await waitFor(async () => (await attemptUsage(w, job.attemptId)).length > 0);
  t.like((await attemptUsage(w, job.attemptId))[0], { input_tokens: 16, output_tokens: 6, cache_read_tokens: 5 });

  const called = sseEvents((await messages(job.token, { model: 'managed/gpt-tools', tools, stream: true })).raw);
  t.deepEqual(called[1].data, { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'call_1', name: 'weather', input: {} } });
  t.is(
    called
      .filter((e) => e.data.delta?.type === 'input_json_delta')
      .map((e) => e.data.delta.partial_json)
      .join(''),
    '{"city":"Paris"}',
  );
  t.is(called.at(-2)!.data.delta.stop_reason, 'tool_use');
});

test.serial('errors come in Anthropic shape: unknown model, bad input naming the field, a bad key, upstream errors and a cut stream', async (t) => {
  const job = await jobToken(w);
  const unknown = await messages(job.token, { model: 'managed/nope' });
  t.is(unknown.statusCode, 404);
  t.deepEqual(unknown.body, { type: 'error', error: { type: 'not_found_error', message: 'model managed/nope not found' } });
  const bad = await post(w, URL, { model: 'managed/gpt', messages: ask.messages }, { 'x-api-key': job.token });
  t.is(bad.statusCode, 400);
  t.is(bad.body.type, 'error');
  t.is(bad.body.error.type, 'invalid_request_error');
  t.regex(bad.body.error.message, /max_tokens/);
  const badBlock = await messages(job.token, { model: 'managed/gpt', messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] });
  t.is(badBlock.statusCode, 400);
  t.is(badBlock.body.error.message, 'messages[0].content[0].type document cannot be sent to a chat-completions target');
  const denied = await messages('not-a-token', { model: 'managed/gpt' });
  t.is(denied.statusCode, 401);
  t.is(denied.body.error.type, 'authentication_error');

  // an OpenAI target's 429 as Anthropic's rate_limit_error, its retry-after kept, the key masked
  const sys = await target(w, { name: 'sys-limited', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  t.truthy(sys.id);
  const limited = await post(w, URL, { ...ask, model: 'sys-limited/limited-gpt' }, { 'x-api-key': job.token });
  t.is(limited.statusCode, 429);
  t.is(limited.headers['retry-after'], '7');
  t.deepEqual(limited.body, { type: 'error', error: { type: 'rate_limit_error', message: 'Rate limit reached for key ***' } });
  // an Anthropic target's own error body passes through (masked)
  const native = await post(w, URL, { ...ask, model: 'claude/limited-claude' }, { 'x-api-key': job.token });
  t.is(native.statusCode, 429);
  t.deepEqual(native.body, { type: 'error', error: { type: 'rate_limit_error', message: 'rate limited for key ***' } });

  for (const model of ['sys-limited/cut-gpt', 'claude/cut-claude']) {
    const cut = await post(w, URL, { ...ask, model, stream: true }, { 'x-api-key': job.token });
    const last = sseEvents(cut.raw).at(-1)!;
    t.is(last.event, 'error', model);
    t.is(last.data.error.type, 'api_error', model);
    t.regex(last.data.error.message, /broke off|before the answer was complete/, model);
  }
});

test.serial('a job whose budget is spent is refused in Anthropic shape before the call goes upstream, and its attempt ends BUDGET_EXCEEDED', async (t) => {
  // 26 tokens a call (13 + 6 + 4 + 3): two calls reach the budget exactly, the third cannot stay within it
  const job = await budgetedJob(w, { max_tokens: 52 });
  for (let i = 0; i < 2; i++) t.is((await messages(job.token, { model: 'managed/sonnet' })).statusCode, 200);
  t.is((await w.ctx.srv.kernel.db('job_attempts').where({ id: job.attemptId }).first('status')).status, 'running');
  const upstreamCalls = w.fake.calls.length;
  const refused = await messages(job.token, { model: 'managed/sonnet' });
  t.is(refused.statusCode, 403);
  t.deepEqual(refused.body, {
    type: 'error',
    error: { type: 'permission_error', message: 'model call refused: BUDGET_EXCEEDED: 52 tokens used, at hints.max_tokens 52' },
  });
  t.is(w.fake.calls.length, upstreamCalls, 'the refused call never went upstream');
  const attempt = await w.ctx.srv.kernel.db('job_attempts').where({ id: job.attemptId }).first('status', 'error', 'result_json');
  t.not(attempt.status, 'running');
  t.is(attempt.result_json.error_code, 'BUDGET_EXCEEDED');
  t.is((await attemptUsage(w, job.attemptId)).length, 2);
});

test.serial('the base URL answers HEAD (Claude Code checks it)', async (t) => {
  const res = await w.ctx.srv.server.inject({ method: 'HEAD', url: '/inference' });
  t.is(res.statusCode, 200);
});

const waitFor = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
};

test.serial('count_tokens: an Anthropic target counts (its answer passes through, not metered); for an OpenAI target the gateway estimates', async (t) => {
  const job = await jobToken(w);
  const body = { model: 'managed/sonnet', messages: ask.messages };
  const counted = await post(w, `${URL}/count_tokens`, body, { 'x-api-key': job.token, 'anthropic-beta': 'token-counting-2024-11-01' });
  t.is(counted.statusCode, 200, counted.raw);
  t.deepEqual(counted.body, { input_tokens: JSON.stringify(ask.messages).length });
  const sent = w.fake.calls.at(-1)!;
  t.is(sent.path, '/v1/messages/count_tokens');
  t.is(sent.headers['x-api-key'], w.fake.apiKey);
  t.is(sent.headers['anthropic-beta'], 'token-counting-2024-11-01');
  t.is(sent.body.model, 'claude-fake-1');
  const estimated = await post(w, `${URL}/count_tokens`, { ...body, model: 'managed/gpt' }, { 'x-api-key': job.token });
  t.deepEqual(estimated.body, { input_tokens: Math.ceil(JSON.stringify({ messages: ask.messages }).length / 4), estimated: true });
  t.is((await attemptUsage(w, job.attemptId)).length, 0, 'counting is not a model call');
  const unknown = await post(w, `${URL}/count_tokens`, { ...body, model: 'managed/nope' }, { 'x-api-key': job.token });
  t.deepEqual(unknown.body, { type: 'error', error: { type: 'not_found_error', message: 'model managed/nope not found' } });
});

test('system messages between the turns (Claude Code 2.1 sends them) are accepted and become chat system messages', (t) => {
  const chat = messagesToChat({
    model: 'gpt-fake-1',
    stream: false,
    body: {
      model: 'managed/x',
      max_tokens: 100,
      system: 'You are a coder.',
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
        { role: 'system', content: [{ type: 'text', text: 'The date is today.' }] },
      ],
    },
  });
  t.deepEqual(chat.messages, [
    { role: 'system', content: 'You are a coder.' },
    { role: 'user', content: 'hi' },
    { role: 'system', content: 'The date is today.' },
  ]);
  t.is(messagesRequest.validate({ model: 'm', max_tokens: 1, messages: [{ role: 'system', content: 'x' }] }).error, undefined);
  t.regex(messagesRequest.validate({ model: 'm', max_tokens: 1, messages: [{ role: 'tool', content: 'x' }] }).error!.message, /role/);
});
