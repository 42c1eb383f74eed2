/**
 * Issue 28, item 5: `git.remote` may not name a path or file:// on the server's disk (another
 * tenant's repository, a kept workspace), nor a URL of another kind than the project's repository.
 * Attacked as a tenant would: an org member creating jobs over HTTP, and an admin putting the
 * remote in the manifest (workflow git, x-svc.defaults). Nothing is written when refused.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { as, bootstrapAdmin, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { tempRepo } from '../manifest/helpers.ts';
import { checkPushRemote, GitAccessError, pushRemoteKind } from '../../core/git-access.ts';

const scratch = mkdtempSync(path.join(tmpdir(), 'svc-security-remote-'));
/** Another tenant's repository on the same disk: what a file:// remote would push into. */
const victim = path.join(scratch, 'victim.git');

let s: TestServer;
let admin: ReturnType<typeof as>;
let member: ReturnType<typeof as>;
let orgId: string;
/** A project on a file:// repository (development), one on https, one on SSH. */
let fileProject: string;
let httpsProject: string;
let sshProject: string;
let repo: ReturnType<typeof tempRepo>;

test.before(async () => {
  execFileSync('git', ['init', '--quiet', '--bare', victim]);
  repo = tempRepo();
  repo.commit(null, 'initial');
  s = await startTestServer({ overrides: { roles: ['api'] } });
  const adminToken = (await bootstrapAdmin(s.server)).token;
  admin = as(s.server, adminToken);
  orgId = (await admin.post('/orgs', { name: 'Tenant' })).body.id;
  member = as(s.server, await userInOrg(s.server, adminToken, orgId, 'member@example.com', 'member'));
  const project = async (slug: string, repoUrl: string) => {
    const res = await admin.post('/projects', { org_id: orgId, name: slug, slug, repo_url: repoUrl });
    if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
    return res.body.id as string;
  };
  fileProject = await project('rmfile', repo.url);
  httpsProject = await project('rmhttps', 'https://git.example.com/tenant/app.git');
  sshProject = await project('rmssh', 'git@git.example.com:tenant/app.git');
});

test.after.always(async () => {
  await s?.stop();
  rmSync(scratch, { recursive: true, force: true });
  rmSync(repo.dir, { recursive: true, force: true });
});

const jobCount = async (projectId: string) => (await admin.get(`/projects/${projectId}/jobs?limit=1&include_deleted=true`)).body.pagination.total as number;
const victimRefs = () => execFileSync('git', ['for-each-ref'], { cwd: victim, encoding: 'utf8' });

/** A job that would commit and push its change to `remote`, as a member asks for it. */
const pushJob = (projectId: string, remote: string) =>
  member.post(`/projects/${projectId}/jobs`, {
    description: 'push my change',
    phase: 'backlog',
    git: { branch: 'loot', commit: 'auto', push: 'on_success', remote },
    hints: { step: { kind: 'script', script: { run: 'echo x > x.txt' } } },
  });

for (const remote of [
  `file://${victim}`,
  victim,
  `${victim}/../victim.git`,
  'file://localhost' + victim,
  '../victim.git',
  'upstream',
  'ext::sh -c touch% /tmp/pwned',
  'http://git.example.com/tenant/app.git',
  '-oProxyCommand=x@h:p',
]) {
  test.serial(`git.remote ${remote} is 400 naming git.remote, and no job is made`, async (t) => {
    const before = await jobCount(fileProject);
    const res = await pushJob(fileProject, remote);
    t.is(res.statusCode, 400, JSON.stringify(res.body));
    t.regex(res.body.message, /^git\.remote .* is refused: /);
    t.is(await jobCount(fileProject), before, 'nothing was written');
    t.is(victimRefs(), '', 'the other repository got nothing');
  });
}

