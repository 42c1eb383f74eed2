import test from 'ava';
import { attemptsOf, finished, logLines, workerWorld, type WorkerWorld } from './helpers.ts';

/** The environment a job gets, secrets in it and in its output, and git credentials that are missing. */
let w: WorkerWorld;
test.before(async () => {
  w = await workerWorld('wenv');
});
test.after.always(() => w?.stop());

const SECRET = 'sekrit-value-0123456789';

async function runScript(project: string, run: string, extra: Record<string, unknown> = {}): Promise<{ job: any; attempt: any; lines: any[] }> {
  const res = await w.api.post(`/projects/${project}/jobs`, { description: 'env', hints: { step: { kind: 'script', script: { run } } }, ...extra });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const job = await finished(w, res.body.id);
  const [attempt] = await attemptsOf(w, job.id, project);
  return { job, attempt, lines: await logLines(w, job.id, attempt.id) };
}

const stdout = (lines: any[]) => lines.filter((l) => l.stream === 'stdout').map((l) => l.line);

test.serial("a job gets exactly the spec's SVC_* variables, its env_overrides with secrets resolved, and a working job token", async (t) => {
  t.is((await w.api.post(`/projects/${w.projectId}/secrets`, { name: 'API_SECRET', value: SECRET })).statusCode, 201);
  const run = [
    "env | grep '^SVC_' | cut -d= -f1 | sort",
    'echo "project=$SVC_PROJECT_ID job=$SVC_JOB_ID attempt=$SVC_ATTEMPT_ID agent=$SVC_AGENT_ID parent=[$SVC_PARENT_JOB_ID]"',
    'echo "index=$SVC_RESOURCE_INDEX" && cat "$SVC_RESOURCE_INDEX"',
    'echo "plain=$PLAIN secret=$API_KEY token=$SVC_JOB_TOKEN"',
    `node -e "fetch(process.env.SVC_API_URL + '/jobs/' + process.env.SVC_JOB_ID, {headers: {authorization: 'Bearer ' + process.env.SVC_JOB_TOKEN}}).then(async (r) => console.log('job-token', r.status, (await r.json()).id))"`,
  ].join('\n');
  const { job, attempt, lines } = await runScript(w.projectId, run, { env_overrides: { PLAIN: 'visible', API_KEY: '${secret.API_SECRET}' } });
  t.is(job.phase, 'done', JSON.stringify(lines));
  const out = stdout(lines);
  t.deepEqual(out.slice(0, 9), [
    'SVC_AGENT_ID',
    'SVC_API_URL',
    'SVC_ATTEMPT_ID',
    'SVC_JOB_ID',
    'SVC_JOB_TOKEN',
    'SVC_PARENT_JOB_ID',
    'SVC_PROJECT_ID',
    'SVC_RESOURCE_INDEX',
    `project=${w.projectId} job=${job.id} attempt=${attempt.id} agent=script parent=[]`,
  ]);
  t.regex(out[9], /^index=\/.*\/\.svc\/resources\/index\.json$/);
  t.deepEqual(out.slice(10, 13), ['{', '  "resources": []', '}']);
  t.true(out.includes('plain=visible secret=*** token=***'), 'the secret value and the job token are masked');
  t.true(out.includes(`job-token 200 ${job.id}`), 'SVC_API_URL and SVC_JOB_TOKEN reach the job itself');
  t.false(JSON.stringify(lines).includes(SECRET));
});

test.serial('a secret printed by the process is masked in the stored log lines and in the result', async (t) => {
  const run = `echo "leaking $API_KEY"; printf '%s\\n' '\`\`\`json-result' "{\\"svc\\":{\\"status\\":\\"success\\",\\"summary\\":\\"key $API_KEY\\"}}" '\`\`\`'`;
  const { attempt, lines } = await runScript(w.projectId, run, { env_overrides: { API_KEY: '${secret.API_SECRET}' } });
  t.true(stdout(lines).includes('leaking ***'));
  t.is(attempt.result_summary, 'key ***');
  const stored = await w.srv.kernel.db('attempt_logs').where({ attempt_id: attempt.id }).pluck('line');
  t.false(stored.join('\n').includes(SECRET));
});

test.serial('an env_override naming a missing secret fails the attempt naming it', async (t) => {
  const { attempt } = await runScript(w.projectId, 'echo never', { env_overrides: { API_KEY: '${secret.NOT_THERE}' } });
  t.is(attempt.status, 'failed');
  t.regex(attempt.error, /^env_overrides\.API_KEY: secret NOT_THERE not found; searched project /);
});

async function project(slug: string, repoUrl: string): Promise<string> {
  const res = await w.api.post('/projects', { org_id: w.orgId, name: slug, slug, repo_url: repoUrl });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

test.serial('an https repository without the token secret fails fast naming GIT_TOKEN; with it, the token never shows', async (t) => {
  const id = await project('wenvhttp', 'https://git.invalid/team/app.git');
  const first = await runScript(id, 'echo never');
  t.is(first.attempt.status, 'failed');
  t.is(
    first.attempt.error,
    `cloning https://git.invalid/team/app.git over HTTPS needs a token, and no secret GIT_TOKEN was found: set it with \`svc secrets set GIT_TOKEN --project ${id}\` (project or org scope, or a system secret shared with jobs)`,
  );
  t.false(stdout(first.lines).includes('never'));

  const token = 'ghp-token-abcdef0123456789';
  t.is((await w.api.post(`/projects/${id}/secrets`, { name: 'GIT_TOKEN', value: token })).statusCode, 201);
  const second = await runScript(id, 'echo never');
  t.regex(second.attempt.error, /^cloning https:\/\/git\.invalid\/team\/app\.git failed: /);
  t.false(JSON.stringify(second).includes(token));
  t.false(JSON.stringify(second).includes(Buffer.from(`x-access-token:${token}`).toString('base64')));
});

test.serial('an ssh repository without the key secret fails fast naming GIT_SSH_KEY', async (t) => {
  const id = await project('wenvssh', 'git@git.invalid:team/app.git');
  const { attempt } = await runScript(id, 'echo never');
  t.is(
    attempt.error,
    `cloning git@git.invalid:team/app.git over SSH needs an SSH private key, and no secret GIT_SSH_KEY was found: set it with \`svc secrets set GIT_SSH_KEY --project ${id}\` (project or org scope, or a system secret shared with jobs)`,
  );
});

test.serial('git controls that need a repository fail on a project without one; a project without one runs in an empty workspace', async (t) => {
  const id = (await w.api.post('/projects', { org_id: w.orgId, name: 'norepo', slug: 'wenvnone' })).body.id;
  const pushing = await runScript(id, 'echo never', { git: { branch: 'x', push: 'on_success' } });
  t.is(pushing.attempt.error, `the job's git controls need a repository, but project ${id} has no repo_url`);
  const plain = await runScript(id, 'ls -A | tr "\\n" " "');
  t.is(plain.job.phase, 'done');
  t.true(stdout(plain.lines).includes('.svc '));
  t.is(plain.attempt.git, null);
});
