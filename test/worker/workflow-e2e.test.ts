import test from 'ava';
import { attemptsOf, finished, git, logLines, readStream, syncManifest, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * A workflow's script step end to end through the REST API: invoke → the orchestrator claims it →
 * the in-process worker checks out the project's file:// repository, runs the script, commits and
 * pushes (x-svc.defaults git controls) → done with its result, logs and resolved git. The workflows
 * opt out of the run's shared line of work (workspace.mode isolated): this is the behaviour from
 * before workspaces, and must stay so.
 */
const MANIFEST = `
workflows:
  change:
    workspace: { mode: isolated }
    steps:
      - name: edit
        run: |
          echo "changed by $SVC_JOB_ID" > changed.txt
          echo working
          printf '%s\\n' '\`\`\`json-result' '{"svc":{"status":"success","summary":"edited changed.txt"},"files":1}' '\`\`\`'
  broken:
    workspace: { mode: isolated }
    steps:
      - name: fail
        run: "echo about to fail; echo partial > partial.txt; exit 3"
x-svc:
  defaults:
    git: { branch: "svc/\${job_id}", commit: auto, push: on_success, commit_message: "job \${job_id}: \${summary}" }
`;

/** The runner.* events of a job, oldest first: only the worker emits them (source runner). */
const runnerEvents = (jobId: string) =>
  w.srv.kernel.db('events').where({ source: 'runner' }).whereRaw("payload_json->>'job_id' = ?", [jobId]).orderBy('created_at').select('type', 'payload_json');

let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('wfe2e');
  await syncManifest(w, MANIFEST);
});
test.after.always(() => w?.stop());

test.serial('a script step runs to done: result, logs, resolved git with the pushed commit', async (t) => {
  const invoked = await w.api.post(`/projects/${w.projectId}/workflows/change/invoke?wait=true`, {});
  t.is(invoked.statusCode, 200, JSON.stringify(invoked.body));
  t.is(invoked.body.status, 'done');
  t.deepEqual(invoked.body.result_json, { svc: { status: 'success', summary: 'edited changed.txt' }, files: 1 });
  const jobId = invoked.body.job_id;

  const [attempt] = await attemptsOf(w, jobId);
  t.like(attempt, { attempt_number: 1, status: 'succeeded', result_status: 'success', result_summary: 'edited changed.txt', error: null });
  const branch = `svc/${jobId}`;
  const sha = git(w.bare, 'rev-parse', branch);
  t.deepEqual(attempt.git, {
    resolved_ref: 'main',
    resolved_sha: git(w.bare, 'rev-parse', 'main'),
    resolved_branch: branch,
    ref_source: 'project_default',
    pushed: true,
    commits: [sha],
  });
  const job = (await w.api.get(`/jobs/${jobId}`)).body;
  t.deepEqual(job.resolved_git, attempt.git);
  t.is(git(w.bare, 'show', `${sha}:changed.txt`), `changed by ${jobId}`);
  t.is(git(w.bare, 'log', '-1', '--format=%s', sha), `job ${jobId}: edited changed.txt`);
  t.is(git(w.bare, 'rev-parse', `${sha}^`), attempt.git.resolved_sha, 'one commit on top of the resolved ref');
  t.is(
    git(w.bare, 'ls-tree', '--name-only', sha)
      .split('\n')
      .filter((f) => f.startsWith('.svc')).length,
    0,
    'the worker files are not committed',
  );

  const lines = await logLines(w, jobId, attempt.id);
  t.deepEqual(
    lines.map((l) => l.seq),
    lines.map((_, i) => i + 1),
    'seq numbers are contiguous from 1',
  );
  const stdout = lines.filter((l) => l.stream === 'stdout').map((l) => l.line);
  t.deepEqual(stdout.slice(0, 2), ['working', '```json-result']);
  t.true(lines.some((l) => l.stream === 'system' && l.line === 'process ended (exit code 0): success'));
  t.true(lines.some((l) => l.stream === 'system' && l.line === `committed ${sha}`));

  const page = await w.api.get(`/jobs/${jobId}/attempts/${attempt.id}/logs?limit=2&offset=1`);
  t.deepEqual(
    page.body.data.map((l: any) => l.seq),
    [2, 3],
  );
  t.like(page.body.pagination, { limit: 2, offset: 1, count: 2, total: lines.length, has_more: true });

  const stream = await readStream(w, `/jobs/${jobId}/attempts/${attempt.id}/logs/stream`);
  t.is(stream.status, 200);
  t.regex(stream.type ?? '', /^text\/event-stream/);
  const logs = stream.events.filter((e) => e.event === 'log');
  t.deepEqual(
    logs.map((e) => JSON.parse(e.data).line),
    lines.map((l) => l.line),
  );
  t.deepEqual(
    logs.map((e) => Number(e.id)),
    lines.map((l) => l.seq),
  );
  t.deepEqual(stream.events.at(-1), {
    id: String(lines.length),
    event: 'end',
    data: JSON.stringify({ status: 'succeeded', result_status: 'success', error: null }),
  });

  const resumed = await readStream(w, `/jobs/${jobId}/attempts/${attempt.id}/logs/stream`, { 'last-event-id': '3' });
  t.deepEqual(
    resumed.events.filter((e) => e.event === 'log').map((e) => Number(e.id)),
    lines.slice(3).map((l) => l.seq),
  );

  t.deepEqual(await runnerEvents(jobId), [
    { type: 'runner.started', payload_json: { attempt_id: attempt.id, job_id: jobId, attemptId: attempt.id, jobId } },
    { type: 'runner.completed', payload_json: { attempt_id: attempt.id, job_id: jobId, attemptId: attempt.id, jobId, result: invoked.body.result_json } },
  ]);
});

