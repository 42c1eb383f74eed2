import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { attemptsOf, finished, git, logLines, scriptJob, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

/**
 * Issue 28, items 1-3, and the sandbox's boundary, attacked as a tenant would: a member's job, or
 * the repository it checks out, tries to make the worker (root here) run its commands, follow its
 * links, or read what is not the job's. Every attack leaves the host as it was.
 */
const root = process.getuid?.() === 0;
let w: WorkerWorld;
/** A folder outside every workspace that nothing of a job may touch. */
let host: string;

test.before(async () => {
  w = await workerWorld('wsec');
  host = mkdtempSync(path.join(tmpdir(), 'svc-host-'));
});
test.after.always(async () => {
  await w?.stop();
  if (host) rmSync(host, { recursive: true, force: true });
});

/** Commits `files` (and links) to the project's repository on main. */
function commitToOrigin(change: (dir: string) => void): void {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-attack-'));
  try {
    execFileSync('git', ['clone', '--quiet', w.bare, dir]);
    change(dir);
    git(dir, 'add', '-A');
    git(dir, '-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '--quiet', '-m', 'attack');
    git(dir, 'push', '--quiet', 'origin', 'HEAD:main');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const markers = (dir: string) => readdirSync(dir).filter((f) => f.startsWith('pwned'));

async function runScript(run: string, gitControls: Record<string, unknown> = {}): Promise<{ job: any; attempt: any; out: string[] }> {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'attack',
    git: gitControls,
    hints: { step: { kind: 'script', script: { run } } },
  });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  const job = await finished(w, res.body.id);
  const attempt = (await attemptsOf(w, job.id))[0];
  const out = (await logLines(w, job.id, attempt.id)).filter((l) => l.stream === 'stdout').map((l) => l.line);
  return { job, attempt, out };
}

test.serial(
  "item 1: a job's git config (fsmonitor, hooksPath with a post-commit hook, a clean filter) never runs in the worker; the commit and push still happen",
  async (t) => {
    const marker = (what: string) => `id -u > ${host}/pwned-${what}; env > ${host}/pwned-${what}.env`;
    const attack = [
      `git config core.fsmonitor "sh -c '${marker('fsmonitor')}'"`,
      'mkdir -p .hooks',
      `printf '#!/bin/sh\\n${marker('hook')}\\n' > .hooks/post-commit && chmod +x .hooks/post-commit`,
      'git config core.hooksPath .hooks',
      `git config filter.evil.clean "sh -c '${marker('filter')}; cat'"`,
      "echo '*.txt filter=evil' > .gitattributes",
      'echo change > f.txt',
    ].join('\n');
    const { job, attempt } = await runScript(attack, { branch: 'attack/${job_id}', commit: 'auto', push: 'required' });
    t.deepEqual(markers(host), [], 'nothing the checkout configured ran with the worker view of the host');
    t.is(job.phase, 'done', String(attempt.error));
    t.is(attempt.git.commits.length, 1);
    t.true(attempt.git.pushed);
    t.is(git(w.bare, 'rev-parse', `attack/${job.id}`), attempt.git.commits[0], 'the worker pushed the commit from its mirror');
    t.is(git(w.bare, 'show', `attack/${job.id}:f.txt`), 'change');
  },
);

test.serial('item 1: a clean filter and hooks committed in the repository itself do not run on the next checkout either', async (t) => {
  commitToOrigin((dir) => {
    mkdirSync(path.join(dir, '.hooks'));
    writeFileSync(path.join(dir, '.hooks', 'post-checkout'), `#!/bin/sh\nid -u > ${host}/pwned-checkout\n`, { mode: 0o755 });
    writeFileSync(path.join(dir, '.gitattributes'), '* filter=lfs diff=evil merge=evil\n');
  });
  const { job, attempt, out } = await runScript('git config core.hooksPath .hooks; echo x > g.txt; git status --short | wc -l', {
    commit: 'auto',
    branch: 'attack2/${job_id}',
    push: 'on_success',
  });
  t.is(job.phase, 'done', String(attempt.error));
  t.deepEqual(markers(host), []);
  t.truthy(out.length);
});

test.serial('item 2: a .svc/home link committed in the repository is refused naming it; its target keeps its owner', async (t) => {
  const victim = path.join(host, 'victim-home');
  mkdirSync(victim);
  const before = statSync(victim);
  commitToOrigin((dir) => {
    mkdirSync(path.join(dir, '.svc'), { recursive: true });
    symlinkSync(victim, path.join(dir, '.svc', 'home'));
  });
  try {
    const { attempt } = await runScript('echo should not run');
    t.is(attempt.status, 'failed');
    t.regex(attempt.error, /\.svc\/home is a symbolic link/);
    const after = statSync(victim);
    t.is(after.uid, before.uid);
    t.is(after.gid, before.gid);
  } finally {
    commitToOrigin((dir) => rmSync(path.join(dir, '.svc', 'home')));
  }
});

test.serial('item 3: a .svc/coordination-inbox.md link is refused naming it; the file it points at keeps its content', async (t) => {
  const victim = path.join(host, 'victim.conf');
  writeFileSync(victim, 'original\n');
  commitToOrigin((dir) => {
    mkdirSync(path.join(dir, '.svc'), { recursive: true });
    symlinkSync(victim, path.join(dir, '.svc', 'coordination-inbox.md'));
  });
  try {
    const thread = (await w.api.post(`/projects/${w.projectId}/threads`, { title: 'Ops room' })).body;
    await w.api.post(`/projects/${w.projectId}/threads/${thread.id}/messages`, { body: 'overwrite it' });
    const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
      description: 'inbox',
      hints: { step: { kind: 'script', script: { run: 'echo ran' } }, coordination: { thread_id: thread.id }, max_attempts: 1 },
    });
    const job = await finished(w, res.body.id);
    const [attempt] = await attemptsOf(w, job.id);
    t.is(attempt.status, 'failed');
    t.regex(attempt.error, /\.svc\/coordination-inbox\.md is a symbolic link/);
    t.is(readFileSync(victim, 'utf8'), 'original\n');
  } finally {
    commitToOrigin((dir) => rmSync(path.join(dir, '.svc', 'coordination-inbox.md')));
  }
});

