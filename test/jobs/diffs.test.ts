import test from 'ava';
import { randomUUID } from 'node:crypto';
import { AttemptControlToken, LeaseLost, type AttemptDiff } from '../../core/ports/attempts.ts';
import { assertError, memberOf } from '../orgs/helpers.ts';
import { ISO, claimWorld, claimed, complete, newJob, type World } from './claim-helpers.ts';

/**
 * GET /jobs/{job_id}/attempts/{attempt_number}/diff through the HTTP surface: the shape, the format,
 * who may read it, every 404 and 400, and the worker's side (AttemptControl.recordDiff) fenced by
 * the lease. test/worker/diff.test.ts records real diffs from real checkouts.
 */
let w: World;
test.before(async () => {
  w = await claimWorld('diffs');
});
test.after.always(async () => {
  await w?.ctx.srv.stop();
});

const BASE = 'a'.repeat(40);
const HEAD = 'b'.repeat(40);
const PATCH = 'diff --git a/app.txt b/app.txt\nindex 1..2 100644\n--- a/app.txt\n+++ b/app.txt\n@@ -1 +1 @@\n-one\n+two\n';
const DIFF: AttemptDiff = {
  base_sha: BASE,
  head_sha: HEAD,
  uncommitted: false,
  files: [
    { path: 'app.txt', status: 'modified', additions: 1, deletions: 1, binary: false },
    { path: 'new.txt', old_path: 'old.txt', status: 'renamed', additions: 0, deletions: 0, binary: false },
  ],
  files_total: 2,
  additions: 1,
  deletions: 1,
  patch: PATCH,
  patch_bytes: Buffer.byteLength(PATCH),
  patch_truncated: false,
  max_patch_bytes: 1024 * 1024,
  max_files: 3000,
};

const control = () => w.ctx.srv.server.app.container.resolve(AttemptControlToken);
const lease = (jobId: string, attempt: { id: string; lease_token: string }) => ({ jobId, attemptId: attempt.id, leaseToken: attempt.lease_token });

/** A job whose first attempt recorded `diff` and succeeded. */
async function jobWithDiff(t: any, diff: AttemptDiff = DIFF, project = w.projectA): Promise<{ job: any; attempt: any }> {
  const job = await newJob(w, {}, project, project === w.projectB ? w.outsider : w.owner);
  const { attempt } = await claimed(t, w, job.id, {}, project === w.projectB ? w.outsider : w.owner);
  await control().recordDiff(lease(job.id, attempt), diff);
  t.is((await complete(w, job.id, attempt, { status: 'success' }, {}, project === w.projectB ? w.outsider : w.owner)).statusCode, 200);
  return { job, attempt };
}

