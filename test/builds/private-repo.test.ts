import test from 'ava';
import { buildWorld, settled, twoServiceRepo, type BuildWorld } from './helpers.ts';
import { privateGitServer } from './git-http.ts';

/**
 * A private repository over HTTPS-style basic auth: the manifest sync and the builder get the
 * project's GIT_TOKEN (worker.git.token_secret) the way the worker's checkout does; it is never shown.
 */
const TOKEN = 'ghp_private-token-for-the-build-test';
let w: BuildWorld;
let git: Awaited<ReturnType<typeof privateGitServer>>;
let repo: ReturnType<typeof twoServiceRepo>;

test.before(async () => {
  w = await buildWorld({ worker: true });
  repo = twoServiceRepo();
  git = await privateGitServer(repo.dir, TOKEN);
});
test.after.always(async () => {
  await w?.s.stop();
  await git?.stop();
});

const BASIC = Buffer.from(`x-access-token:${TOKEN}`).toString('base64');

test.serial('without GIT_TOKEN the manifest cannot be read; with it, synced, and the builder gets the credential, masked in its output', async (t) => {
  const projectId = await w.project(git.url);
  const refused = await w.admin.post(`/projects/${projectId}/manifest`, { ref: repo.sha });
  t.is(refused.statusCode, 422);
  t.regex(refused.body.message, /could not fetch https:\/\/127\.0\.0\.1:\d+\/app\.git/);

  t.is((await w.admin.post(`/projects/${projectId}/secrets`, { name: 'GIT_TOKEN', value: TOKEN })).statusCode, 201);
  const synced = await w.admin.post(`/projects/${projectId}/manifest`, { ref: repo.sha });
  t.is(synced.statusCode, 200, JSON.stringify(synced.body));
  t.is(synced.body.git_sha, repo.sha);
  t.true(git.seen.authorized > 0);

  w.builder.next = 'images';
  w.builder.echo = (request) => `remote said: token ${request.access.secrets[0]} header ${BASIC}`;
  try {
    const created = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: synced.body.manifest_hash });
    const done = await settled(w.admin, created.body.id);
    t.is(done.status, 'completed');
    const request = w.builder.requests.at(-1)!;
    t.is(request.repoUrl, git.url);
    t.is(request.access.token, TOKEN, 'the token itself, for builders whose tool takes it its own way');
    t.like(request.access.env, { GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: Basic ${BASIC}` });
    // The outbound address policy: no redirects (a redirect would reach a host nobody checked); an address literal needs no pinning.
    t.like(request.access.env, { GIT_CONFIG_COUNT: '2', GIT_CONFIG_KEY_1: 'http.followRedirects', GIT_CONFIG_VALUE_1: 'false' });
    const lines = (await w.admin.get(`/builds/${created.body.id}/logs?limit=1000`)).body.data.map((l: any) => l.line);
    t.true(lines.includes('remote said: token *** header ***'));
    t.false(JSON.stringify(lines).includes(TOKEN));
    t.false(JSON.stringify(done).includes(TOKEN));
  } finally {
    w.builder.echo = null;
  }
});

test.serial('a file:// repository needs no credentials', async (t) => {
  const projectId = await w.project(repo.url);
  const hash = (await w.admin.post(`/projects/${projectId}/manifest`, { ref: repo.sha })).body.manifest_hash;
  w.builder.next = 'images';
  const created = await w.admin.post(`/projects/${projectId}/builds`, { git_sha: repo.sha, manifest_hash: hash, force_rebuild: true });
  t.is((await settled(w.admin, created.body.id)).status, 'completed');
  t.deepEqual(w.builder.requests.at(-1)!.access, { env: {}, secrets: [] });
});
