import test from 'ava';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { cacheKey } from '../../core/repo-cache.ts';
import { overlayUnavailable } from '../../plugins/worker/overlay.ts';
import { privateGitServer } from '../builds/git-http.ts';
import { tempRepo } from '../manifest/helpers.ts';
import { attemptsOf, finished, git, logLines, workerWorld, type WorkerWorld } from '../worker/helpers.ts';

/**
 * The worker's repository cache attacked end to end through the REST API (issue 35): it is shared by
 * every project naming a URL, so what one project's job put there must reach no other that the
 * remote would refuse; nothing planted in it is followed; credentials never land in it; and nothing
 * an attempt writes through its copy-on-write workspace reaches the prepared tree behind it.
 */
const TOKEN = 'ghp_cache-owner-token-0123456789';
const SECRET_LINE = 'only-project-a-may-read-this';
let w: WorkerWorld;
let server: Awaited<ReturnType<typeof privateGitServer>>;
let cacheRoot: string;

test.before(async () => {
  w = await workerWorld('wcsec');
  cacheRoot = path.join(w.scratch, 'workspaces', '.repo-cache');
  const source = tempRepo();
  // README.md holds the commit's message.
  source.commit(null, SECRET_LINE);
  server = await privateGitServer(source.dir, TOKEN);
});
test.after.always(async () => {
  await w?.stop();
  await server?.stop();
});

