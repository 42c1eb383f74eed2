import test, { type ExecutionContext } from 'ava';
import { claimed, claimWorld, complete, jobRow, type World } from './claim-helpers.ts';

const MANIFEST = `
workflows:
  release:
    steps:
      - name: build
        run: npm run build
      - name: publish
        run: npm publish
        depends_on: [build]
        if: steps.build.status == 'succeeded' && steps.build.result.publish == true
      - name: announce
        action: { type: notify }
        depends_on: [publish]
        if: steps.publish.status == 'skipped' || inputs.loud == true
`;

let w: World;
test.before(async () => {
  w = await claimWorld('stepif');
  const sync = await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml: MANIFEST });
  if (sync.statusCode !== 200) throw new Error(`sync: ${sync.statusCode} ${JSON.stringify(sync.body)}`);
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

async function invoke(input: Record<string, unknown>) {
  const res = await w.owner.api.post(`/projects/${w.projectA}/workflows/release/invoke`, { input });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const step = (name: string) => res.body.step_jobs.find((s: { step_name: string }) => s.step_name === name).job_id as string;
  return { root: res.body.job_id as string, build: step('build'), publish: step('publish'), announce: step('announce') };
}

async function succeed(t: ExecutionContext, jobId: string, resultJson: Record<string, unknown>) {
  const { attempt } = await claimed(t, w, jobId);
  t.is((await complete(w, jobId, attempt, { status: 'success', summary: 'ok' }, { result_json: resultJson })).statusCode, 200);
}

test.serial('a condition over an earlier step is decided when that step finishes: false skips, and skips cascade through conditions', async (t) => {
  const { root, build, publish, announce } = await invoke({ loud: false });
  t.is((await jobRow(w, publish)).phase, 'ready', 'undecided while build runs');
  await succeed(t, build, { publish: false });
  const skipped = await jobRow(w, publish);
  t.like(skipped, { phase: 'cancelled', close_reason: 'skipped' });
  t.is((await jobRow(w, announce)).phase, 'ready', 'announce runs because publish was skipped');
  await succeed(t, announce, {});
  t.is((await jobRow(w, root)).phase, 'done', 'a skipped step counts as complete');
});

test.serial('a true condition leaves the step to run; the next one is skipped when its condition is false', async (t) => {
  const { root, build, publish, announce } = await invoke({ loud: false });
  await succeed(t, build, { publish: true });
  t.is((await jobRow(w, publish)).phase, 'ready');
  await succeed(t, publish, {});
  t.like(await jobRow(w, announce), { phase: 'cancelled', close_reason: 'skipped' });
  t.is((await jobRow(w, root)).phase, 'done');
});
