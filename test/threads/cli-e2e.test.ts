/**
 * End to end: `svc thread list | create | show | post` (node dist/cli/bin.js, a subprocess) against a
 * real server and database.
 */
import test from 'ava';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cliUser, tempHome } from '../cli/helpers.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let home = '';
let token = '';
let project = '';
let parentJob = '';

const { svc, ok, json } = cliUser(() => ({ home, url: server.url, token }));

test.before(async () => {
  server = await startTestServer();
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  const org = (await json(['org', 'create', 'Threads CLI'])).id;
  project = (await json(['project', 'create', 'Team', '--org', org, '--slug', 'thrcli'])).id;
  parentJob = (await as(server.server, token).post(`/projects/${project}/jobs`, { description: 'lead', phase: 'backlog' })).body.id;
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('thread create (idempotent by key, --coord), post (text, --file, kinds, replies), show, list', async (t) => {
  const created = await ok(['thread', 'create', '--project', project, '--coord', parentJob, '--title', 'Team chat']);
  t.regex(created, new RegExp(`^key: +coord:job:${parentJob}$`, 'm'));
  t.regex(created, /^coordination: +true$/m);
  const id = /^id: +(thr_\w+)$/m.exec(created)![1];
  const again = await json(['thread', 'create', '--project', project, '--key', `coord:job:${parentJob}`]);
  t.is(again.id, id, 'the same key gives the same thread');

  const directive = await json(['thread', 'post', id, 'Ship by Friday.', '--project', project, '--kind', 'directive']);
  t.like(directive, { seq: 1, kind: 'directive', body: 'Ship by Friday.' });
  const question = await json(['thread', 'post', id, 'Which region?', '--project', project, '--kind', 'question']);
  await writeFile(join(home, 'answer.txt'), 'eu-west\nand us-east later\n');
  const answer = await ok([
    'thread',
    'post',
    id,
    '--file',
    join(home, 'answer.txt'),
    '--project',
    project,
    '--reply-to',
    question.id,
    '--metadata',
    '{"ticket":7}',
  ]);
  t.regex(answer, new RegExp(`^#3 UPDATE user usr_\\w+ \\S+ \\(reply to ${question.id}\\)  msg_\\w+\\n {4}eu-west\\n {4}and us-east later\n$`));

  const shown = await ok(['thread', 'show', id, '--project', project]);
  t.regex(shown, /^message_count: +3$/m);
  t.deepEqual(
    [...shown.matchAll(/^#(\d) (\w+) /gm)].map((m) => `${m[1]} ${m[2]}`),
    ['1 DIRECTIVE', '2 QUESTION', '3 UPDATE'],
  );
  t.regex(shown, /^ {4}Ship by Friday\.$/m);
  const after = await json(['thread', 'show', id, '--project', project, '--after', '2']);
  t.deepEqual(
    after.messages.data.map((m: { seq: number }) => m.seq),
    [3],
  );
  t.is(after.thread.id, id);
  const paged = await ok(['thread', 'show', id, '--project', project, '--limit', '1']);
  t.regex(paged, new RegExp(`^More messages: svc thread show ${id} --after 1$`, 'm'));

  await ok(['thread', 'create', '--project', project, '--key', 'notes', '--title', 'Notes']);
  const table = (await ok(['thread', 'list', '--project', project])).trimEnd().split('\n');
  t.regex(table[0], /^ID +KEY +TITLE +MESSAGES +LAST MESSAGE +CREATED$/);
  t.deepEqual(
    table.slice(1).map((l) => l.split(/ {2,}/)[1]),
    ['notes', `coord:job:${parentJob}`],
  );
  const byJob = await json(['thread', 'list', '--project', project, '--job', parentJob]);
  t.deepEqual(
    byJob.data.map((x: { id: string }) => x.id),
    [id],
  );
});

test.serial('thread: usage errors exit 2, API errors exit 1 with the message', async (t) => {
  const both = await svc(['thread', 'create', '--project', project, '--key', 'a', '--coord', parentJob]);
  t.is(both.code, 2);
  t.regex(both.stderr, /pass --key or --coord, not both/);
  const noText = await svc(['thread', 'post', 'thr_x', '--project', project]);
  t.is(noText.code, 2);
  t.regex(noText.stderr, /pass the message text or --file F, not both/);
  t.is((await svc(['thread', 'list'])).code, 2, 'no project');
  t.is((await svc(['thread', 'frob', '--project', project])).code, 2);
  const conflict = await svc(['thread', 'create', '--project', project, '--key', 'notes', '--title', 'Other']);
  t.is(conflict.code, 1);
  t.regex(conflict.stderr, /svc: thread notes already exists with another title \("Notes"\).*\(409\)/);
  const coord = (await json(['thread', 'list', '--project', project, '--job', parentJob])).data[0].id;
  const wrongKind = await svc(['thread', 'post', coord, 'hi', '--project', project, '--kind', 'message']);
  t.is(wrongKind.code, 1);
  t.regex(wrongKind.stderr, /kind message is not used on coordination thread .* \(422\)/);
  const missing = await svc(['thread', 'show', 'thr_01h455vb4pex5vsknk084sn02q', '--project', project]);
  t.is(missing.code, 1);
  t.regex(missing.stderr, /thread thr_01h455vb4pex5vsknk084sn02q not found \(404\)/);
});