test.serial(
  'a URL remote of another kind than the repository, or on another host, is 422 naming git.remote; origin and the same kind on the same host are accepted',
  async (t) => {
    const mismatches: [string, string, RegExp][] = [
      [
        fileProject,
        'https://git.example.com/tenant/fork.git',
        /^git\.remote https:\/\/git\.example\.com\/tenant\/fork\.git is refused: it is an https URL but the project's repo_url is a file:\/\/ repository; .*'origin'/,
      ],
      [
        httpsProject,
        'git@git.example.com:tenant/fork.git',
        /^git\.remote git@git\.example\.com:tenant\/fork\.git is refused: it is an SSH URL but the project's repo_url is an https URL/,
      ],
      [
        sshProject,
        'https://git.example.com/tenant/fork.git',
        /^git\.remote https:\/\/git\.example\.com\/tenant\/fork\.git is refused: it is an https URL but the project's repo_url is an SSH URL/,
      ],
      [
        httpsProject,
        'https://collector.example.net/tenant/app.git',
        /^git\.remote https:\/\/collector\.example\.net\/tenant\/app\.git is refused: it is on collector\.example\.net, not on the repository's host git\.example\.com; the push carries the repository's credentials/,
      ],
    ];
    for (const [projectId, remote, message] of mismatches) {
      const before = await jobCount(projectId);
      const res = await pushJob(projectId, remote);
      t.is(res.statusCode, 422, JSON.stringify(res.body));
      t.regex(res.body.message, message);
      t.is(await jobCount(projectId), before);
    }
    const accepted: [string, string][] = [
      [fileProject, 'origin'],
      [httpsProject, 'https://git.example.com/tenant/fork.git'],
      [sshProject, 'ssh://git@git.example.com/tenant/fork.git'],
      [sshProject, 'git@git.example.com:tenant/fork.git'],
    ];
    for (const [projectId, remote] of accepted) t.is((await pushJob(projectId, remote)).statusCode, 201, `${remote} on ${projectId}`);
  },
);

test.serial("a manifest's workflow git.remote on disk is refused at sync; x-svc.defaults naming one refuse job creation", async (t) => {
  const workflow = `
workflows:
  exfil:
    git: { branch: loot, commit: auto, push: on_success, remote: "file://${victim}" }
    steps:
      - { name: only, script: { run: echo x > x.txt } }
`;
  const synced = await admin.post(`/projects/${fileProject}/manifest`, { yaml: workflow });
  t.is(synced.statusCode, 422, JSON.stringify(synced.body));
  t.regex(JSON.stringify(synced.body), /workflows\.exfil\.git\.remote.*git\.remote file:\/\/.* is refused/);

  const defaults = `
x-svc:
  defaults:
    git: { remote: "${victim}" }
`;
  t.is((await admin.post(`/projects/${fileProject}/manifest`, { yaml: defaults })).statusCode, 200);
  const before = await jobCount(fileProject);
  const res = await member.post(`/projects/${fileProject}/jobs`, { description: 'innocent', phase: 'backlog' });
  t.is(res.statusCode, 422, JSON.stringify(res.body));
  t.regex(res.body.message, /x-svc\.defaults are invalid: git\.remote .* is refused/);
  t.is(await jobCount(fileProject), before);
  t.is(victimRefs(), '');
});

test('checkPushRemote: the rule the worker applies again before it pushes', (t) => {
  const refused = (remote: string, repoUrl: string | null) =>
    t.throws(() => checkPushRemote(remote, repoUrl), { instanceOf: GitAccessError, message: /^git\.remote / });
  refused(`file://${victim}`, `file://${victim}`);
  refused(victim, 'https://git.example.com/a.git');
  refused('https://git.example.com/a.git', null);
  refused('https://token:x@git.example.com/a.git', 'https://git.example.com/a.git');
  refused('ssh://-oProxyCommand=x/a.git', 'ssh://git@git.example.com/a.git');
  // The push would carry the repository's token (or key) to another host.
  refused('https://collector.example.net/a.git', 'https://git.example.com/a.git');
  refused('https://git.example.com.evil.net/a.git', 'https://git.example.com/a.git');
  refused('https://git.example.com:8443/a.git', 'https://git.example.com/a.git');
  refused('git@collector.example.net:a.git', 'ssh://git@git.example.com/a.git');
  refused('ssh://git@collector.example.net/a.git', 'git@git.example.com:a.git');
  t.notThrows(() => checkPushRemote('https://GIT.example.com:443/fork.git', 'https://git.example.com/a.git'));
  t.notThrows(() => checkPushRemote('ssh://git@git.example.com/fork.git', 'git@git.example.com:a.git'));
  t.notThrows(() => checkPushRemote('origin', null));
  t.notThrows(() => checkPushRemote('origin', `file://${victim}`));
  t.notThrows(() => checkPushRemote('https://git.example.com/fork.git', 'https://git.example.com/a.git'));
  t.is(pushRemoteKind('git+ssh://git@git.example.com/a.git'), 'ssh');
});
