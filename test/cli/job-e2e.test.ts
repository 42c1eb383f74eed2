/**
 * End to end: `svc job …` (node dist/cli/bin.js, a subprocess) against the real server on a fresh database,
 * for every job endpoint, receipt and compare included.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli, tempHome, type CliResult } from './helpers.ts';
import { bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let home = '';
let token = '';

test.before(async () => {
  server = await startTestServer();
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

/** What a runner reports while an attempt runs (no CLI command records usage: the worker does). */
async function recordUsage(jobId: string, attemptId: string, leaseToken: string, calls: unknown[]): Promise<void> {
  const res = await fetch(`${server.url}/jobs/${jobId}/attempts/${attemptId}/usage`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ lease_token: leaseToken, calls }),
  });
  if (res.status !== 201) throw new Error(`usage: ${res.status} ${await res.text()}`);
}

test('svc job: create, list, get, update, attachments, relations, context, tree, claim, review, attempts, receipts, compare, cancel', async (t) => {
  t.timeout(120_000);
  const show = (args: string[], r: CliResult) => `svc ${args.join(' ')} → exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
  const svc = (args: string[]) => runCli(home, args, { SVC_API_URL: server.url, SVC_TOKEN: token });
  const ok = async (args: string[]) => {
    const r = await svc(args);
    t.is(r.code, 0, show(args, r));
    if (r.code !== 0) throw new Error(show(args, r));
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '--json']));

  const org = (await json(['org', 'create', 'Jobs E2E'])).id;
  const project = (await json(['project', 'create', 'Web', '--org', org, '--slug', 'webapp'])).id;

  // --- create, list, get, update ------------------------------------------------------------------
  const first = await json([
    'job',
    'create',
    '--project',
    project,
    '--description',
    'Fix the login bug\n\nIt 500s.',
    '--priority',
    '1',
    '--label',
    'auth',
    '--label',
    'web',
    '--hints',
    '{"max_attempts":2}',
    '--issue-type',
    'bug',
  ]);
  t.regex(first.id, /^webapp-[0-9a-f]{8}$/);
  t.like(first, {
    project_id: project,
    title: 'Fix the login bug',
    priority: 1,
    labels: ['auth', 'web'],
    issue_type: 'bug',
    phase: 'ready',
    hints: { max_attempts: 2, permission_policy: 'yolo' },
  });
  const second = await json(['job', 'create', '--project', project, '--description', 'Write docs', '--title', 'Docs', '--phase', 'backlog']);
  t.like(second, { title: 'Docs', phase: 'backlog', priority: 2 });

  const table = (await ok(['job', 'list', '--project', project])).trimEnd().split('\n');
  t.regex(table[0], /^ID +PHASE +PRI +TITLE$/);
  t.deepEqual(
    table.slice(1).map((l) => l.split(/ {2,}/)),
    [
      [second.id, 'backlog', '2', 'Docs'],
      [first.id, 'ready', '1', 'Fix the login bug'],
    ],
  );
  t.deepEqual(
    (await json(['job', 'list', '--project', project, '--phase', 'backlog'])).data.map((j: { id: string }) => j.id),
    [second.id],
  );
  t.deepEqual((await json(['job', 'list', '--project', project, '--label', 'auth', '--limit', '1'])).pagination, {
    limit: 1,
    offset: 0,
    count: 1,
    total: 1,
    has_more: false,
  });

  const got = await ok(['job', 'get', first.id]);
  t.regex(got, new RegExp(`^id: +${first.id}$`, 'm'));
  t.regex(got, /^title: +Fix the login bug$/m);
  t.deepEqual(await json(['job', 'get', first.id]), first);
  t.is(await ok(['job', 'show', first.id]), got, 'show is get, as in the other command groups');

  const updated = await json(['job', 'update', first.id, '--title', 'Fix login for good', '--priority', '0', '--phase', 'backlog', '--label', 'auth']);
  t.like(updated, { id: first.id, title: 'Fix login for good', priority: 0, phase: 'backlog', labels: ['auth'] });

  // --- attachments --------------------------------------------------------------------------------
  const bytes = randomBytes(100_000);
  await writeFile(join(home, 'dump.bin'), bytes);
  await writeFile(join(home, 'notes.md'), '# Notes\nüñí\n');
  const added = await ok(['job', 'attachments', 'add', first.id, join(home, 'notes.md')]);
  t.regex(added, /^name: +notes\.md$/m);
  t.regex(added, /^mime_type: +text\/markdown$/m);
  t.like(await json(['job', 'attachments', 'add', first.id, join(home, 'dump.bin'), '--name', 'dump data.bin']), {
    name: 'dump data.bin',
    mime_type: null,
    size_bytes: bytes.length,
  });

  const dup = await svc(['job', 'attachments', 'add', first.id, join(home, 'notes.md')]);
  t.is(dup.code, 1, show(['attachments', 'add', 'dup'], dup));
  t.is(dup.stderr, `svc: job ${first.id} already has an attachment named "notes.md" (409)\n`);

  const listed = await json(['job', 'attachments', 'list', first.id]);
  t.deepEqual(
    listed.data.map((a: { name: string; size_bytes: number }) => [a.name, a.size_bytes]),
    [
      ['dump data.bin', bytes.length],
      ['notes.md', Buffer.byteLength('# Notes\nüñí\n')],
    ],
  );
  t.regex(
    await ok(['job', 'attachments', 'list', first.id]),
    /^NAME +SIZE +TYPE +CREATED\ndump data\.bin +100000 +- +\S+\nnotes\.md +\d+ +text\/markdown +\S+\n$/,
  );

  const out = join(home, 'back.bin');
  t.is(await ok(['job', 'attachments', 'get', first.id, 'dump data.bin', '--output', out]), `Saved dump data.bin (${bytes.length} bytes) to ${out}.\n`);
  t.true((await readFile(out)).equals(bytes));
  t.is(await ok(['job', 'attachments', 'get', first.id, 'notes.md']), '# Notes\nüñí\n');
  t.like(await json(['job', 'attachments', 'get', first.id, 'notes.md']), { name: 'notes.md', job_id: first.id });

  t.is(await ok(['job', 'attachments', 'remove', first.id, 'notes.md']), `Removed attachment notes.md from job ${first.id}.\n`);
  t.deepEqual(
    (await json(['job', 'attachments', 'list', first.id])).data.map((a: { name: string }) => a.name),
    ['dump data.bin'],
  );
  const gone = await svc(['job', 'attachments', 'get', first.id, 'notes.md', '--output', join(home, 'x')]);
  t.is(gone.code, 1);
  t.is(gone.stderr, `svc: attachment "notes.md" not found on job ${first.id} (404)\n`);

  // --- relations, context, tree, claim, review, attempts ----------------------------------------------
  const root = await json(['job', 'create', '--project', project, '--description', 'Root']);
  const child = await json(['job', 'create', '--project', project, '--description', 'Child', '--parent', root.id]);
  const blocker = await json(['job', 'create', '--project', project, '--description', 'Blocker']);
  t.is(child.id, `${root.id}.1`);
  t.is(await ok(['job', 'deps', 'add', child.id, '--on', blocker.id]), `Job ${child.id} blocked_by ${blocker.id}.\n`);
  const rel = `${child.id} blocked_by ${blocker.id}  [ready]  Blocker`;
  t.is(await ok(['job', 'deps', 'list', child.id]), `dependencies:\n  ${rel}\ndependents: none\n`);
  const context = await ok(['job', 'context', child.id]);
  t.regex(context, new RegExp(`^parent: +${root.id}  \\[ready\\]  P2  Root$`, 'm'));
  t.regex(context, /^effective_phase: +blocked \(job phase ready\)$/m);
  t.true(context.includes(`blocking:\n  ${rel}\n`), context);
  t.is(await ok(['job', 'tree', root.id]), `${root.id}  [ready]  P2  Root\n└── ${child.id}  [ready]  P2  Child\n`);
  const blocked = await svc(['job', 'claim', child.id]);
  t.is(blocked.code, 1);
  t.regex(blocked.stderr, new RegExp(`${blocker.id}.*\\(409\\)`));
  t.is(await ok(['job', 'deps', 'remove', child.id, blocker.id]), `Removed the relation between ${child.id} and ${blocker.id}.\n`);

  const claimed = await json(['job', 'claim', child.id]);
  t.like(claimed, { job: { id: child.id, phase: 'active' }, attempt: { attempt_number: 1, status: 'running' } });
  await recordUsage(child.id, claimed.attempt.id, claimed.attempt.lease_token, [{ model: 'claude-sonnet-4-5', input_tokens: 1000, output_tokens: 100 }]);
  t.like(await json(['job', 'release', child.id, '--attempt', claimed.attempt.id, '--token', claimed.attempt.lease_token]), { job: { phase: 'ready' } });
  const reclaimed = await ok(['job', 'claim', child.id]);
  t.regex(reclaimed, /^attempt:\n(.*\n)*  lease_token: +\S+$/m);
  const [, secondAttempt] = /^attempt:\n(?:.*\n)*?  id: +(\S+)$/m.exec(reclaimed) ?? [];
  const [, secondToken] = /^  lease_token: +(\S+)$/m.exec(reclaimed) ?? [];
  await recordUsage(child.id, secondAttempt, secondToken, [
    { model: 'gpt-5', input_tokens: 2000, output_tokens: 1000 },
    { model: 'acme-llm-7', input_tokens: 5, output_tokens: 5 },
  ]);
  t.like(await json(['job', 'submit', child.id, '--summary', 'Did it']), { phase: 'review' });
  t.regex(await ok(['job', 'approve', child.id, '--comment', 'ok']), /^phase: +done$/m);
  const attempts = (await ok(['job', 'attempts', child.id, '--project', project])).trimEnd().split('\n');
  t.regex(attempts[0], /^# +ID +STATUS +STARTED +ENDED +SUMMARY$/);
  t.deepEqual(
    attempts.slice(1).map((l) => l.split(/ +/).slice(0, 1)),
    [['2'], ['1']],
  );
  t.like(await json(['job', 'attempts', child.id, '1', '--project', project]), { attempt_number: 1, status: 'cancelled' });

  // --- receipts and compare -------------------------------------------------------------------------
  const latest = await json(['job', 'receipt', child.id]);
  t.like(latest, {
    attempt_id: secondAttempt,
    attempt_number: 2,
    status: 'succeeded',
    result_status: 'success',
    llm: { calls: 2, input_tokens: 2005, output_tokens: 1005 },
    cost: { base_cost_usd: 0.0125, pricing: 'partial', unpriced_models: ['acme-llm-7'] },
  });
  const human = await ok(['job', 'receipt', child.id]);
  t.regex(human, /^timing:\n  started_at: +\S+\n  ended_at: +\S+\n  billable_ms: +\d+$/m);
  t.regex(human, /^cost:\n  base_cost_usd: +0\.0125\n/m);
  t.regex(human, /^    gpt-5:\n      calls: +1$/m);
  t.like(await json(['job', 'receipt', child.id, '--attempt', claimed.attempt.id]), {
    attempt_number: 1,
    status: 'cancelled',
    cost: { base_cost_usd: 0.0045, pricing: 'priced' },
  });
  const compared = await json(['job', 'compare', child.id, '--a', '1', '--b', '2']);
  t.deepEqual(compared.differences.status, { a: 'cancelled', b: 'succeeded', changed: true });
  t.like(compared.differences.tokens, { a: { total_tokens: 1100 }, b: { total_tokens: 3010 }, changed: true, delta: { total_tokens: 1910 } });
  t.deepEqual(compared.differences.cost_usd, { a: 0.0045, b: 0.0125, changed: true, delta: 0.008 });
  t.false('receipt' in compared.a);
  const withReceipts = await json(['job', 'compare', child.id, '--a', '1', '--b', '2', '--include-receipt']);
  t.deepEqual(withReceipts.b.receipt, latest);
  t.regex(await ok(['job', 'compare', child.id, '--a', '2', '--b', '2']), /^  status:\n    a: +succeeded\n    b: +succeeded\n    changed: +false$/m);
  const noAttempt = await svc(['job', 'compare', child.id, '--a', '1', '--b', '9']);
  t.is(noAttempt.code, 1);
  t.is(noAttempt.stderr, `svc: attempt 9 (b) of job ${child.id} not found (404)\n`);
  const noReceipt = await svc(['job', 'receipt', root.id]);
  t.is(noReceipt.code, 1);
  t.is(noReceipt.stderr, `svc: job ${root.id} has no receipt yet (404)\n`);

  // --- cancel, errors -------------------------------------------------------------------------------
  const cancelled = await json(['job', 'cancel', first.id, '--reason', 'superseded']);
  t.like(cancelled, { id: first.id, phase: 'cancelled', close_reason: 'superseded' });
  t.truthy(cancelled.closed_at);
  t.regex(await ok(['job', 'cancel', second.id]), /^phase: +cancelled$/m);

  const missing = await svc(['job', 'get', 'webapp-00000000']);
  t.is(missing.code, 1);
  t.is(missing.stderr, 'svc: job webapp-00000000 not found (404)\n');
  const bad = await svc(['job', 'create', '--project', project, '--description', 'x', '--priority', '9']);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /^svc: "priority" must be less than or equal to 4 \(400\)\n$/);
});

test('svc job create takes --harness, --model, --harness-profile, --env and --resource-ref; list says why a job ended; svc harness list and show', async (t) => {
  t.timeout(120_000);
  const svc = (args: string[]) => runCli(home, args, { SVC_API_URL: server.url, SVC_TOKEN: token });
  const ok = async (args: string[]) => {
    const r = await svc(args);
    if (r.code !== 0) throw new Error(`svc ${args.join(' ')} → ${r.code}: ${r.stderr}`);
    return r.stdout;
  };
  const json = async (args: string[]) => JSON.parse(await ok([...args, '--json']));
  const org = (await json(['org', 'create', 'Flags E2E'])).id;
  const project = (await json(['project', 'create', 'Flags', '--org', org, '--slug', 'flagsx'])).id;

  const job = await json([
    'job',
    'create',
    '--project',
    project,
    '--description',
    'Use the flags',
    '--phase',
    'backlog',
    '--harness',
    'harness_b',
    '--model',
    'claude-sonnet-4-5',
    '--harness-profile',
    'careful',
    '--env',
    'staging',
    '--resource-ref',
    'org_docs:/guides/style.md',
    '--resource-ref',
    'org_docs:/a.md@v2',
  ]);
  const context = await json(['job', 'context', job.id]);
  const created = context.job ?? context;
  t.like(created, { env_name: 'staging' });
  t.deepEqual(
    (created.resource_refs ?? []).map((r: { uri: string }) => r.uri),
    ['org_docs:/guides/style.md', 'org_docs:/a.md@v2'],
  );
  t.like(created.harness, { harness: 'harness_b', model: 'claude-sonnet-4-5', harness_profile: 'careful' });

  await ok(['job', 'cancel', job.id, '--reason', 'superseded by the new login flow']);
  const other = await json(['job', 'create', '--project', project, '--description', 'Still open', '--phase', 'backlog']);
  const table = (await ok(['job', 'list', '--project', project])).trimEnd().split('\n');
  t.regex(table[0], /^ID +PHASE +PRI +TITLE +ENDED BECAUSE$/);
  t.true(
    table.some((line) => line.startsWith(job.id) && line.endsWith('superseded by the new login flow')),
    table.join('\n'),
  );
  t.true(
    table.some((line) => line.startsWith(other.id) && line.trimEnd().endsWith('Still open')),
    table.join('\n'),
  );

  const harnesses = (await ok(['harness', 'list', '--limit', '20'])).trimEnd().split('\n');
  t.regex(harnesses[0], /^NAME +ALIASES +AVAILABLE +DESCRIPTION$/);
  t.deepEqual(
    harnesses
      .slice(1)
      .map((l) => l.split(/ {2,}/)[0])
      .filter((n) => /^harness_[a-f]$/.test(n)),
    ['harness_a', 'harness_b', 'harness_c', 'harness_d', 'harness_e', 'harness_f'],
  );
  const coder = await ok(['harness', 'show', 'coder']);
  t.regex(coder, /^name: +harness_e$/m);
  t.regex(coder, /^available: +(yes|no): /m);
  t.notRegex(coder, /^default model:/m);
  t.regex(await ok(['harness', 'show', 'harness_d']), /^default model: +gpt-6\.2-sol \(when the job names none\)$/m);
  const unknown = await svc(['harness', 'show', 'zeta']);
  t.is(unknown.code, 1);
  t.regex(unknown.stderr, /^svc: unknown harness 'zeta' \(known: .*harness_a.*\) \(404\)\n$/);
});
