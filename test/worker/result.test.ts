import test from 'ava';
import { JsonResultScanner, outcomeOf } from '../../plugins/worker/result.ts';
import { HarnessOutput } from '../../plugins/worker/harness-output.ts';
import type { LogSink } from '../../plugins/worker/log-sink.ts';
import type { HarnessEvent } from '../../core/ports/harness.ts';
import type { OutputLine } from '../../core/ports/runtime.ts';

const scan = (text: string) => {
  const s = new JsonResultScanner();
  s.pushText(text);
  return s.result();
};
const ok = { exitCode: 0, signal: null, timedOut: false };

test('the last json-result block whose body is a JSON object wins', (t) => {
  const text = [
    '```json-result',
    '{"svc":{"status":"failed"}}',
    '```',
    'more',
    '```json-result',
    '{"svc":{"status":"success"},"n":2}',
    '```',
    '```json-result',
    '[1,2]',
    '```',
    '~~~~ json-result',
    'not json',
    '~~~~',
  ].join('\n');
  t.deepEqual(scan(text), { svc: { status: 'success' }, n: 2 });
});

test('fences: other labels are ignored, a longer closing fence closes, an unclosed block does not count', (t) => {
  t.is(scan('```json\n{"svc":{}}\n```'), null);
  t.deepEqual(scan('````json-result\n{"a":1}\n```\n{"b":2}\n`````'), null, 'a shorter fence inside does not close');
  t.deepEqual(scan('```json-result\n{"a":\n 1}\n````'), { a: 1 });
  t.is(scan('```json-result\n{"a":1}'), null);
});

test('outcomes: the block decides unless the process failed; scripts without a block succeed on exit 0; agents fail', (t) => {
  const block = { svc: { status: 'waiting', summary: 'later', reason: 'needs input' } };
  t.like(outcomeOf('agent', ok, block, null), { result: { status: 'waiting', summary: 'later', reason: 'needs input' }, result_json: block });
  t.like(outcomeOf('script', ok, null, null), { result: { status: 'success', summary: 'exit code 0' }, result_json: { exit_code: 0 } });
  t.like(outcomeOf('script', ok, { files: 3 }, null), { result: { status: 'success' }, result_json: { files: 3 } });
  t.is(outcomeOf('agent', ok, null, null).result.status, 'failed');
  t.regex(outcomeOf('agent', ok, null, null).error!, /^no json-result block in the output/);
  t.is(outcomeOf('agent', ok, { files: 1 }, null).error, 'the last json-result block has no svc.status (success, waiting or failed)');
  t.is(outcomeOf('script', { exitCode: 2, signal: null, timedOut: false }, { svc: { status: 'success' } }, null).error, 'exited with code 2');
  t.is(outcomeOf('script', { exitCode: 2, signal: null, timedOut: false }, { svc: { status: 'failed', reason: 'lint errors' } }, null).error, 'lint errors');
  t.is(outcomeOf('script', { exitCode: null, signal: 'SIGKILL', timedOut: false }, null, null).error, 'killed by SIGKILL');
  t.is(
    outcomeOf('agent', { exitCode: null, signal: 'SIGTERM', timedOut: true }, null, 5).error,
    'timed out after 5 s (hints.timeout_seconds); the process tree was killed',
  );
  t.is(outcomeOf('agent', ok, { svc: { status: 'failed' } }, null).error, 'the json-result block says failed');
});

test('a block holding what the database cannot store (NUL, a lone surrogate, nesting past 64) does not count', (t) => {
  const block = (body: string) => `\`\`\`json-result\n${body}\n\`\`\``;
  const deep = `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`;
  t.deepEqual(
    scan([block('{"svc":{"status":"success"},"n":1}'), block('{"svc":{"status":"success","summary":"a\\u0000b"}}')].join('\n')),
    { svc: { status: 'success' }, n: 1 },
    'the earlier block stays the result',
  );
  t.is(scan(block('{"svc":{"status":"success","summary":"\\ud800"}}')), null);
  t.is(scan(block(`{"svc":{"status":"success"},"deep":${deep}}`)), null);
});

test('a stderr line read between the fragments of a streamed json-result block does not break it', async (t) => {
  // stdout and stderr are separate pipes: a line the CLI wrote to stderr earlier can be read in the middle of the block.
  const delta = (text: string) => JSON.stringify({ delta: text });
  const harness = {
    id: 'streams',
    description: 'streams',
    build: () => ({ command: 'x', args: [], env: {}, files: {} }),
    parseLine: (line: string): HarnessEvent[] => (line.startsWith('{') ? [{ type: 'message', text: JSON.parse(line).delta, delta: true }] : []),
  };
  const logged: string[] = [];
  const log = { add: async (_stream: string, line: string) => void logged.push(line), mask: (text: string) => text } as unknown as LogSink;
  const scanner = new JsonResultScanner();
  const output = new HarnessOutput(harness, log, scanner, 'm', { usage: async () => {}, progress: async () => {} });
  const lines: OutputLine[] = [
    { stream: 'stdout', line: delta('Done.\n```json-') },
    { stream: 'stdout', line: delta('result\n{"svc":{"status":"success","summary":"ok"}}\n``') },
    { stream: 'stderr', line: 'warning: something the CLI said earlier' },
    { stream: 'stdout', line: delta('`\n') },
  ];
  for (const line of lines) await output.line(line);
  await output.end();
  t.deepEqual(scanner.result(), { svc: { status: 'success', summary: 'ok' } });
  t.true(logged.includes('warning: something the CLI said earlier'), 'the stderr line is still logged');
});
