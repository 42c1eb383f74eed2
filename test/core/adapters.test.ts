import test from 'ava';
import { fileURLToPath } from 'node:url';
import { defineAdapter, defineHarness } from 'svc';
import { createAdapter, type AdapterDeps } from '../../core/adapters.ts';
import { call, startTestServer } from '../support/server.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/adapters/recording-scheduler.ts', import.meta.url));

test.serial('a third-party adapter chosen by config serves its port, with its own options', async (t) => {
  const { calls } = await import(FIXTURE);
  const s = await startTestServer({
    overrides: { roles: ['api', 'orchestrator'], adapters: { scheduler: { use: FIXTURE, options: { label: 'ext' } } } },
  });
  try {
    t.deepEqual((await call(s.server, 'GET', '/health')).body.roles, ['api', 'orchestrator']);
    t.true(calls.includes('ext:start'), 'the orchestrator role started the configured scheduler');
    t.true(calls.some((c: string) => c.startsWith('ext:every:svc.housekeeping')));
  } finally {
    await s.stop();
  }
  t.true(calls.includes('ext:stop'), 'stopping the kernel stops the scheduler');
});

test('adapter options are validated by the adapter, failing the boot with their path', async (t) => {
  const err = await t.throwsAsync(
    startTestServer({ overrides: { roles: ['api', 'orchestrator'], adapters: { scheduler: { use: FIXTURE, options: { label: 7 } } } } }),
  );
  t.regex(err!.message, /adapters\.scheduler\.options\.label: "label" must be a string/);
});

test('an adapter of the wrong kind is refused by name', async (t) => {
  const err = await t.throwsAsync(createAdapter('runtime', { use: FIXTURE, options: { label: 'x' } }, {} as AdapterDeps));
  t.regex(err!.message, /adapters\.runtime\.use: '.*recording-scheduler\.ts' is a scheduler adapter, not a runtime adapter/);
});

test('the SDK rejects malformed definitions with their name', (t) => {
  t.throws(() => defineAdapter({ kind: 'runtime', name: '', options: undefined as never, create: () => null }), { message: /name must be a non-empty string/ });
  t.throws(() => defineHarness({ id: 'Bad Id', description: 'x', build: () => ({ command: '', args: [], env: {}, files: {} }), parseLine: () => [] }), {
    message: /id 'Bad Id'/,
  });
  t.throws(() => defineHarness({ id: 'ok', description: 'x', build: undefined as never, parseLine: () => [] }), {
    message: /defineHarness\(ok\): build must be a function/,
  });
});
