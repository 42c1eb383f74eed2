import test from 'ava';
import { attemptsOf, finished, logLines, scriptJob, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * A process's output is bytes from anywhere. A NUL byte in a line, or a json-result block the
 * database cannot store, must neither lose the attempt's other log lines nor leave its result
 * unrecorded (to be reaped and run again after the lease).
 */
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('hostout', { overrides: { worker: { concurrency: 2 } } });
});
test.after.always(async () => {
  await w?.stop();
});

test('NUL bytes in output are stored as U+FFFD beside the other lines; an unstorable result block is ignored and the script still succeeds', async (t) => {
  const script = [
    'echo before',
    "printf 'bin\\000ary\\n'",
    'echo "\\`\\`\\`json-result"',
    'echo \'{"svc":{"status":"success","summary":"x\\u0000y"}}\'',
    'echo "\\`\\`\\`"',
    'echo after',
  ].join('\n');
  const id = await scriptJob(w, script);
  const job = await finished(w, id, 30_000);
  t.is(job.phase, 'done');
  const [attempt] = await attemptsOf(w, id);
  t.is(attempt.status, 'succeeded');
  const stdout = (await logLines(w, id, attempt.id)).filter((l) => l.stream === 'stdout').map((l) => l.line);
  t.deepEqual(stdout[0], 'before');
  t.deepEqual(stdout[1], 'bin\uFFFDary');
  t.is(stdout.at(-1), 'after');
});
