import test from 'ava';
import { attemptsOf, finished, logLines, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

/**
 * End to end with the real worker (every role in one server, real processes, a file:// repository):
 * a child job of a parent with a `coord:job:<parent>` thread finds the thread in
 * `.svc/coordination-inbox.md`, answers in it with its job token, and its completion posts a status.
 */
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('thrwork');
});
test.after.always(() => w?.stop());

const threads = () => `/projects/${w.projectId}/threads`;
const stdout = (lines: any[]) => lines.filter((l) => l.stream === 'stdout').map((l) => l.line);

async function runScript(run: string, extra: Record<string, unknown> = {}) {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'coordinated work',
    hints: { step: { kind: 'script', script: { run } } },
    ...extra,
  });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const job = await finished(w, res.body.id);
  const [attempt] = await attemptsOf(w, job.id);
  return { job, attempt, lines: await logLines(w, job.id, attempt.id) };
}

async function post(threadId: string, body: Record<string, unknown>) {
  const res = await w.api.post(`${threads()}/${threadId}/messages`, body);
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return res.body;
}

// The agent's side: read its inbox, then answer the open question in the thread with its own token.
const AGENT = [
  'cat .svc/coordination-inbox.md',
  'echo "--- end of inbox"',
  `node -e "
    const id = process.argv[1], q = process.argv[2];
    fetch(process.env.SVC_API_URL + '/projects/' + process.env.SVC_PROJECT_ID + '/threads/' + id + '/messages', {
      method: 'POST', headers: { authorization: 'Bearer ' + process.env.SVC_JOB_TOKEN, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'update', body: 'answering: use main', reply_to: q }),
    }).then((r) => console.log('answered', r.status));
  " "$THREAD" "$QUESTION"`,
  `printf '%s\\n' '\`\`\`json-result' '{"svc":{"status":"success","summary":"followed the directive"}}' '\`\`\`'`,
].join('\n');