test("an attempt's diff: files, stats, the patch; format=stat leaves the patch out", async (t) => {
  const { job, attempt } = await jobWithDiff(t);
  const res = await w.owner.api.get(`/jobs/${job.id}/attempts/1/diff`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.regex(res.body.recorded_at, ISO);
  const { recorded_at: _at, ...rest } = res.body;
  t.deepEqual(rest, {
    job_id: job.id,
    attempt_id: attempt.id,
    attempt_number: 1,
    format: 'patch',
    base_sha: BASE,
    head_sha: HEAD,
    uncommitted: false,
    stats: { files: 2, additions: 1, deletions: 1 },
    files: DIFF.files,
    patch: PATCH,
    truncated: false,
    note: null,
    patch_bytes: DIFF.patch_bytes,
    omitted_bytes: 0,
    limits: { max_patch_bytes: 1024 * 1024, max_files: 3000 },
  });
  t.deepEqual(Object.keys(res.body.files[1]), ['path', 'old_path', 'status', 'additions', 'deletions', 'binary'], 'keys in the documented order');

  const stat = await w.owner.api.get(`/jobs/${job.id}/attempts/1/diff?format=stat`);
  t.is(stat.statusCode, 200);
  t.false('patch' in stat.body);
  t.like(stat.body, { format: 'stat', stats: { files: 2, additions: 1, deletions: 1 }, truncated: false, note: null });
  t.is((await w.owner.api.get(`/jobs/${job.id}/attempts/1/diff?format=patch`)).body.patch, PATCH);
});

test('what a cut diff says: the patch cut, the files cut, no patch kept at all', async (t) => {
  const cut = await jobWithDiff(t, {
    ...DIFF,
    files: DIFF.files.slice(0, 1),
    files_total: 7,
    patch_bytes: 3 * 1024 * 1024,
    patch_truncated: true,
    max_patch_bytes: 1024 * 1024,
    max_files: 1,
  });
  const res = (await w.owner.api.get(`/jobs/${cut.job.id}/attempts/1/diff`)).body;
  t.true(res.truncated);
  t.is(res.omitted_bytes, 3 * 1024 * 1024 - Buffer.byteLength(PATCH));
  t.is(
    res.note,
    `the patch is cut at 1.0 MiB (worker.diff.max_patch_bytes), after its last whole line: 3.0 MiB of 3.0 MiB left out; 1 of 7 files are listed (worker.diff.max_files); the stats count every file`,
  );
  const stat = (await w.owner.api.get(`/jobs/${cut.job.id}/attempts/1/diff?format=stat`)).body;
  t.like(stat, { truncated: true, note: '1 of 7 files are listed (worker.diff.max_files); the stats count every file' });

  const none = await jobWithDiff(t, { ...DIFF, patch: '', patch_bytes: 0, patch_truncated: true, max_patch_bytes: 0 });
  const counts = (await w.owner.api.get(`/jobs/${none.job.id}/attempts/1/diff`)).body;
  t.like(counts, {
    truncated: true,
    patch: '',
    note: 'no patch text is kept on this server (worker.diff.max_patch_bytes is 0); every file is listed with its counts',
  });
  t.like((await w.owner.api.get(`/jobs/${none.job.id}/attempts/1/diff?format=stat`)).body, { truncated: false, note: null });
});

test('another org cannot tell the job exists (404 as for an unknown job); a member of the org reads it', async (t) => {
  const { job } = await jobWithDiff(t);
  const unknown = await w.outsider.api.get(`/jobs/diffs-00000000/attempts/1/diff`);
  assertError(t, unknown, 404, 'job diffs-00000000 not found');
  const outsider = await w.outsider.api.get(`/jobs/${job.id}/attempts/1/diff`);
  assertError(t, outsider, 404, `job ${job.id} not found`);
  const stat = await w.outsider.api.get(`/jobs/${job.id}/attempts/1/diff?format=stat`);
  assertError(t, stat, 404, `job ${job.id} not found`);
  // And the other way round: org B's own job is not the owner's to read.
  const theirs = await jobWithDiff(t, DIFF, w.projectB);
  assertError(t, await w.owner.api.get(`/jobs/${theirs.job.id}/attempts/1/diff`), 404, `job ${theirs.job.id} not found`);

  const orgA = (await w.owner.api.get(`/projects/${w.projectA}`)).body.org_id;
  const member = await memberOf(w.ctx, orgA, 'diffs-member');
  t.is((await member.api.get(`/jobs/${job.id}/attempts/1/diff`)).statusCode, 200);
  const anonymous = await w.ctx.srv.server.inject({ method: 'GET', url: `/jobs/${job.id}/attempts/1/diff` });
  t.is(anonymous.statusCode, 401);
});

test('404 naming why there is no diff: no such attempt, still running, no checkout, none recorded', async (t) => {
  const job = await newJob(w);
  assertError(t, await w.owner.api.get(`/jobs/${job.id}/attempts/1/diff`), 404, `attempt 1 of job ${job.id} not found`);
  const { attempt } = await claimed(t, w, job.id);
  assertError(
    t,
    await w.owner.api.get(`/jobs/${job.id}/attempts/1/diff`),
    404,
    `attempt 1 of job ${job.id} has no diff yet: it is still running (its worker records the diff when it ends)`,
  );
  assertError(t, await w.owner.api.get(`/jobs/${job.id}/attempts/2/diff`), 404, `attempt 2 of job ${job.id} not found`);
  t.is((await complete(w, job.id, attempt, { status: 'success' })).statusCode, 200);
  assertError(
    t,
    await w.owner.api.get(`/jobs/${job.id}/attempts/1/diff?format=stat`),
    404,
    `attempt 1 of job ${job.id} has no diff: it had no checkout (its project has no repo_url, it ended before cloning, or a runner outside svc ran it)`,
  );

  // A checkout (the attempt's git) but no diff: the worker could not read or store it, and said so in the log.
  const other = await newJob(w);
  const second = await claimed(t, w, other.id);
  const git = { resolved_ref: 'main', resolved_sha: BASE, resolved_branch: 'main', ref_source: 'project_default', pushed: false, commits: [] };
  await w.claims.complete(other.id, second.attempt.id, { lease_token: second.attempt.lease_token, result: { status: 'success' }, git });
  assertError(
    t,
    await w.owner.api.get(`/jobs/${other.id}/attempts/1/diff`),
    404,
    `attempt 1 of job ${other.id} has no diff: its worker did not record one (the attempt's log says why)`,
  );
});

test('bad input is 400 naming the field', async (t) => {
  const { job } = await jobWithDiff(t);
  assertError(t, await w.owner.api.get(`/jobs/${job.id}/attempts/1/diff?format=full`), 400, '"format" must be one of [patch, stat]');
  assertError(t, await w.owner.api.get(`/jobs/${job.id}/attempts/0/diff`), 400, '"attempt_number" must be greater than or equal to 1');
  assertError(t, await w.owner.api.get(`/jobs/${job.id}/attempts/first/diff`), 400, '"attempt_number" must be a number');
  assertError(t, await w.owner.api.get(`/jobs/${job.id}/attempts/1/diff?color=always`), 400, '"color" is not allowed');
});

test('recording is fenced by the lease: a stale token or an ended attempt writes nothing; the first diff of an attempt stands', async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const rows = () => w.db('attempt_diffs').where({ attempt_id: attempt.id });
  await t.throwsAsync(control().recordDiff({ jobId: job.id, attemptId: attempt.id, leaseToken: randomUUID() }, DIFF), {
    instanceOf: LeaseLost,
    message: /the lease token does not match/,
  });
  t.is((await rows()).length, 0);
  await control().recordDiff(lease(job.id, attempt), DIFF);
  await control().recordDiff(lease(job.id, attempt), { ...DIFF, additions: 99 });
  t.is((await rows()).length, 1);
  t.is((await rows())[0].additions, 1, 'a second record for the attempt is ignored');
  t.is((await complete(w, job.id, attempt, { status: 'success' })).statusCode, 200);
  await t.throwsAsync(control().recordDiff(lease(job.id, attempt), { ...DIFF, additions: 7 }), { instanceOf: LeaseLost, message: /the attempt is succeeded/ });
  t.is((await rows())[0].additions, 1);
});
