/**
 * `svc job logs ROOT [-f]` on a workflow root (node dist/cli/bin.js, a subprocess): its steps' logs one
 * step after another, each line labelled by its step, against a server whose worker runs the steps.
 */
import test from 'ava';
import { rm } from 'node:fs/promises';
import { cliUser, tempHome } from './helpers.ts';
import { syncManifest, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

const MANIFEST = `
workflows:
  pair:
    workspace: { mode: isolated }
    steps:
      - { name: first, run: "echo one; sleep 1; echo two" }
      - { name: second, run: "echo three", depends_on: [first] }
      - { name: never, run: "echo never", depends_on: [second], if: "steps.second.status == 'failed'" }
`;

let w: WorkerWorld;
let home = '';
const { svc } = cliUser(() => ({ home, url: w.srv.url, token: w.token }));

test.before(async () => {
  w = await workerWorld('wflogs');
  await syncManifest(w, MANIFEST);
  home = await tempHome();
});
test.after.always(async () => {
  await w?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test('svc job logs -f on a workflow root follows its steps in order, labelled; without -f it prints what they wrote', async (t) => {
  t.timeout(120_000);
  const invoked = await w.api.post(`/projects/${w.projectId}/workflows/pair/invoke`, {});
  t.is(invoked.statusCode, 201, JSON.stringify(invoked.body));
  const root = invoked.body.job_id ?? invoked.body.id;
  const followed = await svc(['job', 'logs', root, '-f']);
  t.is(followed.code, 0, followed.stderr);
  const labelled = followed.stdout.split('\n').filter((l) => /^\[(first|second|never)\] (one|two|three|never)$/.test(l));
  t.deepEqual(labelled, ['[first] one', '[first] two', '[second] three']);
  t.regex(followed.stderr, /step first: attempt 1 succeeded/);
  t.regex(followed.stderr, /step never: \w+ without running/);

  const printed = await svc(['job', 'logs', root, '--json']);
  t.is(printed.code, 0, printed.stderr);
  const lines = printed.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.stream !== 'system');
  t.deepEqual(
    lines.map((l) => [l.step_name, l.line]),
    [
      ['first', 'one'],
      ['first', 'two'],
      ['second', 'three'],
    ],
  );
});
