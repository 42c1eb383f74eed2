import test from 'ava';
import type { HarnessEvent } from '../../core/ports/harness.ts';
import { messageText } from '../../core/sdk.ts';
import { builtInHarnesses } from '../../harnesses/index.ts';
import * as samples from './samples.ts';

const [, b, , d, e, f] = builtInHarnesses();
const parse = (def: { parseLine(l: string): HarnessEvent[] }, lines: string[]) => lines.flatMap((l) => def.parseLine(l));
const only = <T extends HarnessEvent['type']>(events: HarnessEvent[], type: T) => events.filter((x) => x.type === type) as Extract<HarnessEvent, { type: T }>[];

test('claude stream: text and tool_use blocks; usage per model from the result line only, cache reads and writes apart', (t) => {
  const events = parse(b, samples.claudeStream);
  t.deepEqual(only(events, 'tool'), [{ type: 'tool', name: 'Bash', input: { command: 'npm test' } }]);
  t.is(only(events, 'message')[0].text, 'Running the tests.');
  t.deepEqual(only(events, 'usage'), [
    { type: 'usage', model: 'claude-sonnet-4-5', inputTokens: 25, outputTokens: 650, cacheReadTokens: 9000, cacheWriteTokens: 1000, costUsd: 0.048 },
    { type: 'usage', model: 'claude-haiku-4-5', inputTokens: 5, outputTokens: 50, costUsd: 0.002 },
  ]);
  t.regex(messageText(events), /```json-result\n\{"svc": \{"status": "success"/);
});

test('claude stream: a result without modelUsage counts its usage; API time only when one model made every call; an error result is an error', (t) => {
  const line = JSON.stringify({
    type: 'result',
    subtype: 'success',
    duration_api_ms: 1500,
    usage: { input_tokens: 7, output_tokens: 3, cache_read_input_tokens: 2, cache_creation_input_tokens: 4 },
    total_cost_usd: 0.5,
  });
  t.deepEqual(b.parseLine(line), [{ type: 'usage', inputTokens: 7, outputTokens: 3, cacheReadTokens: 2, cacheWriteTokens: 4, costUsd: 0.5, durationMs: 1500 }]);
  const oneModel = JSON.stringify({
    type: 'result',
    subtype: 'success',
    duration_api_ms: 900,
    modelUsage: { 'claude-opus-4-1': { inputTokens: 1, outputTokens: 2 } },
  });
  t.deepEqual(b.parseLine(oneModel), [{ type: 'usage', model: 'claude-opus-4-1', inputTokens: 1, outputTokens: 2, durationMs: 900 }]);
  t.deepEqual(only(parse(b, samples.claudeFailure), 'error'), [{ type: 'error', message: 'run ended with error_max_turns' }]);
});

test('claude stream: a failed tool result (a refusal under dontAsk) is an error event with its first line; a successful one is nothing', (t) => {
  const refusal =
    "Permission to use Write has been denied because Claude Code is running in don't ask mode. IMPORTANT: You *may* attempt to accomplish this action using other tools.";
  const user = (content: unknown[]) => JSON.stringify({ type: 'user', message: { role: 'user', content } });
  t.deepEqual(b.parseLine(user([{ type: 'tool_result', content: refusal, is_error: true, tool_use_id: 'toolu_1' }])), [
    { type: 'error', message: `[tool error] ${refusal}` },
  ]);
  t.deepEqual(b.parseLine(user([{ type: 'tool_result', content: [{ type: 'text', text: 'File not found\nmore' }], is_error: true, tool_use_id: 't' }])), [
    { type: 'error', message: '[tool error] File not found' },
  ]);
  t.deepEqual(b.parseLine(user([{ type: 'tool_result', content: 'ok', tool_use_id: 'toolu_2' }])), []);
  const long = b.parseLine(user([{ type: 'tool_result', content: 'x'.repeat(2000), is_error: true, tool_use_id: 't' }]));
  t.is((long[0] as { message: string }).message.length, '[tool error] '.length + 501);
});

test('opencode stream: a tool whose state is error (refused or failed) is the tool and an error event with its reason', (t) => {
  const line = JSON.stringify({
    type: 'tool_use',
    part: {
      type: 'tool',
      tool: 'bash',
      state: { status: 'error', input: { command: 'echo hi > hello.txt' }, error: 'The user rejected permission to use this specific tool call.' },
    },
  });
  t.deepEqual(f.parseLine(line), [
    { type: 'tool', name: 'bash', input: { command: 'echo hi > hello.txt' } },
    { type: 'error', message: '[tool error] The user rejected permission to use this specific tool call.' },
  ]);
  const failed = JSON.stringify({ type: 'tool_use', part: { type: 'tool', tool: 'write', state: { status: 'error', input: {} } } });
  t.deepEqual(only(f.parseLine(failed), 'error'), [{ type: 'error', message: '[tool error] write failed' }]);
});

test('codex stream: items become messages and tools; turn usage has cached input apart', (t) => {
  const events = parse(d, samples.codexStream);
  t.deepEqual(
    only(events, 'tool').map((x) => x.name),
    ['command_execution', 'file_change', 'docs.search'],
  );
  t.deepEqual(only(events, 'usage'), [{ type: 'usage', inputTokens: 315, outputTokens: 122, cacheReadTokens: 24448 }]);
  t.regex(messageText(events), /json-result/);
  t.deepEqual(parse(d, samples.codexFailure), [{ type: 'error', message: 'stream disconnected before completion' }]);
  t.deepEqual(d.parseLine(JSON.stringify({ type: 'item.completed', item: { item_type: 'assistant_message', text: 'old format' } })), [
    { type: 'message', text: 'old format' },
  ]);
});

test("codex stream: retry notices and the WebSocket fallback are raw lines, not errors; the turn's own failure is", (t) => {
  // As Codex 0.171 prints them while it retries a model server and falls back from WebSockets to HTTP.
  const lines = [
    { type: 'error', message: 'Reconnecting... 2/5 (unexpected status 404 Not Found: Unknown error, url: ws://127.0.0.1:9/v1/responses)' },
    {
      type: 'item.completed',
      item: { id: 'item_0', type: 'error', message: 'Falling back from WebSockets to HTTPS transport. unexpected status 426 Upgrade Required' },
    },
    { type: 'error', message: 'We’re currently experiencing high demand, which may cause temporary errors.' },
  ].map((l) => JSON.stringify(l));
  t.deepEqual(
    parse(d, lines).map((x) => x.type),
    ['raw', 'raw', 'error'],
  );
});

test('gemini stream: assistant deltas join into the reply; stats give usage with cached input apart', (t) => {
  const events = parse(e, samples.geminiStream);
  t.true(only(events, 'message').every((m) => m.delta === true));
  t.deepEqual(only(events, 'tool'), [{ type: 'tool', name: 'run_shell_command', input: { command: 'npm test' } }]);
  t.deepEqual(only(events, 'usage'), [{ type: 'usage', inputTokens: 500, outputTokens: 290, cacheReadTokens: 1000 }]);
  t.regex(messageText(events), /^All tests pass now\.\n\n```json-result\n/);
  t.deepEqual(only(parse(e, samples.geminiFailure), 'error'), [{ type: 'error', message: 'Reached max session turns' }]);
  const perModel = JSON.stringify({
    type: 'result',
    status: 'success',
    stats: { models: { 'gemini-2.5-pro': { input_tokens: 10, output_tokens: 2, cached: 4, input: 6 } } },
  });
  t.deepEqual(e.parseLine(perModel), [{ type: 'usage', model: 'gemini-2.5-pro', inputTokens: 6, outputTokens: 2, cacheReadTokens: 4 }]);
});