async function project(slug: string, repoUrl: string, orgId = w.orgId): Promise<string> {
  const res = await w.api.post('/projects', { org_id: orgId, name: slug, slug, repo_url: repoUrl });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

async function run(projectId: string, script: string): Promise<{ attempt: any; log: string }> {
  const res = await w.api.post(`/projects/${projectId}/jobs`, { description: 'script', hints: { step: { kind: 'script', script: { run: script } } } });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  await finished(w, res.body.id, 60_000);
  const attempt = (await attemptsOf(w, res.body.id, projectId))[0];
  const log = (await logLines(w, res.body.id, attempt.id)).map((l) => l.content ?? l.text ?? l.line ?? '').join('\n');
  return { attempt, log };
}

const grepCache = (needle: string) => {
  try {
    return execFileSync('grep', ['-rlF', '--', needle, cacheRoot], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
};

test.serial("project B, without project A's token or with a wrong one, gets none of what A's job put in the cache", async (t) => {
  const a = await project('wcachea', server.url);
  t.is((await w.api.post(`/projects/${a}/secrets`, { name: 'GIT_TOKEN', value: TOKEN })).statusCode, 201);
  const filled = await run(a, 'cat README.md');
  t.is(filled.attempt.status, 'succeeded', filled.log);
  t.true(filled.log.includes(SECRET_LINE));
  t.true(existsSync(path.join(cacheRoot, `${cacheKey(server.url)}.git`, 'HEAD')), "A's job filled the cache");

  // Another org's project naming the same URL.
  const otherOrg = (await w.api.post('/orgs', { name: 'Strangers' })).body.id;
  const without = await project('wcacheb', server.url, otherOrg);
  const none = await run(without, 'cat README.md');
  t.is(none.attempt.status, 'failed');
  t.regex(none.attempt.error, /needs a token, and no secret GIT_TOKEN was found/);
  t.false(none.log.includes(SECRET_LINE));

  const wrong = await project('wcachec', server.url, otherOrg);
  t.is((await w.api.post(`/projects/${wrong}/secrets`, { name: 'GIT_TOKEN', value: 'ghp_not-the-token' })).statusCode, 201);
  const refused = await run(wrong, 'cat README.md; git log --oneline');
  t.is(refused.attempt.status, 'failed');
  t.regex(refused.attempt.error, /into the repository cache failed/);
  t.false(refused.log.includes(SECRET_LINE));
  t.is(refused.attempt.git?.resolved_sha ?? null, null);
});

test.serial('URLs differing only in credentials share one mirror, and no credential is stored in the cache', async (t) => {
  const { host, pathname } = new URL(server.url);
  t.is(cacheKey(`https://x-access-token:${TOKEN}@${host}${pathname}`), cacheKey(server.url));
  t.is(cacheKey(`https://someone:else@${host}${pathname}`), cacheKey(server.url));
  t.is(readdirSync(cacheRoot).filter((n) => n.endsWith('.git')).length, 1);
  t.is(grepCache(TOKEN), '', 'the token is in no file of the cache');
  t.is(grepCache(Buffer.from(`x-access-token:${TOKEN}`).toString('base64')), '', 'nor its Basic form');
});

test.serial('a link planted in the cache in place of a mirror or a prepared checkout is never followed', async (t) => {
  // A repository of the attacker's, and a folder of planted files.
  const planted = tempRepo();
  planted.commit(null, 'planted repository');
  const decoy = path.join(w.scratch, 'decoy');
  mkdirSync(decoy, { recursive: true });
  writeFileSync(path.join(decoy, 'README.md'), 'planted tree\n');

  const url = `file://${w.bare}`;
  const first = await run(w.projectId, 'cat README.md');
  t.is(first.attempt.status, 'succeeded', first.log);
  const mirror = path.join(cacheRoot, `${cacheKey(url)}.git`);
  const checkouts = path.join(cacheRoot, `${cacheKey(url)}.checkouts`);

  rmSync(mirror, { recursive: true, force: true });
  symlinkSync(path.join(planted.dir, '.git'), mirror);
  if (existsSync(checkouts)) {
    for (const name of readdirSync(checkouts).filter((n) => !n.includes('.'))) {
      rmSync(path.join(checkouts, name), { recursive: true, force: true });
      symlinkSync(decoy, path.join(checkouts, name));
    }
  }
  const next = await run(w.projectId, 'cat README.md');
  t.is(next.attempt.status, 'succeeded', next.log);
  t.false(next.log.includes('planted'), next.log);
  t.is(next.attempt.git.resolved_sha, git(w.bare, 'rev-parse', 'main'));
  t.is(readFileSync(path.join(planted.dir, 'README.md'), 'utf8'), 'planted repository', "the planted repository's files were not touched");
  t.is(readFileSync(path.join(decoy, 'README.md'), 'utf8'), 'planted tree\n');
});

test.serial('an attempt writing through its copy-on-write workspace never changes the prepared tree, nor the next attempt', async (t) => {
  if ((await overlayUnavailable()) !== null) return t.pass('no copy-on-write workspaces here (not root)');
  const url = `file://${w.bare}`;
  const sha = git(w.bare, 'rev-parse', 'main');
  const write = await run(
    w.projectId,
    [
      'echo overwritten > README.md',
      'mkdir -p newdir && echo new > newdir/new.txt',
      'chmod 777 README.md',
      'git add -A && git -c user.name=j -c user.email=j@j commit -qm mine',
    ].join(' && '),
  );
  t.is(write.attempt.status, 'succeeded', write.log);
  t.regex(write.log, /copy-on-write over the cache's prepared checkout/);
  const checkouts = path.join(cacheRoot, `${cacheKey(url)}.checkouts`);
  const prepared = readdirSync(checkouts).filter((n) => n.startsWith(sha) && !n.includes('.'));
  t.true(prepared.length > 0);
  for (const name of prepared) {
    const tree = path.join(checkouts, name, 'tree');
    t.not(readFileSync(path.join(tree, 'README.md'), 'utf8'), 'overwritten\n');
    t.false(existsSync(path.join(tree, 'newdir')));
    t.false(existsSync(path.join(tree, '.git')), 'no git dir reached the prepared tree');
  }
  const next = await run(w.projectId, 'cat README.md; echo; test ! -e newdir && git status --porcelain | wc -l');
  t.is(next.attempt.status, 'succeeded', next.log);
  t.false(next.log.includes('overwritten'));
  t.regex(next.log, /^0$/m, 'a clean checkout');
});
