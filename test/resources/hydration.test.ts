import test from 'ava';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { call } from '../support/server.ts';
import { attemptsOf, finished, logLines, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

/**
 * The worker hydrates a job's resource_refs (org documents, job attachments) into .svc/resources/
 * with index.json, through a real worker running a real /bin/sh script, and reports it in
 * system.resource.hydration.* events.
 */
let w: WorkerWorld;
let otherProject = '';
let foreignJob = '';
let holder = '';
const BYTES = Buffer.concat([randomBytes(64), Buffer.from([0, 255, 10, 13])]);
const sha = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

test.before(async () => {
  w = await workerWorld('hydra');
  const docs = `/orgs/${w.orgId}/docs`;
  const doc = await w.api.post(docs, { path: '/guides/style.md', content: 'style v1' });
  if (doc.statusCode !== 201) throw new Error(JSON.stringify(doc.body));
  await call(w.srv.server, 'PUT', `${docs}/${doc.body.id}`, { content: 'style v2' }, w.token);
  otherProject = (await w.api.post('/projects', { org_id: w.orgId, name: 'other', slug: 'hydrb' })).body.id;
  await w.api.post(docs, { path: '/private/other.md', content: 'for the other project only', project_id: otherProject });
  // Jobs that hold attachments stay in the backlog: nothing runs them.
  holder = (await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'holds files', phase: 'backlog' })).body.id;
  const att = await w.api.post(`/jobs/${holder}/attachments`, {
    name: 'data.bin',
    content: BYTES.toString('base64'),
    encoding: 'base64',
    mime_type: 'application/x-test',
  });
  if (att.statusCode !== 201) throw new Error(JSON.stringify(att.body));
  const otherOrg = (await w.api.post('/orgs', { name: 'Hydra other org' })).body.id;
  const foreignProject = (await w.api.post('/projects', { org_id: otherOrg, name: 'foreign', slug: 'hydrc' })).body.id;
  foreignJob = (await w.api.post(`/projects/${foreignProject}/jobs`, { description: 'foreign files', phase: 'backlog' })).body.id;
  await w.api.post(`/jobs/${foreignJob}/attachments`, { name: 'secret.txt', content: 'not yours' });
});
test.after.always(() => w?.stop());

async function runScript(run: string, resource_refs?: unknown[]) {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'resources',
    hints: { step: { kind: 'script', script: { run } } },
    ...(resource_refs ? { resource_refs } : {}),
  });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const job = await finished(w, res.body.id);
  const [attempt] = await attemptsOf(w, job.id);
  return { job, attempt, lines: await logLines(w, job.id, attempt.id) };
}

const stdout = (lines: any[]) => lines.filter((l) => l.stream === 'stdout').map((l) => l.line);
const hydrationEvents = (jobId: string) =>
  w.srv.kernel
    .db('events')
    .where('type', 'like', 'system.resource.hydration.%')
    .whereRaw("payload_json->>'job_id' = ?", [jobId])
    .orderBy([{ column: 'created_at' }, { column: 'id' }])
    .select('type', 'source', 'project_id', 'payload_json');

