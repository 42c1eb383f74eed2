import test from 'ava';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import { JOB_TOKEN_PERMISSIONS } from '../../plugins/worker/env.ts';
import { as } from '../support/server.ts';
import { assertError, ISO, PAGINATION_FIELDS, rows } from '../orgs/helpers.ts';
import { claimed, claimWorld, complete, newJob, type World } from '../jobs/claim-helpers.ts';

/** The thread routes through the HTTP surface: shapes, key idempotency, messages, access, and the coordination hint and status post. */
let w: World;
test.before(async () => {
  w = await claimWorld('thr');
});
test.after.always(() => w?.ctx.srv.stop());

const THREAD_FIELDS = [
  'coordination',
  'created_at',
  'created_by',
  'created_by_type',
  'id',
  'job_id',
  'key',
  'last_message_at',
  'message_count',
  'project_id',
  'title',
  'updated_at',
];
const MESSAGE_FIELDS = ['author_id', 'author_type', 'body', 'created_at', 'id', 'job_id', 'kind', 'metadata', 'reply_to', 'seq', 'thread_id'];
const THREAD_ID = /^thr_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const MESSAGE_ID = /^msg_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const MISSING_THREAD = 'thr_01h455vb4pex5vsknk084sn02q';

const threads = (project = w.projectA) => `/projects/${project}/threads`;
const api = () => w.owner.api;

