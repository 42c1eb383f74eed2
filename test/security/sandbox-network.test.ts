import test from 'ava';
import { attemptsOf, finished, logLines, scriptJob, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

/** worker.sandbox.network none: the attempt has only a loopback of its own, so neither svc's API nor the machine's PostgreSQL answers it. */
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('wnet', { overrides: { worker: { sandbox: { network: 'none' } } } });
});
test.after.always(() => w?.stop());

test('with network none the job reaches nothing, not even the loopback services of the host', async (t) => {
  const reach = (label: string, url: string) =>
    `node -e "fetch('${url}').then(() => console.log('${label}=reached'), () => console.log('${label}=unreachable'))"`;
  const jobId = await scriptJob(
    w,
    [
      reach('api', `${w.srv.url}/health`),
      `node -e "require('net').connect(5432, '127.0.0.1').on('connect', () => { console.log('pg=reached'); process.exit(0); }).on('error', () => console.log('pg=unreachable'))"`,
    ].join('\n'),
  );
  const job = await finished(w, jobId);
  const [attempt] = await attemptsOf(w, jobId);
  const out = (await logLines(w, jobId, attempt.id)).filter((l) => l.stream === 'stdout').map((l) => l.line);
  t.is(job.phase, 'done', `${attempt.error}: ${out.join(' | ')}`);
  t.deepEqual(out.sort(), ['api=unreachable', 'pg=unreachable']);
});