test.serial('docs at a version and current, an attachment, and a missing optional ref: files, index.json and events', async (t) => {
  const refs = [
    { uri: 'org_docs:/guides/style.md@v1', label: 'old style', mount_path: 'style/old.md' },
    { uri: 'org_docs:/guides/style.md' },
    { uri: `job_attachments:/${holder}/data.bin`, label: 'data' },
    { uri: 'org_docs:/private/other.md', required: false },
  ];
  const run = [
    'set -e',
    `node -e 'console.log("INDEX " + JSON.stringify(require(process.env.SVC_RESOURCE_INDEX)))'`,
    'echo "old=$(cat .svc/resources/style/old.md)"',
    'echo "current=$(cat .svc/resources/org_docs/guides/style.md)"',
    `echo "data=$(sha256sum .svc/resources/job_attachments/${holder}/data.bin | cut -d' ' -f1)"`,
    'test ! -e .svc/resources/org_docs/private && echo "no private"',
  ].join('\n');
  const { job, attempt, lines } = await runScript(run, refs);
  t.is(job.phase, 'done', JSON.stringify(lines));
  const out = stdout(lines);
  t.true(out.includes('old=style v1'));
  t.true(out.includes('current=style v2'));
  t.true(out.includes(`data=${sha(BYTES).slice('sha256:'.length)}`));
  t.true(out.includes('no private'));
  t.true(lines.some((l) => l.stream === 'system' && l.line === 'resources: 3 hydrated into .svc/resources, 1 optional missing'));

  const index = JSON.parse(out.find((l) => l.startsWith('INDEX '))!.slice('INDEX '.length));
  const root = path.dirname(lines.find((l) => l.line.startsWith('workspace '))!.line.slice('workspace '.length) + '/.svc/resources/index.json');
  t.deepEqual(index.resources, [
    {
      uri: 'org_docs:/guides/style.md@v1',
      label: 'old style',
      required: true,
      status: 'resolved',
      kind: 'org_docs',
      path: path.join(root, 'style/old.md'),
      mount_path: 'style/old.md',
      version: 1,
      content_hash: sha('style v1'),
      mime_type: 'text/markdown',
      size_bytes: 8,
    },
    {
      uri: 'org_docs:/guides/style.md',
      label: null,
      required: true,
      status: 'resolved',
      kind: 'org_docs',
      path: path.join(root, 'org_docs/guides/style.md'),
      mount_path: 'org_docs/guides/style.md',
      version: 2,
      content_hash: sha('style v2'),
      mime_type: 'text/markdown',
      size_bytes: 8,
    },
    {
      uri: `job_attachments:/${holder}/data.bin`,
      label: 'data',
      required: true,
      status: 'resolved',
      kind: 'job_attachments',
      path: path.join(root, 'job_attachments', holder, 'data.bin'),
      mount_path: `job_attachments/${holder}/data.bin`,
      version: null,
      content_hash: sha(BYTES),
      mime_type: 'application/x-test',
      size_bytes: BYTES.length,
    },
    {
      uri: 'org_docs:/private/other.md',
      label: null,
      required: false,
      status: 'missing',
      kind: 'org_docs',
      path: null,
      mount_path: null,
      version: null,
      content_hash: null,
      mime_type: null,
      size_bytes: null,
      reason: 'no document at /private/other.md in the org',
    },
  ]);

  const events = await hydrationEvents(job.id);
  t.deepEqual(
    events.map((e: any) => [e.type, e.source, e.project_id]),
    [
      ['system.resource.hydration.started', 'system', w.projectId],
      ['system.resource.hydration.completed', 'system', w.projectId],
    ],
  );
  const [started, completed] = events.map((e: any) => e.payload_json);
  t.deepEqual(started, {
    job_id: job.id,
    attempt_id: attempt.id,
    resource_count: 4,
    resources: [
      { uri: refs[0].uri, label: 'old style', required: true, mount_path: 'style/old.md' },
      { uri: refs[1].uri, label: null, required: true, mount_path: null },
      { uri: refs[2].uri, label: 'data', required: true, mount_path: null },
      { uri: refs[3].uri, label: null, required: false, mount_path: null },
    ],
  });
  t.deepEqual(Object.keys(completed).sort(), ['attempt_id', 'job_id', 'missing_optional_count', 'resolved_count', 'resources']);
  t.like(completed, { job_id: job.id, attempt_id: attempt.id, resolved_count: 3, missing_optional_count: 1 });
  t.deepEqual(
    completed.resources,
    index.resources.map(({ path: _p, ...r }: any) => r),
    'the event lists what the index lists, without local paths',
  );
});