test.serial("a child job sees its parent's coordination thread in its inbox, answers in it, and its completion posts a status", async (t) => {
  const parent = (await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'lead the team', phase: 'backlog' })).body;
  const thread = (await w.api.post(threads(), { key: `coord:job:${parent.id}`, title: 'Team chat' })).body;
  const directive = await post(thread.id, { kind: 'directive', body: 'Keep the public API unchanged.\nAsk before touching the schema.' });
  const answered = await post(thread.id, { kind: 'question', body: 'Who owns the docs?' });
  await post(thread.id, { kind: 'update', body: 'I do.', reply_to: answered.id });
  const open = await post(thread.id, { kind: 'question', body: 'Which branch do we target?' });

  const { job, attempt, lines } = await runScript(AGENT, {
    parent_id: parent.id,
    title: 'Child work',
    env_overrides: { THREAD: thread.id, QUESTION: open.id },
  });
  t.is(job.phase, 'done', JSON.stringify(lines));
  const out = stdout(lines);
  const inbox = out.slice(0, out.indexOf('--- end of inbox')).join('\n');
  t.true(inbox.startsWith('# Coordination inbox\n'), inbox);
  t.true(inbox.includes(`Thread: \`coord:job:${parent.id}\` (${thread.id}): Team chat`), inbox);
  t.true(inbox.includes(`Regenerated at the start of attempt 1 of job ${job.id}. Messages: 4.`), inbox);
  t.true(inbox.includes(`POST $SVC_API_URL/projects/${w.projectId}/threads/${thread.id}/messages`), inbox);
  const section = (name: string) => inbox.split(`## ${name}\n`)[1].split('\n## ')[0];
  t.regex(
    section('Directives'),
    new RegExp(`^\\n- \\*\\*DIRECTIVE\\*\\* #1 \\(${directive.id}\\) from user usr_\\w+, \\S+: Keep the public API unchanged\\.\\n`),
  );
  const questions = section('Open questions');
  t.true(questions.includes(`- **QUESTION** #4 (${open.id})`), questions);
  t.true(questions.includes('Which branch do we target?'));
  t.false(questions.includes('Who owns the docs?'), 'an answered question is not open');
  const messages = section('Messages');
  t.deepEqual(
    [...messages.matchAll(/^### #(\d) (\w+) from /gm)].map((m) => `${m[1]} ${m[2]}`),
    ['1 DIRECTIVE', '2 QUESTION', '3 UPDATE', '4 QUESTION'],
  );
  t.true(messages.includes('> Keep the public API unchanged.\n> Ask before touching the schema.'), 'bodies are quoted whole');
  t.regex(messages, /### #3 UPDATE from user usr_\w+, answering #2, /);
  t.true(out.includes('answered 201'), 'the job token posts to its coordination thread');
  t.true(lines.some((l) => l.stream === 'system' && l.line === 'coordination inbox .svc/coordination-inbox.md: 4 message(s)'));

  const all = (await w.api.get(`${threads()}/${thread.id}/messages`)).body.data;
  t.deepEqual(
    all.map((m: any) => m.kind),
    ['directive', 'question', 'update', 'question', 'update', 'status'],
  );
  t.like(all[4], { author_type: 'job', author_id: job.id, job_id: job.id, reply_to: open.id, body: 'answering: use main' });
  t.like(all[5], {
    kind: 'status',
    author_id: job.id,
    body: `Attempt 1 of job ${job.id} (Child work) succeeded: followed the directive`,
    metadata: { attempt_id: attempt.id, attempt_number: 1, status: 'succeeded', result_status: 'success' },
  });
  const events = (await w.api.get(`/projects/${w.projectId}/events?type=system.job.attempt.completed&limit=100`)).body.data;
  t.is(events.find((e: any) => e.payload_json.attempt_id === attempt.id).payload_json.thread_id, thread.id);
});

test.serial('a job naming a thread in hints.coordination.thread_id gets that thread as its inbox; its failure is posted with the reason', async (t) => {
  const thread = (await w.api.post(threads(), { title: 'Ops room' })).body;
  await post(thread.id, { body: 'deploys are frozen today' });
  const { job, attempt, lines } = await runScript('cat .svc/coordination-inbox.md; exit 3', {
    title: 'Deploy',
    hints: { step: { kind: 'script', script: { run: 'cat .svc/coordination-inbox.md; exit 3' } }, coordination: { thread_id: thread.id }, max_attempts: 1 },
  });
  t.is(attempt.status, 'failed');
  const out = stdout(lines).join('\n');
  t.true(out.includes(`Thread: (no key) (${thread.id}): Ops room`), out);
  t.regex(out, /### #1 MESSAGE from user usr_\w+, \S+\n\nMessage id: msg_\w+\n\n> deploys are frozen today/);
  t.true(out.includes('## Directives\n\nNone.'));
  const [status] = (await w.api.get(`${threads()}/${thread.id}/messages?kind=status`)).body.data;
  t.is(status.metadata.attempt_id, attempt.id);
  t.regex(status.body, new RegExp(`^Attempt 1 of job ${job.id.replace('.', '\\.')} \\(Deploy\\) failed: `));
});

test.serial('a job with no coordination thread gets no inbox file, and a child of a parent without one neither', async (t) => {
  const probe = 'if [ -e .svc/coordination-inbox.md ]; then echo inbox-present; else echo inbox-absent; fi';
  const root = await runScript(probe);
  t.true(stdout(root.lines).includes('inbox-absent'), JSON.stringify(root.lines));
  const parent = (await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'no team chat', phase: 'backlog' })).body;
  const child = await runScript(probe, { parent_id: parent.id });
  t.true(stdout(child.lines).includes('inbox-absent'));
  t.false(child.lines.some((l) => l.line.startsWith('coordination inbox')));
  t.is(Number((await w.srv.kernel.db('thread_messages').where({ job_id: child.job.id }).count({ n: '*' }).first())!.n), 0);
});
