/** End to end: `svc build …` and `svc release …` (node dist/cli/bin.js) against a real server whose worker builds with a scripted builder. */
import test from 'ava';
import { rm } from 'node:fs/promises';
import { cliUser, showRun, tempHome } from './helpers.ts';
import { buildWorld, twoServiceRepo, type BuildWorld } from '../builds/helpers.ts';

let w: BuildWorld;
let home = '';
let token = '';
let project = '';
let repo: ReturnType<typeof twoServiceRepo>;
let hash = '';

const { svc, ok, json } = cliUser(() => ({ home, url: w.s.url, token }));

test.before(async () => {
  w = await buildWorld({ worker: true });
  token = w.adminToken;
  home = await tempHome();
  repo = twoServiceRepo();
  project = await w.project(repo.url);
  hash = (await w.admin.post(`/projects/${project}/manifest`, { ref: repo.sha })).body.manifest_hash;
});
test.after.always(async () => {
  await w?.s.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('create, follow the logs, show, runs, artifacts, release create/list/show, cancel of a finished build', async (t) => {
  const created = await json(['build', 'create', '--project', project, '--sha', repo.sha, '--manifest-hash', hash, '--services', 'api,web']);
  t.regex(created.id, /^bld_/);
  const followed = await svc(['build', 'logs', created.id, '-f', '--project', project]);
  t.is(followed.code, 0, showRun(['build', 'logs', '-f'], followed));
  t.regex(followed.stdout, /^svc: building api, web at [0-9a-f]{40} with buildx/m);
  t.regex(followed.stdout, /^step line 40$/m);
  t.regex(followed.stderr, /svc: build completed/);

  t.regex(await ok(['build', 'show', created.id]), /status:\s+completed/);
  t.regex(await ok(['build', 'list', '--project', project]), /^ID\s+SHA\s+SERVICES\s+STATUS\s+CREATED/);
  t.regex(await ok(['build', 'runs', created.id]), /completed\s+buildx/);
  const artifacts = await ok(['build', 'artifacts', created.id]);
  t.regex(artifacts, /^SERVICE\s+IMAGE\s+DIGEST/);
  t.regex(artifacts, /^api\s+\S+\/api:local\s+sha256:/m);

  const release = await json(['release', 'create', '--project', project, '--build', created.id, '--tag', 'v2']);
  t.like(release, { tag: 'v2', build_id: created.id, git_sha: repo.sha });
  t.regex(await ok(['release', 'list', '--project', project]), new RegExp(`${release.id}\\s+v2`));
  t.like(await json(['release', 'show', 'v2', '--project', project]), { id: release.id });

  const cancel = await svc(['build', 'cancel', created.id]);
  t.is(cancel.code, 1);
  t.regex(cancel.stderr, /is not active/);
  const missing = await svc(['build', 'create', '--project', project, '--sha', repo.sha]);
  t.is(missing.code, 2);
});

test.serial('logs -f of a failing build exits 1 and says the error class', async (t) => {
  w.builder.next = 'fail';
  const created = await json(['build', 'create', '--project', project, '--sha', repo.sha, '--manifest-hash', hash, '--force-rebuild']);
  const followed = await svc(['build', 'logs', created.id, '-f']);
  t.is(followed.code, 1);
  t.regex(followed.stderr, /svc: build failed \(build_error\)/);
  t.regex(await ok(['build', 'show', created.id]), /failed_stage:\s+\[build 2\/3\] RUN false/);
});
