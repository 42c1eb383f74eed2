/**
 * The scripted model servers the conformance suite runs the CLIs against speak their wire formats:
 * the event order of an Anthropic Messages stream, the chunks of a chat completions stream, the
 * non-streamed answers, and side calls that leave the script where it is.
 */
import test from 'ava';
import { AnthropicServer, SIDE_USAGE, turnUsage } from './support/anthropic-server.ts';
import { CHAT_SIDE_USAGE, ChatServer, chatTurnUsage } from './support/chat-server.ts';

const tools = [{ name: 'Write', description: 'write', input_schema: { type: 'object' } }];

function sse(text: string): { event: string | null; data: any }[] {
  return text
    .split('\n\n')
    .filter((b) => b.trim())
    .map((block) => {
      const event = /^event: (.*)$/m.exec(block)?.[1] ?? null;
      const data = /^data: (.*)$/m.exec(block)?.[1] ?? '';
      return { event, data: data === '[DONE]' ? '[DONE]' : JSON.parse(data) };
    });
}

test('anthropic: a streamed tool turn, a side call that does not consume the script, a non-streamed text turn, the preflight', async (t) => {
  const s = await new AnthropicServer([
    [
      { type: 'text', text: 'Writing now.' },
      { type: 'tool_use', name: 'Write', input: { file_path: '/w/hello.txt', content: 'hi' } },
    ],
    [{ type: 'text', text: 'Done.' }],
  ]).start();
  t.teardown(() => s.stop());
  const post = (body: object) =>
    fetch(`${s.url}/v1/messages?beta=true`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k' }, body: JSON.stringify(body) });

  t.is((await fetch(`${s.url}/api/hello`, { method: 'HEAD' })).status, 200);
  const events = sse(await (await post({ model: 'm1', stream: true, tools, messages: [] })).text());
  t.deepEqual(
    events.map((e) => e.event),
    [
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ],
  );
  t.like(events[0].data.message, { model: 'm1', role: 'assistant' });
  t.is(
    events
      .filter((e) => e.data.delta?.type === 'text_delta')
      .map((e) => e.data.delta.text)
      .join(''),
    'Writing now.',
  );
  t.like(events[6].data, { index: 1, content_block: { type: 'tool_use', name: 'Write', input: {} } });
  t.deepEqual(
    JSON.parse(
      events
        .filter((e) => e.data.delta?.type === 'input_json_delta')
        .map((e) => e.data.delta.partial_json)
        .join(''),
    ),
    { file_path: '/w/hello.txt', content: 'hi' },
  );
  t.deepEqual(events[11].data, { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: turnUsage(1) });

  const side = await (await post({ model: 'small', messages: [] })).json();
  t.like(side, { type: 'message', content: [{ type: 'text', text: 'Side answer' }], usage: SIDE_USAGE, stop_reason: 'end_turn' });

  const second = await (await post({ model: 'm1', tools, messages: [] })).json();
  t.like(second, { type: 'message', model: 'm1', stop_reason: 'end_turn', content: [{ type: 'text', text: 'Done.' }], usage: turnUsage(2) });
  t.is((await post({ model: 'm1', tools, messages: [] })).status, 400, 'past the end of the script');
  t.deepEqual(
    s.requests.map((r) => [r.method, r.scripted]),
    [
      ['HEAD', false],
      ['POST', true],
      ['POST', false],
      ['POST', true],
      ['POST', true],
    ],
  );
});

test('chat completions: a streamed tool call with usage last when asked, a side call, a non-streamed answer', async (t) => {
  const s = await new ChatServer([
    { text: 'On it.', toolCalls: [{ name: 'write', arguments: { filePath: '/w/a.txt', content: 'x' } }] },
    { text: 'Done.' },
  ]).start();
  t.teardown(() => s.stop());
  const post = (body: object) =>
    fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const fnTools = [{ type: 'function', function: { name: 'write', parameters: { type: 'object' } } }];

  const chunks = sse(await (await post({ model: 'c1', stream: true, stream_options: { include_usage: true }, tools: fnTools, messages: [] })).text()).map(
    (e) => e.data,
  );
  t.is(chunks.at(-1), '[DONE]');
  const body = chunks.slice(0, -1);
  t.true(body.every((c: any) => c.object === 'chat.completion.chunk' && c.model === 'c1'));
  t.is(body.map((c: any) => c.choices[0]?.delta?.content ?? '').join(''), 'On it.');
  const args = body.flatMap((c: any) => c.choices[0]?.delta?.tool_calls ?? []);
  t.like(args[0], { index: 0, type: 'function', function: { name: 'write' } });
  t.deepEqual(JSON.parse(args.map((a: any) => a.function.arguments).join('')), { filePath: '/w/a.txt', content: 'x' });
  t.is(body.at(-2).choices[0].finish_reason, 'tool_calls');
  t.deepEqual(body.at(-1), { ...body.at(-1), choices: [], usage: chatTurnUsage(1) }, 'usage comes in a last chunk with no choices');

  const side = await (await post({ model: 'small', messages: [] })).json();
  t.like(side, { object: 'chat.completion', choices: [{ message: { content: 'Side answer' }, finish_reason: 'stop' }], usage: CHAT_SIDE_USAGE });

  const plain = sse(await (await post({ model: 'c1', stream: true, tools: fnTools, messages: [] })).text()).map((e) => e.data);
  t.false(
    plain.some((c: any) => c !== '[DONE]' && c.usage),
    'no usage chunk unless include_usage',
  );
  t.is(
    plain
      .slice(0, -1)
      .map((c: any) => c.choices[0]?.delta?.content ?? '')
      .join(''),
    'Done.',
  );
  t.is((await post({ model: 'c1', tools: fnTools, messages: [] })).status, 400, 'past the end of the script');
});