test.serial('the sandbox: no root, no host environment, no data directory, no other workspace, no /root; a private /tmp', async (t) => {
  const otherWorkspace = path.join(w.scratch, 'workspaces', 'another-tenant');
  mkdirSync(otherWorkspace, { recursive: true });
  writeFileSync(path.join(otherWorkspace, 'secret.txt'), 'other tenant');
  writeFileSync(path.join(host, 'master.key'), 'master');
  const probe = (label: string, command: string) => `if ${command} >/dev/null 2>&1; then echo "${label}=readable"; else echo "${label}=refused"; fi`;
  const script = [
    'echo "uid=$(id -u)"',
    probe('proc1', 'cat /proc/1/environ'),
    probe('other', `cat ${otherWorkspace}/secret.txt`),
    probe('key', `cat ${host}/master.key`),
    probe('root', 'ls /root'),
    probe('pgsocket', 'ls /var/run/postgresql /run/postgresql'),
    'echo "db=${DATABASE_URL:-unset}"',
    probe('write-usr', 'touch /usr/svc-sandbox-probe'),
    'echo made > /tmp/probe && echo "tmp=$(cat /tmp/probe)"',
  ].join('\n');
  const { job, attempt, out } = await runScript(script);
  t.is(job.phase, 'done', `${attempt.error}: ${out.join(' | ')}`);
  const seen = Object.fromEntries(out.map((l) => l.split('=')));
  if (root) t.not(seen.uid, '0', 'a root server never runs the attempt as root');
  t.like(seen, { proc1: 'refused', other: 'refused', key: 'refused', root: 'refused', pgsocket: 'refused', db: 'unset', 'write-usr': 'refused', tmp: 'made' });
  t.false(readdirSync(host).includes('probe'));
});

test.serial('cancelling a sandboxed job ends everything it started', async (t) => {
  const token = `300.${String(Date.now()).slice(-6)}`;
  const jobId = await scriptJob(w, `sleep ${token} & sleep ${token}`);
  const running = () =>
    readdirSync('/proc')
      .filter((p) => /^\d+$/.test(p))
      .some((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(token);
        } catch {
          return false;
        }
      });
  const deadline = Date.now() + 20_000;
  while (!running() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.true(running(), 'the sleeper started');
  t.is((await w.api.patch(`/jobs/${jobId}`, { phase: 'cancelled', close_reason: 'stop' })).statusCode, 200);
  const gone = Date.now() + 15_000;
  while (running() && Date.now() < gone) await new Promise((r) => setTimeout(r, 100));
  t.false(running(), 'nothing the job started outlives it');
});
