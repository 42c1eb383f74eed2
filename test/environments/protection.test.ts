import test from 'ava';
import { memberOf, type User } from '../orgs/helpers.ts';
import { envWorld, eventsOf, sha, type EnvWorld } from './helpers.ts';

/**
 * Environment protection (docs/environments.md): allowed_refs refuse a deploy, reviewers approve or
 * reject a held one (directly or through an access group), required_approvals, the wait timer.
 */
let w: EnvWorld;
let orgA: string;
let alice: User;
let bob: User;
let carol: User;
let dave: User;
const base = () => `/projects/${w.projectA}/environments`;
const digest = (c: string) => ({ web: 'sha256:' + c.repeat(64) });

const manifest = () => `
services:
  web: { image: web }
environments:
  production:
    type: persistent
    protection:
      required_reviewers: [{ user: ${alice.email} }, { user: ${bob.id} }, { group: release-managers }]
      allowed_refs: ['v*', 'release/**']
  two-keys:
    protection:
      required_reviewers: [{ user: ${alice.email} }, { user: ${bob.email} }]
      required_approvals: 2
  timed:
    protection: { wait_seconds: 1 }
  approved-timed:
    protection:
      required_reviewers: [{ user: ${alice.email} }]
      wait_seconds: 2
`;

/** Polls the deploy until `done` says so. */
async function until(env: string, id: string, done: (d: any) => boolean, ms = 20_000): Promise<any> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    const d = (await w.owner.api.get(`${base()}/${env}/deploys/${id}`)).body;
    if (done(d)) return d;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`deploy ${id} did not get there`);
}
const ended = (d: any) => ['succeeded', 'failed', 'rejected'].includes(d.status);

test.before(async () => {
  w = await envWorld('protect', 'services:\n  web: { image: web }\n', {
    overrides: { roles: ['api', 'orchestrator'], work: { lease_seconds: 2, poll_ms: 100 } },
  });
  orgA = (await w.owner.api.get(`/projects/${w.projectA}`)).body.org_id;
  [alice, bob, carol, dave] = await Promise.all(['alice', 'bob', 'carol', 'dave'].map((n) => memberOf(w.ctx, orgA, `protect-${n}`, 'admin')));
  const group = (await w.owner.api.post(`/orgs/${orgA}/access/groups`, { name: 'release-managers' })).body;
  const added = await w.owner.api.post(`/orgs/${orgA}/access/groups/${group.id}/members`, { principal_type: 'user', principal_id: carol.id });
  if (added.statusCode !== 201) throw new Error(JSON.stringify(added.body));
  const synced = await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml: manifest() });
  if (synced.statusCode !== 200) throw new Error(JSON.stringify(synced.body));
  let n = 0;
  for (const tag of ['v1', 'v2', 'v3', 'v4', 'v5', 'v6', 'hotfix-1'])
    w.releases.add(w.projectA, { id: `rel_${tag}`, tag, git_sha: sha(String(++n)), manifest_hash: null, image_digests: digest(String(n)) });
});
test.after.always(() => w?.ctx.srv.stop());

test.serial('the manifest validates protection, naming each field; an environment answers its protection', async (t) => {
  const bad = `
environments:
  production:
    protection:
      required_reviewers: [{ user: a@example.com, group: ops }, 'bob']
      required_approvals: 0
      allowed_refs: []
      wait_seconds: -1
      reviewers: []
`;
  const res = await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml: bad });
  t.is(res.statusCode, 422);
  const paths = res.body.errors.map((e: any) => e.path);
  for (const path of [
    'environments.production.protection.required_reviewers[0]',
    'environments.production.protection.required_reviewers[1]',
    'environments.production.protection.required_approvals',
    'environments.production.protection.allowed_refs',
    'environments.production.protection.wait_seconds',
  ])
    t.true(paths.includes(path), `${path} in ${JSON.stringify(res.body.errors)}`);
  t.true(
    paths.some((p: string) => p.startsWith('environments.production.protection.reviewers')),
    JSON.stringify(res.body.errors),
  );
  const env = (await w.owner.api.get(`${base()}/production`)).body;
  t.deepEqual(env.protection.allowed_refs, ['v*', 'release/**']);
  t.is((await w.owner.api.get(`${base()}/timed`)).body.protection.wait_seconds, 1);
});