test('opencode stream: text parts, tool parts, usage per finished step with cost and reasoning', (t) => {
  const events = parse(f, samples.opencodeStream);
  t.deepEqual(only(events, 'tool'), [{ type: 'tool', name: 'bash', input: { command: 'npm test' } }]);
  t.deepEqual(only(events, 'usage'), [
    { type: 'usage', inputTokens: 400, outputTokens: 50, cacheReadTokens: 2000, reasoningTokens: 10, costUsd: 0.01 },
    { type: 'usage', inputTokens: 100, outputTokens: 250, cacheReadTokens: 2400, cacheWriteTokens: 100, costUsd: 0.02 },
  ]);
  t.deepEqual(parse(f, samples.opencodeFailure), [{ type: 'error', message: 'API key is missing' }]);
});

test('every parser: non-JSON lines are raw, blank lines nothing, unknown objects nothing', (t) => {
  for (const def of builtInHarnesses()) {
    t.deepEqual(def.parseLine('Loaded cached credentials.'), [{ type: 'raw', text: 'Loaded cached credentials.' }], def.id);
    t.deepEqual(def.parseLine('  '), [], def.id);
    t.deepEqual(def.parseLine('{"type":"something.new","x":1}'), [], def.id);
  }
});

test("each CLI's todo list becomes progress: the item in progress and the share done", (t) => {
  const todos = [
    { content: 'Read', activeForm: 'Reading', status: 'completed' },
    { content: 'Fix', activeForm: 'Fixing', status: 'in_progress' },
    { content: 'Test', status: 'pending' },
  ];
  const claude = b.parseLine(JSON.stringify({ type: 'assistant', message: { content: [{ type: 'tool_use', name: 'TodoWrite', input: { todos } }] } }));
  t.deepEqual(only(claude, 'progress'), [{ type: 'progress', message: 'Fixing', percentage: 33 }]);
  t.is(only(claude, 'tool')[0].name, 'TodoWrite');

  const codexPlan = (completed: boolean[]) => ({ id: 'i', type: 'todo_list', items: completed.map((c, i) => ({ text: `step ${i + 1}`, completed: c })) });
  t.deepEqual(d.parseLine(JSON.stringify({ type: 'item.updated', item: codexPlan([true, false]) })), [{ type: 'progress', message: 'step 2', percentage: 50 }]);
  t.deepEqual(d.parseLine(JSON.stringify({ type: 'item.completed', item: codexPlan([true, true]) })), [
    { type: 'progress', message: 'all 2 planned steps done', percentage: 100 },
  ]);
  t.deepEqual(d.parseLine(JSON.stringify({ type: 'item.started', item: { type: 'command_execution', command: 'ls' } })), []);

  const gemini = e.parseLine(
    JSON.stringify({
      type: 'tool_use',
      tool_name: 'write_todos',
      parameters: {
        todos: [
          { description: 'Plan', status: 'completed' },
          { description: 'Do', status: 'pending' },
        ],
      },
    }),
  );
  t.deepEqual(only(gemini, 'progress'), [{ type: 'progress', message: 'Do', percentage: 50 }]);

  const opencode = f.parseLine(
    JSON.stringify({
      type: 'tool_use',
      part: {
        tool: 'todowrite',
        state: {
          input: {
            todos: [
              { content: 'A', status: 'cancelled' },
              { content: 'B', status: 'completed' },
            ],
          },
        },
      },
    }),
  );
  t.deepEqual(only(opencode, 'progress'), [{ type: 'progress', message: 'all 2 planned steps done', percentage: 100 }]);
  t.deepEqual(only(f.parseLine(JSON.stringify({ type: 'tool_use', part: { tool: 'todowrite', state: { input: { todos: [] } } } })), 'progress'), []);
});
