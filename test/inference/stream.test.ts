import test from 'ava';
import { managed, target, teardown, world, type World } from './helpers.ts';

/** Streamed chat completions over real HTTP: event by event as they arrive, translated for Anthropic, and cut or silent upstreams. */
let w: World;
const messages = [{ role: 'user', content: 'Say hello' }];

test.before(async () => {
  w = await world({ slowChunkMs: 250, idleTimeoutMs: 700 });
  const sys = await target(w, { name: 'sys-ai', kind: 'openai', base_url: `${w.fake.url}/v1`, credential_secret: 'FAKE_KEY' });
  await target(w, { name: 'claude', kind: 'anthropic', base_url: w.fake.url, credential_secret: 'FAKE_KEY' });
  await managed(w, { name: 'slow', target_id: sys.id, upstream_model: 'slow-gpt' });
});
test.after.always(async () => {
  await teardown(w);
});

interface Received {
  status: number;
  contentType: string | null;
  /** Each piece of body as it arrived, with when. */
  pieces: { at: number; text: string }[];
  text: string;
}

async function stream(body: Record<string, unknown>, token = w.ctx.adminToken): Promise<Received> {
  const res = await fetch(`${w.ctx.srv.url}/inference/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-svc-org': w.org },
    body: JSON.stringify({ messages, stream: true, ...body }),
  });
  const pieces: { at: number; text: string }[] = [];
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) pieces.push({ at: Date.now(), text: decoder.decode(chunk, { stream: true }) });
  return { status: res.status, contentType: res.headers.get('content-type'), pieces, text: pieces.map((p) => p.text).join('') };
}

const dataOf = (text: string) =>
  text
    .split('\n\n')
    .filter((b) => b.startsWith('data: '))
    .map((b) => b.slice(6));
const content = (text: string) =>
  dataOf(text)
    .filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d))
    .map((c) => c.choices?.[0]?.delta?.content ?? '')
    .join('');
const waitFor = async (check: () => Promise<boolean>) => {
  for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
};

test.serial('a slow stream arrives chunk by chunk: the first chunk reaches the client before the upstream has finished', async (t) => {
  const started = Date.now();
  const got = await stream({ model: 'managed/slow' });
  t.is(got.status, 200);
  t.regex(got.contentType ?? '', /^text\/event-stream/);
  const upstream = w.fake.calls.at(-1)!;
  t.true(upstream.body.stream_options.include_usage, 'the proxy asks for usage');
  const finished = upstream.finishedAt!;
  const firstContent = got.pieces.find((p) => p.text.includes('"content":"Hello"'))!;
  t.truthy(firstContent);
  // 8 frames 250 ms apart: the upstream takes ~1.75 s; the first word must be here long before that
  t.true(firstContent.at < finished - 1000, `first chunk at +${firstContent.at - started} ms, upstream finished at +${finished - started} ms`);
  t.true(got.pieces.length >= 5, `arrived in ${got.pieces.length} pieces`);
  t.log(`first chunk at +${firstContent.at - started} ms; upstream finished at +${finished - started} ms; ${got.pieces.length} pieces`);
  t.is(content(got.text), 'Hello from the fake upstream.');
  t.true(got.text.endsWith('data: [DONE]\n\n'));
  t.false(got.text.includes('"usage"'), 'the usage chunk the client did not ask for is kept from it');
  await waitFor(async () => (await w.ctx.srv.kernel.db('inference_usage').where({ model: 'managed/slow' })).length > 0);
  const [row] = await w.ctx.srv.kernel.db('inference_usage').where({ model: 'managed/slow' });
  t.like(row, { stream: true, status: 200, error: null, input_tokens: 16, cache_read_tokens: 5, output_tokens: 6 });
  t.true(row.first_byte_ms < row.latency_ms);
});

test.serial('include_usage asked by the client: the usage chunk comes through', async (t) => {
  const got = await stream({ model: 'sys-ai/gpt-fake-1', stream_options: { include_usage: true } });
  const chunks = dataOf(got.text)
    .filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d));
  t.like(chunks.at(-1), { choices: [], usage: { prompt_tokens: 21, completion_tokens: 6 } });
});

test.serial('an Anthropic stream becomes chat-completion chunks: text deltas, tool call pieces, finish reason, usage, [DONE]', async (t) => {
  const got = await stream({ model: 'claude/claude-fake-1', stream_options: { include_usage: true } });
  t.is(got.status, 200);
  t.is(content(got.text), 'Hello from the fake upstream.');
  const chunks = dataOf(got.text)
    .filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d));
  t.like(chunks[0], { id: 'msg_fake1', object: 'chat.completion.chunk', model: 'claude-fake-1', choices: [{ delta: { role: 'assistant' } }] });
  t.is(chunks.at(-2).choices[0].finish_reason, 'stop');
  t.like(chunks.at(-1), { choices: [], usage: { prompt_tokens: 20, completion_tokens: 6, prompt_tokens_details: { cached_tokens: 4 } } });
  t.true(got.text.endsWith('data: [DONE]\n\n'));

  const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }];
  const called = await stream({ model: 'claude/tools-claude', tools });
  const calls = dataOf(called.text)
    .filter((d) => d !== '[DONE]')
    .map((d) => JSON.parse(d))
    .flatMap((c) => c.choices?.[0]?.delta?.tool_calls ?? []);
  t.like(calls[0], { index: 0, id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '' } });
  t.is(calls.map((c: any) => c.function.arguments).join(''), '{"city":"Paris"}');
  t.true(called.text.includes('"finish_reason":"tool_calls"'));
});

test.serial('a stream cut mid-answer ends with an error event (502); a silent one with a timeout event (504); both are recorded', async (t) => {
  for (const [model, code, pattern] of [
    ['sys-ai/cut-gpt', 502, /broke off|before the answer was complete/],
    ['claude/cut-claude', 502, /broke off|before the answer was complete/],
    ['sys-ai/stall-gpt', 504, /sent nothing for 700 ms/],
  ] as const) {
    const got = await stream({ model });
    t.is(got.status, 200, model);
    if (model === 'sys-ai/cut-gpt') t.is(content(got.text), 'Hello from', 'what came before the cut was passed on');
    const last = JSON.parse(dataOf(got.text).at(-1)!);
    t.is(last.error.code, code, model);
    t.regex(last.error.message, pattern, model);
    t.false(got.text.includes('[DONE]'), model);
    await waitFor(async () => (await w.ctx.srv.kernel.db('inference_usage').where({ model })).length > 0);
    const [row] = await w.ctx.srv.kernel.db('inference_usage').where({ model });
    t.regex(row.error ?? '', pattern, model);
  }
});

test.serial('a client that goes away mid-stream stops the upstream call', async (t) => {
  const controller = new AbortController();
  const res = await fetch(`${w.ctx.srv.url}/inference/v1/chat/completions`, {
    method: 'POST',
    signal: controller.signal,
    headers: { authorization: `Bearer ${w.ctx.adminToken}`, 'content-type': 'application/json', 'x-svc-org': w.org },
    body: JSON.stringify({ model: 'sys-ai/slow-gone', messages, stream: true }),
  });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  controller.abort();
  await waitFor(async () => (await w.ctx.srv.kernel.db('inference_usage').where({ model: 'sys-ai/slow-gone' })).length > 0);
  const [row] = await w.ctx.srv.kernel.db('inference_usage').where({ model: 'sys-ai/slow-gone' });
  t.is(row.error, 'the client went away');
});