test.serial('a release from a ref allowed_refs does not allow is 422 naming the rule, and nothing is created', async (t) => {
  const res = await w.owner.api.post(`${base()}/production/deploy`, { release_tag: 'hotfix-1' });
  t.is(res.statusCode, 422, JSON.stringify(res.body));
  t.regex(res.body.message, /protection\.allowed_refs allows v\*, release\/\*\*, and this deploy's release comes from hotfix-1/);
  t.is((await w.owner.api.get(`${base()}/production/deploys`)).body.data.length, 0);
});

test.serial('a deploy awaits approval; a non-reviewer is 403, another org 404; a reviewer approves and it runs; a second approval is 409', async (t) => {
  const res = await w.owner.api.post(`${base()}/production/deploy`, { release_tag: 'v1' });
  t.is(res.statusCode, 202, JSON.stringify(res.body));
  t.like(res.body, { status: 'awaiting_approval', reviews: [], completed_at: null });
  const id = res.body.id;
  const listed = await w.owner.api.get(`${base()}/production/deploys?status=awaiting_approval`);
  t.deepEqual(
    listed.body.data.map((d: any) => d.id),
    [id],
  );
  t.false(w.deployer.calls.includes('deploy production v1'), 'nothing ran');

  const url = `${base()}/production/deploys/${id}`;
  const outsider = await dave.api.post(`${url}/approve`, {});
  t.is(outsider.statusCode, 403);
  t.regex(outsider.body.message, /only a reviewer of environment production may approve/);
  t.is((await w.owner.api.post(`${url}/approve`, {})).statusCode, 403, 'the owner is no reviewer either');
  t.is((await w.outsider.api.post(`${url}/approve`, {})).statusCode, 404);
  t.is((await w.outsider.api.post(`/projects/${w.projectB}/environments/production/deploys/${id}/approve`, {})).statusCode, 404);

  const approved = await alice.api.post(`${url}/approve`, { comment: 'looks good' });
  t.is(approved.statusCode, 200, JSON.stringify(approved.body));
  t.like(approved.body.reviews[0], { user_id: alice.id, decision: 'approved', comment: 'looks good' });
  const done = await until('production', id, ended);
  t.like(done, { status: 'succeeded' });
  t.true(w.deployer.calls.includes('deploy production v1'));
  const again = await bob.api.post(`${url}/approve`, {});
  t.is(again.statusCode, 409);
  t.regex(again.body.message, /is succeeded, not awaiting approval/);

  const events = (await eventsOf(w, 'system.deploy.%')).filter((e: any) => e.payload_json.deploy_id === id);
  // approved and started are written in one transaction: the same created_at, in no set order.
  const types = events.map((e: any) => e.type);
  t.deepEqual([types[0], types[3]], ['system.deploy.awaiting_approval', 'system.deploy.succeeded']);
  t.deepEqual(types.slice(1, 3).sort(), ['system.deploy.approved', 'system.deploy.started']);
  t.like(events.find((e: any) => e.type === 'system.deploy.approved').payload_json, { comment: 'looks good', approvals: 1, required_approvals: 1 });
  const row = await w.db('events').where({ type: 'system.deploy.approved' }).first();
  t.like(row, { actor_type: 'user', actor_id: alice.id });
  const log = (await w.owner.api.get(`${url}/logs?limit=100`)).body.data.map((l: any) => l.line);
  t.true(log[0].includes('waits for 1 approval'), log.join('\n'));
  t.true(
    log.some((l: string) => l.startsWith('deploy succeeded')),
    log.join('\n'),
  );
});

test.serial("the deploy's creator cannot approve it (422); a reviewer rejects it, audited; it cannot be approved after", async (t) => {
  const res = await alice.api.post(`${base()}/production/deploy`, { release_tag: 'v2' });
  t.is(res.body.status, 'awaiting_approval', JSON.stringify(res.body));
  const url = `${base()}/production/deploys/${res.body.id}`;
  const self = await alice.api.post(`${url}/approve`, {});
  t.is(self.statusCode, 422);
  t.regex(self.body.message, /was created by you/);
  const rejected = await bob.api.post(`${url}/reject`, { comment: 'not on a Friday' });
  t.is(rejected.statusCode, 200, JSON.stringify(rejected.body));
  t.like(rejected.body, { status: 'rejected', error_message: `rejected by ${bob.id}: not on a Friday` });
  t.truthy(rejected.body.completed_at);
  t.is((await carol.api.post(`${url}/approve`, {})).statusCode, 409);
  t.is((await carol.api.post(`${url}/reject`, {})).statusCode, 409);
  const event = await w.db('events').where({ type: 'system.deploy.rejected' }).first();
  t.like(event, { actor_type: 'user', actor_id: bob.id });
  t.like(event.payload_json, { deploy_id: res.body.id, comment: 'not on a Friday', status: 'rejected' });
  t.false(w.deployer.calls.includes('deploy production v2'));
});

test.serial('a member of a reviewing group approves', async (t) => {
  const res = await w.owner.api.post(`${base()}/production/deploy`, { release_tag: 'v3' });
  const approved = await carol.api.post(`${base()}/production/deploys/${res.body.id}/approve`, null);
  t.is(approved.statusCode, 200, JSON.stringify(approved.body));
  t.like(await until('production', res.body.id, ended), { status: 'succeeded' });
});

test.serial('required_approvals 2: one approval leaves it awaiting; the same reviewer twice is 409; the second reviewer lets it run', async (t) => {
  const res = await w.owner.api.post(`${base()}/two-keys/deploy`, { release_tag: 'v4' });
  const url = `${base()}/two-keys/deploys/${res.body.id}`;
  const first = await alice.api.post(`${url}/approve`, {});
  t.like(first.body, { status: 'awaiting_approval' });
  t.is(first.body.reviews.length, 1);
  const twice = await alice.api.post(`${url}/approve`, {});
  t.is(twice.statusCode, 409);
  t.regex(twice.body.message, /already reviewed/);
  t.is((await bob.api.post(`${url}/approve`, {})).statusCode, 200);
  t.like(await until('two-keys', res.body.id, ended), { status: 'succeeded' });
  const approvals = (await eventsOf(w, 'system.deploy.approved')).filter((e: any) => e.payload_json.deploy_id === res.body.id);
  t.deepEqual(
    approvals.map((e: any) => e.payload_json.approvals),
    [1, 2],
  );
});

test.serial('wait_seconds: the deploy waits, then runs on its own; with reviewers the timer counts from creation', async (t) => {
  const started = Date.now();
  const res = await w.owner.api.post(`${base()}/timed/deploy`, { release_tag: 'v5' });
  t.like(res.body, { status: 'waiting' });
  t.truthy(res.body.run_after);
  const done = await until('timed', res.body.id, ended);
  t.like(done, { status: 'succeeded' });
  t.true(Date.now() - started >= 1000);

  const held = await w.owner.api.post(`${base()}/approved-timed/deploy`, { release_tag: 'v6' });
  const approved = await alice.api.post(`${base()}/approved-timed/deploys/${held.body.id}/approve`, {});
  t.like(approved.body, { status: 'waiting' });
  t.true(new Date(approved.body.run_after).getTime() - new Date(held.body.created_at).getTime() >= 1999);
  t.like(await until('approved-timed', held.body.id, ended), { status: 'succeeded' });
  t.true(
    new Date((await w.owner.api.get(`${base()}/approved-timed/deploys/${held.body.id}`)).body.completed_at).getTime() >=
      new Date(approved.body.run_after).getTime(),
  );
});