test.serial('a nonzero exit fails the attempt with the exit code; the auto commit is made but not pushed', async (t) => {
  const invoked = await w.api.post(`/projects/${w.projectId}/workflows/broken/invoke`, {});
  t.is(invoked.statusCode, 201);
  const job = await finished(w, invoked.body.job_id);
  t.is(job.phase, 'cancelled');
  t.regex(job.close_reason, /attempt 1 failed .*exited with code 3/);
  t.is(job.resolved_git, null);
  const [attempt] = await attemptsOf(w, job.id);
  t.like(attempt, { status: 'failed', result_status: 'failed', error: 'exited with code 3' });
  t.deepEqual(attempt.result_json, { svc: { status: 'failed', reason: 'exited with code 3' }, exit_code: 3 });
  t.is(attempt.git.pushed, false);
  t.is(attempt.git.commits.length, 1, 'commit: auto commits even after a failure');
  t.throws(() => git(w.bare, 'rev-parse', '--verify', '--quiet', `svc/${job.id}`), undefined, 'nothing was pushed');
  const lines = await logLines(w, job.id, attempt.id);
  t.true(lines.some((l) => l.line === 'about to fail'));
  t.true(lines.some((l) => l.line === 'process ended (exit code 3): failed: exited with code 3'));
  t.deepEqual(
    (await runnerEvents(job.id)).map((e: any) => [e.type, e.payload_json]),
    [
      ['runner.started', { attempt_id: attempt.id, job_id: job.id, attemptId: attempt.id, jobId: job.id }],
      [
        'runner.failed',
        { attempt_id: attempt.id, job_id: job.id, attemptId: attempt.id, jobId: job.id, error: 'exited with code 3', exit_code: 3, exitCode: 3 },
      ],
    ],
  );
});

test.serial('logs of an unknown attempt, or of another job, are 404; a bad query is 400', async (t) => {
  const invoked = await w.api.post(`/projects/${w.projectId}/workflows/change/invoke?wait=true`, {});
  const [attempt] = await attemptsOf(w, invoked.body.job_id);
  const other = await w.api.post(`/projects/${w.projectId}/workflows/broken/invoke`, {});
  const wrong = await w.api.get(`/jobs/${other.body.job_id}/attempts/${attempt.id}/logs`);
  t.is(wrong.statusCode, 404);
  t.is(wrong.body.message, `attempt ${attempt.id} of job ${other.body.job_id} not found`);
  t.is((await w.api.get(`/jobs/${invoked.body.job_id}/attempts/${attempt.id}/logs/stream?last_event_id=x`)).statusCode, 400);
  t.is((await w.api.get(`/jobs/${invoked.body.job_id}/attempts/${attempt.id}/logs?limit=0`)).statusCode, 400);
  t.is((await w.api.get(`/jobs/${invoked.body.job_id}/attempts/not-a-uuid/logs`)).statusCode, 400);
  await finished(w, other.body.job_id);
});