test.serial("missing required refs fail provisioning naming each uri (attachments of another org's job included); the script never runs", async (t) => {
  const refs = [
    { uri: 'org_docs:/guides/style.md' },
    { uri: 'org_docs:/guides/style.md@v9', mount_path: 'v9.md' },
    { uri: `job_attachments:/${foreignJob}/secret.txt` },
    { uri: 'org_docs:/nowhere.md', required: false },
  ];
  const { job, attempt, lines } = await runScript('echo never ran', refs);
  t.is(attempt.status, 'failed');
  t.is(
    attempt.error,
    `required resources missing: org_docs:/guides/style.md@v9 (no document at /guides/style.md with version 9 in the org); job_attachments:/${foreignJob}/secret.txt (no attachment "secret.txt" on job ${foreignJob} in this project)`,
  );
  t.false(stdout(lines).includes('never ran'));
  const events = await hydrationEvents(job.id);
  t.deepEqual(
    events.map((e: any) => e.type),
    ['system.resource.hydration.started', 'system.resource.hydration.failed'],
  );
  const failed = events[1].payload_json;
  t.deepEqual(Object.keys(failed).sort(), ['attempt_id', 'failed_required_count', 'job_id', 'resolved_count', 'resources']);
  t.like(failed, { job_id: job.id, attempt_id: attempt.id, resolved_count: 1, failed_required_count: 2 });
  t.deepEqual(
    failed.resources.map((r: any) => [r.uri, r.status, r.required]),
    refs.map((r) => [r.uri, r.uri.endsWith('style.md') ? 'resolved' : 'missing', r.required !== false]),
  );
  t.false(JSON.stringify(failed).includes('not yours'));
});

test.serial('two refs that would land on the same file fail naming both; a mount_path separates them', async (t) => {
  const clash = await runScript('echo never', [{ uri: 'org_docs:/guides/style.md@v1' }, { uri: 'org_docs:/guides/style.md' }]);
  t.is(
    clash.attempt.error,
    'required resource missing: org_docs:/guides/style.md (it would be written at org_docs/guides/style.md, where org_docs:/guides/style.md@v1 is: give one of them a mount_path)',
  );
  const apart = await runScript('cat .svc/resources/v1.md .svc/resources/org_docs/guides/style.md', [
    { uri: 'org_docs:/guides/style.md@v1', mount_path: './v1.md' },
    { uri: 'org_docs:/guides/style.md' },
  ]);
  t.is(apart.job.phase, 'done');
  t.deepEqual(stdout(apart.lines), ['style v1style v2']);
});

test.serial('a job without resource_refs gets an empty index and no hydration events', async (t) => {
  const { job, lines } = await runScript('cat "$SVC_RESOURCE_INDEX"');
  t.is(job.phase, 'done');
  t.deepEqual(stdout(lines), ['{', '  "resources": []', '}']);
  t.deepEqual(await hydrationEvents(job.id), []);
});

test.serial('resource_refs are validated at job create: 400 naming the field', async (t) => {
  const cases: [unknown, RegExp][] = [
    [{ uri: 'http://x' }, /"resource_refs\[0\]\.uri" must be org_docs:\/<path>\[@v<N>\] or job_attachments:\/<job_id>\/<name>/],
    [{ uri: 'org_docs:/a/../b.md' }, /"resource_refs\[0\]\.uri" document path must not have "\." or "\.\." segments/],
    [{ uri: 'org_docs:/a.md@v0' }, /"resource_refs\[0\]\.uri" version must be @v1 or later/],
    [{ uri: 'job_attachments:/nojob/x' }, /"resource_refs\[0\]\.uri" must be job_attachments|"nojob" is not a job id/],
    [{ uri: `job_attachments:/${holder}/a/b` }, /"resource_refs\[0\]\.uri" attachment name must not contain "\/"/],
    [{ uri: 'org_docs:/a.md', mount_path: '../out' }, /"resource_refs\[0\]\.mount_path" must not contain "\.\." segments/],
    [{ uri: 'org_docs:/a.md', mount_path: '/etc/passwd' }, /"resource_refs\[0\]\.mount_path" must be relative/],
    [{ uri: 'org_docs:/a.md', mount_path: 'index.json' }, /"resource_refs\[0\]\.mount_path" must not be index\.json/],
    [{ label: 'x' }, /"resource_refs\[0\]\.uri" is required/],
  ];
  for (const [ref, message] of cases) {
    const res = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'bad ref', phase: 'backlog', resource_refs: [ref] });
    t.is(res.statusCode, 400, JSON.stringify(res.body));
    t.regex(res.body.message, message);
  }
});
