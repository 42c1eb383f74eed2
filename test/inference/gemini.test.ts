import test from 'ava';
import { attemptUsage, budgetedJob, jobToken, managed, post, sseEvents, target, teardown, world, type World } from './helpers.ts';

/** Gemini (`POST /inference/v1beta/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`) to both target kinds, translated through chat completions. */
let w: World;
const ask = { contents: [{ role: 'user', parts: [{ text: 'Say hello' }] }] };
const tools = [
  {
    functionDeclarations: [{ name: 'weather', description: 'The weather in a city', parameters: { type: 'OBJECT', properties: { city: { type: 'STRING' } } } }],
  },
  { googleSearch: {} },
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

const generate = (token: string, model: string, body: Record<string, unknown> = {}, stream = false) =>
  post(
    w,
    `/inference/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    { ...ask, ...body },
    { 'x-goog-api-key': token },
  );
const waitFor = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
};

test.serial(
  'an OpenAI target: contents, function calls and responses become chat messages (ids matched by name), schemas made JSON Schema; usage exact',
  async (t) => {
    const job = await jobToken(w);
    const res = await generate(job.token, 'managed/gpt', {
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      generationConfig: { maxOutputTokens: 64, temperature: 0.2, stopSequences: ['END'] },
      tools,
      toolConfig: { functionCallingConfig: { mode: 'AUTO' } },
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Paris?' }] },
        { role: 'model', parts: [{ text: 'Looking.' }, { functionCall: { name: 'weather', args: { city: 'Paris' } } }] },
        { role: 'user', parts: [{ functionResponse: { name: 'weather', response: { sky: 'sunny' } } }, { text: 'And now?' }] },
      ],
    });
    t.is(res.statusCode, 200, res.raw);
    const sent = w.fake.calls.at(-1)!;
    t.is(sent.path, '/v1/chat/completions');
    t.deepEqual(sent.body.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [{ id: 'call_1_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1_1', content: '{"sky":"sunny"}' },
      { role: 'user', content: 'And now?' },
    ]);
    t.like(sent.body, { model: 'gpt-fake-1', max_tokens: 64, temperature: 0.2, stop: ['END'], tool_choice: 'auto' });
    t.deepEqual(sent.body.tools, [
      {
        type: 'function',
        function: { name: 'weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ]);
    t.deepEqual(res.body, {
      candidates: [{ content: { role: 'model', parts: [{ text: 'Hello from gpt-fake-1' }] }, finishReason: 'STOP', index: 0 }],
      // 21 prompt tokens (5 cached); 6 completion tokens of which 2 reasoning
      usageMetadata: { promptTokenCount: 21, candidatesTokenCount: 4, totalTokenCount: 27, cachedContentTokenCount: 5, thoughtsTokenCount: 2 },
      modelVersion: 'gpt-fake-1',
      responseId: 'chatcmpl-fake1',
    });
    t.like((await attemptUsage(w, job.attemptId))[0], { model: 'gpt-fake-1', input_tokens: 16, cache_read_tokens: 5, output_tokens: 6, reasoning_tokens: 2 });

    const called = await generate(job.token, 'managed/gpt-tools', { tools });
    t.deepEqual(called.body.candidates[0].content.parts, [{ functionCall: { id: 'call_1', name: 'weather', args: { city: 'Paris' } } }]);
  },
);

test.serial('an Anthropic target, the key as ?key=: an answer and a function call from messages, usage exact', async (t) => {
  const job = await jobToken(w);
  const res = await post(w, `/inference/v1beta/models/managed%2Fsonnet:generateContent?key=${job.token}`, ask);
  t.is(res.statusCode, 200, res.raw);
  t.like(w.fake.calls.at(-1)!, { path: '/v1/messages', body: { model: 'claude-fake-1' } });
  t.like(res.body, {
    candidates: [{ content: { parts: [{ text: 'Hello from the fake upstream.' }] }, finishReason: 'STOP' }],
    usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 6, totalTokenCount: 26, cachedContentTokenCount: 4 },
  });
  t.like((await attemptUsage(w, job.attemptId))[0], { input_tokens: 13, output_tokens: 6, cache_read_tokens: 4, cache_write_tokens: 3 });
  const called = await generate(job.token, 'managed/sonnet-tools', { tools });
  t.deepEqual(called.body.candidates[0].content.parts, [{ functionCall: { id: 'toolu_1', name: 'weather', args: { city: 'Paris' } } }]);
});

for (const [model, usage] of [
  ['managed/gpt', { promptTokenCount: 21, candidatesTokenCount: 4, totalTokenCount: 27 }],
  ['managed/sonnet', { promptTokenCount: 20, candidatesTokenCount: 6, totalTokenCount: 26 }],
] as const) {
  test.serial(`streamed from ${model}: a response per text delta, then the finish reason and the upstream's usage`, async (t) => {
    const job = await jobToken(w);
    const res = await generate(job.token, model, {}, true);
    t.is(res.statusCode, 200, res.raw);
    t.regex(String(res.headers['content-type']), /^text\/event-stream/);
    const events = sseEvents(res.raw).map((e) => e.data);
    t.is(events.length, 7);
    t.is(events.map((e) => e.candidates[0].content.parts[0]?.text ?? '').join(''), 'Hello from the fake upstream.');
    t.like(events.at(-1), { candidates: [{ finishReason: 'STOP' }], usageMetadata: usage });
    await waitFor(async () => (await attemptUsage(w, job.attemptId)).length > 0);
    t.is((await attemptUsage(w, job.attemptId)).length, 1);

    const called = sseEvents((await generate(job.token, `${model}-tools`, { tools }, true)).raw).map((e) => e.data);
    t.deepEqual(called.at(-1).candidates[0].content.parts, [
      { functionCall: { id: model === 'managed/gpt' ? 'call_1' : 'toolu_1', name: 'weather', args: { city: 'Paris' } } },
    ]);
  });
}