async function newThread(body: Record<string, unknown> = {}, project = w.projectA): Promise<any> {
  const res = await api().post(threads(project), body);
  if (res.statusCode !== 201) throw new Error(`thread: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

test('POST creates a thread (201) with its full shape; GET reads it back', async (t) => {
  const res = await api().post(threads(), { title: 'Release planning' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), THREAD_FIELDS);
  t.regex(res.body.id, THREAD_ID);
  t.like(res.body, {
    project_id: w.projectA,
    key: null,
    title: 'Release planning',
    coordination: false,
    job_id: null,
    created_by_type: 'user',
    created_by: w.owner.id,
    message_count: 0,
    last_message_at: null,
  });
  t.regex(res.body.created_at, ISO);
  const read = await api().get(`${threads()}/${res.body.id}`);
  t.is(read.statusCode, 200);
  t.deepEqual(read.body, res.body);
});

test('a key makes POST idempotent: 201 then 200 with the same thread; ensure answers 200; another title is 409', async (t) => {
  const first = await api().post(threads(), { key: 'design-review', title: 'Design review' });
  t.is(first.statusCode, 201);
  const again = await api().post(threads(), { key: 'design-review', title: 'Design review' });
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, first.body);
  const untitled = await api().post(threads(), { key: 'design-review' });
  t.is(untitled.statusCode, 200, 'no title: the existing thread whatever its title');
  t.is(untitled.body.id, first.body.id);
  const ensured = await api().post(`${threads()}/ensure`, { key: 'design-review' });
  t.is(ensured.statusCode, 200);
  t.is(ensured.body.id, first.body.id);
  const fresh = await api().post(`${threads()}/ensure`, { key: 'ensured-new' });
  t.is(fresh.statusCode, 200);
  t.is(fresh.body.key, 'ensured-new');
  assertError(
    t,
    await api().post(threads(), { key: 'design-review', title: 'Other' }),
    409,
    /^thread design-review already exists with another title \("Design review"\)/,
  );
  assertError(t, await api().post(`${threads()}/ensure`, {}), 400, /"key" is required/);
  t.is(await rows(w.ctx, 'threads', { project_id: w.projectA, key: 'design-review' }), 1);
  const other = await api().post(threads(w.projectA2), { key: 'design-review' });
  t.is(other.statusCode, 201, 'keys are unique per project, not across projects');
  t.not(other.body.id, first.body.id);
});

test('concurrent POSTs with one key make one thread', async (t) => {
  const replies = await Promise.all(Array.from({ length: 8 }, () => api().post(threads(), { key: 'race' })));
  t.deepEqual(replies.map((r) => r.statusCode).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
  t.is(new Set(replies.map((r) => r.body.id)).size, 1);
});

test('coordination keys: coord:job:<job_id> of a job of the project, marked as coordination with its job; others are 400 or 422', async (t) => {
  const parent = await newJob(w);
  const res = await api().post(threads(), { key: `coord:job:${parent.id}` });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.like(res.body, { coordination: true, job_id: parent.id, title: `Coordination of the team of job ${parent.id}` });
  assertError(t, await api().post(threads(), { key: 'coord:team:x' }), 400, '"key" starting with coord: must be coord:job:<job_id>');
  assertError(t, await api().post(threads(), { key: 'has space' }), 400, /"key" with value "has space" fails to match the no whitespace pattern/);
  const foreign = await newJob(w, {}, w.projectA2);
  assertError(t, await api().post(threads(), { key: `coord:job:${foreign.id}` }), 422, `key: job ${foreign.id} is not a job of project ${w.projectA}`);
  assertError(t, await api().post(threads(), { title: '' }), 400, /"title" is not allowed to be empty/);
  assertError(t, await api().post(threads(), { owner: 'x' }), 400, '"owner" is not allowed');
  const byJob = await api().get(`${threads()}?job_id=${parent.id}`);
  t.deepEqual(
    byJob.body.data.map((x: any) => x.id),
    [res.body.id],
  );
});

test('the list is newest first, paginated, filterable by key', async (t) => {
  const project = (await api().post('/projects', { org_id: (await api().get(`/projects/${w.projectA}`)).body.org_id, name: 'List', slug: 'thrlist' })).body.id;
  const made = [];
  for (let i = 0; i < 3; i++) made.push(await newThread({ key: `k${i}` }, project));
  const page1 = await api().get(`${threads(project)}?limit=2`);
  t.is(page1.statusCode, 200);
  t.deepEqual(Object.keys(page1.body.pagination).sort(), PAGINATION_FIELDS);
  t.deepEqual(
    page1.body.data.map((x: any) => x.key),
    ['k2', 'k1'],
  );
  t.like(page1.body.pagination, { limit: 2, offset: 0, count: 2, total: 3, has_more: true });
  const page2 = await api().get(`${threads(project)}?limit=2&offset=2`);
  t.deepEqual(
    page2.body.data.map((x: any) => x.key),
    ['k0'],
  );
  t.like(page2.body.pagination, { count: 1, total: 3, has_more: false });
  const byKey = await api().get(`${threads(project)}?key=k1`);
  t.deepEqual(
    byKey.body.data.map((x: any) => x.id),
    [made[1].id],
  );
  t.is((await api().get(`${threads(project)}?key=nope`)).body.pagination.total, 0);
  assertError(t, await api().get(`${threads(project)}?limit=0`), 400, /"limit" must be greater than or equal to 1/);
  assertError(t, await api().get(`${threads(project)}?include_deleted=true`), 400, '"include_deleted" is not allowed');
});

test('messages: numbered per thread, default kinds, replies, the after cursor and kind filter', async (t) => {
  const thread = await newThread({ title: 'chat' });
  const url = `${threads()}/${thread.id}/messages`;
  const first = await api().post(url, { body: 'hello' });
  t.is(first.statusCode, 201, JSON.stringify(first.body));
  t.deepEqual(Object.keys(first.body).sort(), MESSAGE_FIELDS);
  t.regex(first.body.id, MESSAGE_ID);
  t.like(first.body, {
    thread_id: thread.id,
    seq: 1,
    kind: 'message',
    body: 'hello',
    author_type: 'user',
    author_id: w.owner.id,
    job_id: null,
    reply_to: null,
    metadata: {},
  });
  const question = (await api().post(url, { kind: 'question', body: 'which branch?' })).body;
  const answer = await api().post(url, { kind: 'update', body: 'main', reply_to: question.id, metadata: { source: 'test' } });
  t.like(answer.body, { seq: 3, reply_to: question.id, metadata: { source: 'test' } });

  const all = await api().get(url);
  t.deepEqual(
    all.body.data.map((m: any) => [m.seq, m.kind]),
    [
      [1, 'message'],
      [2, 'question'],
      [3, 'update'],
    ],
  );
  t.like(all.body.pagination, { limit: 50, offset: 0, count: 3, total: 3, has_more: false });
  const after = await api().get(`${url}?after=1&limit=1`);
  t.deepEqual(
    after.body.data.map((m: any) => m.seq),
    [2],
  );
  t.like(after.body.pagination, { count: 1, total: 2, has_more: true });
  t.deepEqual((await api().get(`${url}?after=3`)).body.data, []);
  t.deepEqual(
    (await api().get(`${url}?kind=question`)).body.data.map((m: any) => m.id),
    [question.id],
  );

  const read = (await api().get(`${threads()}/${thread.id}`)).body;
  t.is(read.message_count, 3);
  t.regex(read.last_message_at, ISO);
});

test('concurrent posts get seq 1..n without gaps or repeats', async (t) => {
  const thread = await newThread();
  const url = `${threads()}/${thread.id}/messages`;
  const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => api().post(url, { body: `m${i}` })));
  t.true(replies.every((r) => r.statusCode === 201));
  t.deepEqual(
    replies.map((r) => r.body.seq).sort((a, b) => a - b),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
});

test('message input: 400 for bad fields, 422 for references outside the thread or project, coordination kinds only on coordination threads', async (t) => {
  const thread = await newThread();
  const url = `${threads()}/${thread.id}/messages`;
  assertError(t, await api().post(url, {}), 400, '"body" is required');
  assertError(t, await api().post(url, { body: '   ' }), 400, '"body" is not allowed to be empty');
  assertError(t, await api().post(url, { body: 'x', kind: 'shout' }), 400, '"kind" must be one of [message, status, directive, question, update]');
  assertError(t, await api().post(url, { body: 'x', reply_to: 'nope' }), 400, /"reply_to" with value "nope" fails to match/);
  assertError(t, await api().get(`${url}?after=-1`), 400, '"after" must be greater than or equal to 0');
  const elsewhere = await newThread();
  const foreignMessage = (await api().post(`${threads()}/${elsewhere.id}/messages`, { body: 'there' })).body;
  assertError(
    t,
    await api().post(url, { body: 'x', reply_to: foreignMessage.id }),
    422,
    `reply_to: message ${foreignMessage.id} is not a message of thread ${thread.id}`,
  );
  const foreignJob = await newJob(w, {}, w.projectA2);
  assertError(t, await api().post(url, { body: 'x', job_id: foreignJob.id }), 422, `job_id: job ${foreignJob.id} is not a job of project ${w.projectA}`);

  const parent = await newJob(w);
  const coord = await newThread({ key: `coord:job:${parent.id}` });
  const coordUrl = `${threads()}/${coord.id}/messages`;
  assertError(
    t,
    await api().post(coordUrl, { body: 'hi', kind: 'message' }),
    422,
    `kind message is not used on coordination thread ${coord.id}: post a status, directive, question or update`,
  );
  const plain = await api().post(coordUrl, { body: 'progress' });
  t.is(plain.body.kind, 'update', 'update is the default kind of a coordination thread');
  t.is(await rows(w.ctx, 'thread_messages', { thread_id: thread.id }), 0, 'nothing was written by the refused posts');
});

test('tenant isolation: other orgs and other projects see 404; unknown and malformed ids are 404 and 400', async (t) => {
  const thread = await newThread({ key: 'private' });
  const outsider = w.outsider.api;
  assertError(t, await outsider.get(threads()), 404, `project ${w.projectA} not found`);
  assertError(t, await outsider.post(threads(), { key: 'x' }), 404, `project ${w.projectA} not found`);
  assertError(t, await outsider.get(`${threads()}/${thread.id}`), 404, `project ${w.projectA} not found`);
  assertError(t, await outsider.post(`${threads()}/${thread.id}/messages`, { body: 'x' }), 404, `project ${w.projectA} not found`);
  // The outsider's own project does not reach another org's thread by id.
  assertError(t, await outsider.get(`${threads(w.projectB)}/${thread.id}`), 404, `thread ${thread.id} not found`);
  assertError(t, await outsider.get(`${threads(w.projectB)}/${thread.id}/messages`), 404, `thread ${thread.id} not found`);
  assertError(t, await outsider.post(`${threads(w.projectB)}/${thread.id}/messages`, { body: 'x' }), 404, `thread ${thread.id} not found`);
  // Nor does a sibling project of the same org.
  assertError(t, await api().get(`${threads(w.projectA2)}/${thread.id}`), 404, `thread ${thread.id} not found`);
  assertError(t, await api().get(`${threads()}/${MISSING_THREAD}`), 404, `thread ${MISSING_THREAD} not found`);
  assertError(t, await api().get(`${threads()}/thr_nope`), 400, /"thread_id" with value "thr_nope" fails to match the thr_<base32> id pattern/);
  t.is((await outsider.get(`${threads(w.projectB)}?key=private`)).body.pagination.total, 0);
  t.is(await rows(w.ctx, 'thread_messages', { thread_id: thread.id }), 0);
});

test('a deleted project keeps its threads readable and refuses new threads and messages (422)', async (t) => {
  const org = (await api().get(`/projects/${w.projectA}`)).body.org_id;
  const project = (await api().post('/projects', { org_id: org, name: 'Gone', slug: 'thrgone' })).body.id;
  const thread = await newThread({}, project);
  t.is((await api().patch(`/projects/${project}`, { deleted: true })).statusCode, 200);
  assertError(t, await api().post(threads(project), {}), 422, `project ${project} is deleted`);
  assertError(t, await api().post(`${threads(project)}/${thread.id}/messages`, { body: 'x' }), 422, `project ${project} is deleted`);
  t.is((await api().get(`${threads(project)}/${thread.id}`)).statusCode, 200);
});

test('permissions: threads:read to read, chat:write to create and post (403 naming it)', async (t) => {
  const org = (await api().get(`/projects/${w.projectA}`)).body.org_id;
  const sa = (await api().post(`/orgs/${org}/service-accounts`, { name: 'thr-reader', role: 'admin' })).body;
  const reader = as(w.ctx.srv.server, (await api().post(`/orgs/${org}/service-accounts/${sa.id}/tokens`, { permissions: ['threads:read'] })).body.token);
  const thread = await newThread();
  t.is((await reader.get(`${threads()}/${thread.id}/messages`)).statusCode, 200);
  assertError(t, await reader.post(`${threads()}/${thread.id}/messages`, { body: 'x' }), 403, 'missing permission chat:write');
  assertError(t, await reader.post(threads(), {}), 403, 'missing permission chat:write');
  const writer = as(w.ctx.srv.server, (await api().post(`/orgs/${org}/service-accounts/${sa.id}/tokens`, { permissions: ['chat:write'] })).body.token);
  assertError(t, await writer.get(threads()), 403, 'missing permission threads:read');
  const posted = await writer.post(`${threads()}/${thread.id}/messages`, { body: 'from a bot' });
  t.like(posted.body, { author_type: 'service_account', author_id: sa.id });
});

test("a job's token reads and posts to threads of its project (as its job), and reaches no other project", async (t) => {
  const job = await newJob(w);
  const { attempt } = await claimed(t, w, job.id);
  const org = (await api().get(`/projects/${w.projectA}`)).body.org_id;
  const { token } = await w.ctx.srv.kernel.container.resolve(MachineTokens).signJobToken({
    jobId: job.id,
    attemptId: attempt.id,
    projectId: w.projectA,
    orgId: org,
    permissions: [...JOB_TOKEN_PERMISSIONS],
    ttlSeconds: 600,
  });
  const agent = as(w.ctx.srv.server, token);
  const parent = await newJob(w);
  const coord = await newThread({ key: `coord:job:${parent.id}` });
  t.is((await agent.get(`${threads()}?key=coord:job:${parent.id}`)).body.data[0].id, coord.id);
  const posted = await agent.post(`${threads()}/${coord.id}/messages`, { kind: 'question', body: 'may I change the schema?' });
  t.is(posted.statusCode, 201, JSON.stringify(posted.body));
  t.like(posted.body, { author_type: 'job', author_id: job.id, job_id: job.id, kind: 'question' });
  const own = await agent.post(threads(), { key: 'agent-notes' });
  t.like(own.body, { created_by_type: 'job', created_by: job.id });
  assertError(t, await agent.get(threads(w.projectA2)), 404, `project ${w.projectA2} not found`);
  assertError(t, await agent.post(`${threads(w.projectA2)}/${coord.id}/messages`, { body: 'x' }), 404, `project ${w.projectA2} not found`);
  await complete(w, job.id, attempt, { status: 'success' });
});

test("hints.coordination.thread_id must name a thread of the job's project (422 naming the field) at create and on PATCH", async (t) => {
  const foreignThread = await newThread({}, w.projectA2);
  assertError(
    t,
    await api().post(`/projects/${w.projectA}/jobs`, { description: 'x', hints: { coordination: { thread_id: foreignThread.id } } }),
    422,
    `hints.coordination.thread_id: "${foreignThread.id}" is not a thread of project ${w.projectA}`,
  );
  assertError(
    t,
    await api().post(`/projects/${w.projectA}/jobs`, { description: 'x', hints: { coordination: { thread_id: MISSING_THREAD } } }),
    422,
    `hints.coordination.thread_id: "${MISSING_THREAD}" is not a thread of project ${w.projectA}`,
  );
  assertError(
    t,
    await api().post(`/projects/${w.projectA}/jobs`, { description: 'x', hints: { coordination: { thread_id: 5 } } }),
    400,
    /"hints.coordination.thread_id" must be a string/,
  );
  const thread = await newThread();
  const job = await newJob(w, { hints: { coordination: { thread_id: thread.id } } });
  t.is(job.hints.coordination.thread_id, thread.id);
  assertError(
    t,
    await api().patch(`/jobs/${job.id}`, { hints: { coordination: { thread_id: foreignThread.id } } }),
    422,
    `hints.coordination.thread_id: "${foreignThread.id}" is not a thread of project ${w.projectA}`,
  );
  t.is((await api().get(`/jobs/${job.id}`)).body.hints.coordination.thread_id, thread.id, 'the refused PATCH changed nothing');
});

const statusMessages = async (threadId: string, project = w.projectA) => (await api().get(`${threads(project)}/${threadId}/messages?kind=status`)).body.data;

const completedEvent = async (jobId: string) => {
  const events = (await api().get(`/projects/${w.projectA}/events?type=system.job.attempt.completed&limit=100`)).body.data;
  return events.find((e: any) => e.payload_json.job_id === jobId);
};

test("an attempt completed through the REST claim API posts one status to the parent's coordination thread, and the event names it", async (t) => {
  const parent = await newJob(w, { phase: 'backlog' });
  const coord = await newThread({ key: `coord:job:${parent.id}` });
  const child = await newJob(w, { parent_id: parent.id, title: 'Write the migration' });
  const { attempt } = await claimed(t, w, child.id);
  const done = await complete(w, child.id, attempt, { status: 'success', summary: 'migration 018 written' });
  t.is(done.statusCode, 200, JSON.stringify(done.body));
  const [status] = await statusMessages(coord.id);
  t.like(status, {
    kind: 'status',
    author_type: 'job',
    author_id: child.id,
    job_id: child.id,
    body: `Attempt 1 of job ${child.id} (Write the migration) succeeded: migration 018 written`,
    metadata: { attempt_id: attempt.id, attempt_number: 1, status: 'succeeded', result_status: 'success', summary: 'migration 018 written', reason: null },
  });
  t.is((await statusMessages(coord.id)).length, 1, 'exactly one status per attempt');
  const event = await completedEvent(child.id);
  t.is(event.payload_json.thread_id, coord.id);
});

test('a failed attempt posts its reason; a job with a thread hint posts there; a job with no thread posts nowhere', async (t) => {
  const thread = await newThread({ title: 'ops' });
  const hinted = await newJob(w, { title: 'Flaky deploy', hints: { coordination: { thread_id: thread.id }, max_attempts: 1 } });
  const { attempt } = await claimed(t, w, hinted.id);
  await complete(w, hinted.id, attempt, { status: 'failed', reason: 'tests failed', summary: 'partial' });
  const [status] = await statusMessages(thread.id);
  t.is(status.body, `Attempt 1 of job ${hinted.id} (Flaky deploy) failed: tests failed`);
  t.like(status.metadata, { status: 'failed', result_status: 'failed', reason: 'tests failed', summary: 'partial' });
  t.is((await completedEvent(hinted.id)).payload_json.thread_id, thread.id);

  const lonely = await newJob(w);
  const second = await claimed(t, w, lonely.id);
  await complete(w, lonely.id, second.attempt, { status: 'success' });
  t.is(await rows(w.ctx, 'thread_messages', { job_id: lonely.id }), 0);
  t.is((await completedEvent(lonely.id)).payload_json.thread_id, null);
});
