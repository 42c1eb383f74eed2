/**
 * End to end: `svc env history/approve/reject` (node dist/cli/bin.js, a subprocess) against the real
 * server: a deploy to a protected environment awaits approval, a reviewer approves or rejects it.
 */
import test from 'ava';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DeployerToken } from '../../core/ports/environments.ts';
import { FakeReleases, RecordingDeployer } from '../fixtures/deployer.ts';
import { ReleasesToken } from '../../core/ports/releases.ts';
import { sha } from '../environments/helpers.ts';
import { cliUser, tempHome } from './helpers.ts';
import { bootstrapAdmin, startTestServer, userInOrg, type TestServer } from '../support/server.ts';

let server: TestServer;
let home = '';
let token = '';
let reviewerToken = '';
let project = '';
const releases = new FakeReleases();
const deployer = new RecordingDeployer();
const admin = cliUser(() => ({ home, url: server.url, token }));
const reviewer = cliUser(() => ({ home, url: server.url, token: reviewerToken }));
const p = () => ['--project', project];

test.before(async () => {
  server = await startTestServer({
    configure: (c) => {
      c.registerInstance(DeployerToken, deployer);
      c.registerInstance(ReleasesToken, releases);
    },
  });
  token = (await bootstrapAdmin(server.server)).token;
  home = await tempHome();
  const org = (await admin.json(['org', 'create', 'Protected E2E'])).id;
  project = (await admin.json(['project', 'create', 'Web', '--org', org, '--slug', 'protweb'])).id;
  reviewerToken = await userInOrg(server.server, token, org, 'reviewer-e2e@example.com', 'admin');
  const manifest = `services:\n  web: { image: web }\nenvironments:\n  production:\n    protection:\n      required_reviewers: [{ user: reviewer-e2e@example.com }]\n`;
  await writeFile(join(home, 'manifest.yaml'), manifest);
  await admin.ok(['manifest', 'sync', ...p(), '--file', join(home, 'manifest.yaml')]);
  releases.add(project, { id: 'rel_1', tag: 'v1', git_sha: sha('a'), manifest_hash: null, image_digests: { web: 'sha256:' + 'a'.repeat(64) } });
  releases.add(project, { id: 'rel_3', tag: 'v3', git_sha: sha('c'), manifest_hash: null, image_digests: { web: 'sha256:' + 'c'.repeat(64) } });
  releases.add(project, { id: 'rel_2', tag: 'v2', git_sha: sha('b'), manifest_hash: null, image_digests: { web: 'sha256:' + 'b'.repeat(64) } });
});
test.after.always(async () => {
  await server?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

test.serial('deploy awaits approval, history lists it, the reviewer approves it (the admin may not), another is rejected', async (t) => {
  const held = await admin.json(['env', 'deploy', 'production', '--release-tag', 'v1', ...p()]);
  t.is(held.status, 'awaiting_approval');
  t.regex(await admin.ok(['env', 'history', 'production', '--status', 'awaiting_approval', ...p()]), new RegExp(`${held.id} +awaiting_approval +v1`));

  const refused = await admin.svc(['env', 'approve', 'production', held.id, ...p()]);
  t.is(refused.code, 1);
  t.regex(refused.stderr, /only a reviewer of environment production may approve/);

  const approved = await reviewer.ok(['env', 'approve', 'production', held.id, '--comment', 'ship it', ...p()]);
  t.regex(approved, /reviews: +approved by usr_\S+: ship it/);
  for (let i = 0; i < 200 && !deployer.calls.includes('deploy production v1'); i++) await new Promise((r) => setTimeout(r, 25));
  t.true(deployer.calls.includes('deploy production v1'));

  const other = await admin.json(['env', 'deploy', 'production', '--release-tag', 'v2', ...p()]);
  const rejected = await reviewer.json(['env', 'reject', 'production', other.id, '--comment', 'not today', ...p()]);
  t.like(rejected, { status: 'rejected' });
  t.regex(rejected.error_message, /not today/);
});

test.serial('deploy -f of a held deploy follows it until a reviewer approves and it succeeds (exit 0)', async (t) => {
  const following = admin.svc(['env', 'deploy', 'production', '--release-tag', 'v3', '-f', ...p()]);
  let held: any = null;
  for (let i = 0; i < 400 && !held; i++) {
    await new Promise((r) => setTimeout(r, 25));
    held = (await admin.json(['env', 'history', 'production', '--status', 'awaiting_approval', ...p()])).data[0] ?? null;
  }
  t.truthy(held, 'the deploy is held');
  await reviewer.ok(['env', 'approve', 'production', held.id, ...p()]);
  const r = await following;
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /status: +succeeded/);
});