test.serial('errors in Gemini shape: unknown model or method, a part the target cannot take, a bad key, upstream errors, a cut stream', async (t) => {
  const job = await jobToken(w);
  const unknown = await generate(job.token, 'managed/nope');
  t.is(unknown.statusCode, 404);
  t.deepEqual(unknown.body, { error: { code: 404, message: 'model managed/nope not found', status: 'NOT_FOUND' } });
  const counted = await post(w, '/inference/v1beta/models/managed/gpt:countTokens', ask, { 'x-goog-api-key': job.token });
  t.deepEqual(counted.body, { totalTokens: Math.ceil(JSON.stringify({ contents: ask.contents }).length / 4) }, 'countTokens is estimated');
  t.is((await attemptUsage(w, job.attemptId)).length, 0, 'counting is not a model call');
  t.is((await post(w, '/inference/v1beta/models/managed/nope:countTokens', ask, { 'x-goog-api-key': job.token })).statusCode, 404);
  const method = await post(w, '/inference/v1beta/models/managed/gpt:embedContent', ask, { 'x-goog-api-key': job.token });
  t.is(method.statusCode, 404);
  t.like(method.body, { error: { status: 'NOT_FOUND' } });
  const part = await generate(job.token, 'managed/gpt', { contents: [{ role: 'user', parts: [{ fileData: { fileUri: 'gs://x' } }] }] });
  t.is(part.statusCode, 400);
  t.deepEqual(part.body, {
    error: {
      code: 400,
      status: 'INVALID_ARGUMENT',
      message: 'contents[0].parts[0] (fileData) cannot be sent to this target: text, images, functionCall and functionResponse parts can',
    },
  });
  const missing = await post(w, '/inference/v1beta/models/managed/gpt:generateContent', {}, { 'x-goog-api-key': job.token });
  t.is(missing.statusCode, 400);
  t.regex(missing.body.error.message, /"contents" is required/);
  const denied = await generate('not-a-token', 'managed/gpt');
  t.is(denied.statusCode, 401);
  t.is(denied.body.error.status, 'UNAUTHENTICATED');
  const limited = await generate(job.token, 'claude/limited-claude');
  t.is(limited.statusCode, 429);
  t.deepEqual(limited.body, { error: { code: 429, message: 'rate limited for key ***', status: 'RESOURCE_EXHAUSTED' } });
  const cut = sseEvents((await generate(job.token, 'claude/cut-claude', {}, true)).raw).at(-1)!.data;
  t.like(cut, { error: { code: 502, status: 'UNAVAILABLE' } });
});

test.serial('a spent budget: the next call is refused 403 in Gemini shape and the attempt ends BUDGET_EXCEEDED', async (t) => {
  const job = await budgetedJob(w, { max_tokens: 20 });
  // 26 tokens, over the budget of 20: recording the call ends the attempt at once (the path chat completions has always had)
  t.is((await generate(job.token, 'managed/sonnet')).statusCode, 200);
  const attempt = await w.ctx.srv.kernel.db('job_attempts').where({ id: job.attemptId }).first('status', 'result_json');
  t.is(attempt.result_json.error_code, 'BUDGET_EXCEEDED');

  const atLimit = await budgetedJob(w, { max_tokens: 26 });
  t.is((await generate(atLimit.token, 'managed/sonnet')).statusCode, 200);
  const refused = await generate(atLimit.token, 'managed/sonnet', {}, true);
  t.is(refused.statusCode, 403);
  t.deepEqual(refused.body, {
    error: { code: 403, message: 'model call refused: BUDGET_EXCEEDED: 26 tokens used, at hints.max_tokens 26', status: 'PERMISSION_DENIED' },
  });
  t.is((await w.ctx.srv.kernel.db('job_attempts').where({ id: atLimit.attemptId }).first('result_json')).result_json.error_code, 'BUDGET_EXCEEDED');
});
