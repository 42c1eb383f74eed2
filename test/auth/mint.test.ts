// POST /auth/mint: admin-only tokens limited to one org or project, whose role caps the membership's.
import test from 'ava';
import { as, call, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { DAY, makeKey, sshSign, tempDir, within } from './helpers.ts';

let s: TestServer;
let admin: ReturnType<typeof as>;
let adminToken = '';
let orgA = '';
let orgB = '';
let p1 = '';
let p2 = '';
let p3 = '';
let counter = 0;
const email = (prefix: string) => `${prefix}${++counter}@example.com`;

const userByEmail = (address: string) => s.kernel.db('users').whereRaw('lower(email) = lower(?)', [address]).first();

async function newOrg(name: string): Promise<string> {
  const res = await admin.post('/orgs', { name });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

async function newProject(orgId: string, name: string, slug: string): Promise<string> {
  const res = await admin.post('/projects', { org_id: orgId, name, slug });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

test.before(async () => {
  s = await startTestServer();
  const boot = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  adminToken = boot.body.access_token;
  admin = as(s.server, adminToken);
  orgA = await newOrg('Org A');
  orgB = await newOrg('Org B');
  p1 = await newProject(orgA, 'Alpha', 'alpha1');
  p2 = await newProject(orgA, 'Beta', 'beta2');
  p3 = await newProject(orgB, 'Gamma', 'gamma3');
});

test.after.always(async () => {
  await s?.stop();
});

test('org scope for a new e-mail: 201, user and membership created, token limited to that org', async (t) => {
  const address = email('orgbot');
  const t0 = Date.now();
  const res = await admin.post('/auth/mint', { email: address, org_id: orgA, role: 'admin', display_name: 'Org Bot' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.is(res.body.token_type, 'Bearer');
  t.deepEqual(res.body.scope, { type: 'org', id: orgA });
  t.is(res.body.role, 'admin');
  t.like(res.body.user, { email: address, display_name: 'Org Bot', is_admin: false });
  within(t, res.body.expires_at, t0 + DAY, Date.now() + DAY);

  const user = await userByEmail(address);
  t.is(user.id, res.body.user.id);
  t.false(user.is_admin);
  const memberships = await s.kernel.db('org_members').where({ user_id: user.id });
  t.deepEqual(
    memberships.map((m) => [m.org_id, m.role]),
    [[orgA, 'admin']],
  );
  t.is((await s.kernel.db('project_members').where({ user_id: user.id })).length, 0);

  const bot = as(s.server, res.body.access_token);
  const own = await bot.get(`/orgs/${orgA}`);
  t.is(own.statusCode, 200);
  t.is(own.body.id, orgA);
  const other = await bot.get(`/orgs/${orgB}`);
  t.is(other.statusCode, 404);
  t.is(other.body.message, `org ${orgB} not found`);
  const orgs = await bot.get('/orgs');
  t.deepEqual(
    orgs.body.data.map((o: { id: string }) => o.id),
    [orgA],
  );
  const projects = await bot.get('/projects');
  t.deepEqual(projects.body.data.map((p: { id: string }) => p.id).sort(), [p1, p2].sort());
  t.is((await bot.get(`/projects/${p3}`)).statusCode, 404);

  const orgCount = (await s.kernel.db('orgs').count({ n: '*' }).first()) as { n: string };
  const create = await bot.post('/orgs', { name: 'Bot Org' });
  t.is(create.statusCode, 403);
  t.is(create.body.message, `a token scoped to org ${orgA} cannot create orgs`);
  const ensure = await bot.post('/orgs/ensure', { name: 'Bot Org' });
  t.is(ensure.statusCode, 403);
  t.is(((await s.kernel.db('orgs').count({ n: '*' }).first()) as { n: string }).n, orgCount.n, 'no org was created');

  const me = await bot.get('/auth/me');
  t.is(me.statusCode, 200);
  t.deepEqual(me.body.token.scope, { type: 'org', id: orgA });
  t.is(me.body.token.role, 'admin');
  t.is(me.body.user.is_admin, false);
});

test('project scope: the token sees only that project', async (t) => {
  const address = email('projbot');
  const res = await admin.post('/auth/mint', { email: address, project_id: p1 });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(res.body.scope, { type: 'project', id: p1 });
  t.is(res.body.role, 'member', 'role defaults to member');
  const user = await userByEmail(address);
  t.deepEqual(
    (await s.kernel.db('project_members').where({ user_id: user.id })).map((m) => [m.project_id, m.role]),
    [[p1, 'member']],
  );
  t.is((await s.kernel.db('org_members').where({ user_id: user.id })).length, 0);

  const bot = as(s.server, res.body.access_token);
  const list = await bot.get('/projects');
  t.is(list.statusCode, 200);
  t.deepEqual(
    list.body.data.map((p: { id: string }) => p.id),
    [p1],
  );
  t.is(list.body.pagination.total, 1);
  t.is((await bot.get(`/projects/${p1}`)).statusCode, 200);
  const sibling = await bot.get(`/projects/${p2}`);
  t.is(sibling.statusCode, 404);
  t.is(sibling.body.message, `project ${p2} not found`);
  t.is((await bot.get(`/projects/${p3}`)).statusCode, 404);
  t.is((await bot.get(`/orgs/${orgA}`)).statusCode, 404, 'a project token does not reach its org');

  const projectCount = (await s.kernel.db('projects').count({ n: '*' }).first()) as { n: string };
  const create = await bot.post('/projects', { org_id: orgA, name: 'Sneaky', slug: 'sneaky1' });
  t.is(create.statusCode, 404);
  t.is(((await s.kernel.db('projects').count({ n: '*' }).first()) as { n: string }).n, projectCount.n);
});

test('the minted role caps the membership: an org owner minted as member cannot PATCH the org', async (t) => {
  const orgC = await newOrg('Org C');
  const address = email('owner');
  const ownerToken = await userInOrg(s.server, adminToken, orgC, address, 'owner');
  const owner = await userByEmail(address);

  const res = await admin.post('/auth/mint', { email: address, org_id: orgC, role: 'member' });
  t.is(res.statusCode, 201);
  t.is(res.body.role, 'member');
  t.is(res.body.user.id, owner.id, 'the existing account is used');
  const membership = await s.kernel.db('org_members').where({ org_id: orgC, user_id: owner.id }).first();
  t.is(membership.role, 'owner', 'an existing membership keeps its role');

  const capped = as(s.server, res.body.access_token);
  t.is((await capped.get(`/orgs/${orgC}`)).statusCode, 200);
  const patch = await capped.patch(`/orgs/${orgC}`, { name: 'Renamed by a capped token' });
  t.is(patch.statusCode, 403);
  t.is(patch.body.message, 'missing permission orgs:write');
  t.is((await s.kernel.db('orgs').where({ id: orgC }).first()).name, 'Org C');
  const add = await capped.post(`/orgs/${orgC}/members`, { email: email('friend') });
  t.is(add.statusCode, 403);
  t.is(add.body.message, 'missing permission members:write');

  // The owner's own unscoped token still can.
  t.is((await as(s.server, ownerToken).patch(`/orgs/${orgC}`, { name: 'Org C2' })).statusCode, 200);
});

test('a minted role above the membership does not raise it', async (t) => {
  const orgD = await newOrg('Org D');
  const address = email('member');
  await userInOrg(s.server, adminToken, orgD, address, 'member');
  const res = await admin.post('/auth/mint', { email: address, org_id: orgD, role: 'owner' });
  t.is(res.statusCode, 201);
  t.is(res.body.role, 'owner');
  t.is(
    (
      await s.kernel
        .db('org_members')
        .where({ org_id: orgD })
        .whereIn('user_id', s.kernel.db('users').select('id').where({ email: address }))
        .first()
    ).role,
    'member',
  );
  const patch = await as(s.server, res.body.access_token).patch(`/orgs/${orgD}`, { name: 'Nope' });
  t.is(patch.statusCode, 403);
  t.is(patch.body.message, 'missing permission orgs:write');
});

test('minting again for the same user and scope keeps one membership', async (t) => {
  const address = email('repeat');
  t.is((await admin.post('/auth/mint', { email: address, org_id: orgB, role: 'admin' })).statusCode, 201);
  t.is((await admin.post('/auth/mint', { email: address.toUpperCase(), org_id: orgB, role: 'member' })).statusCode, 201);
  const user = await userByEmail(address);
  t.is((await s.kernel.db('users').whereRaw('lower(email) = ?', [address])).length, 1);
  t.deepEqual(
    (await s.kernel.db('org_members').where({ user_id: user.id })).map((m) => m.role),
    ['admin'],
  );
});

test('bad input: both or neither scope, bad role or e-mail are 400 and create nothing', async (t) => {
  const address = email('invalid');
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ email: address, org_id: orgA, project_id: p1 }, /contains a conflict between exclusive peers \[org_id, project_id\]/],
    [{ email: address }, /must contain at least one of \[org_id, project_id\]/],
    [{ email: address, org_id: orgA, role: 'root' }, /"role" must be one of \[owner, admin, member\]/],
    [{ email: 'not-an-email', org_id: orgA }, /"email" must be a valid email/],
    [{ org_id: orgA }, /"email" is required/],
    [{ email: address, org_id: 'org_nope' }, /"org_id" .*org_<base32> id/],
    [{ email: address, project_id: 'proj_nope' }, /"project_id" .*proj_<base32> id/],
    [{ email: address, org_id: orgA, is_admin: true }, /"is_admin" is not allowed/],
  ];
  for (const [payload, message] of cases) {
    const res = await admin.post('/auth/mint', payload);
    t.is(res.statusCode, 400, JSON.stringify(payload));
    t.regex(res.body.message, message);
  }
  t.falsy(await userByEmail(address));
});

test('an unknown org or project is 404 and creates no user', async (t) => {
  const address = email('lost');
  const org = await admin.post('/auth/mint', { email: address, org_id: 'org_01h455vb4pex5vsknk084sn02q' });
  t.is(org.statusCode, 404);
  t.is(org.body.message, 'org org_01h455vb4pex5vsknk084sn02q not found');
  const project = await admin.post('/auth/mint', { email: address, project_id: 'proj_01h455vb4pex5vsknk084sn02q' });
  t.is(project.statusCode, 404);
  t.is(project.body.message, 'project proj_01h455vb4pex5vsknk084sn02q not found');
  t.falsy(await userByEmail(address));
});

test('only the system administrator mints: an org owner and a scoped admin token are 403, no token 401', async (t) => {
  const address = email('victim');
  const ownerToken = await userInOrg(s.server, adminToken, orgA, email('orgowner'), 'owner');
  const byOwner = await as(s.server, ownerToken).post('/auth/mint', { email: address, org_id: orgA });
  t.is(byOwner.statusCode, 403);
  t.is(byOwner.body.message, 'this operation needs the system administrator');

  const scopedAdmin = await admin.post('/auth/mint', { email: 'admin@example.com', org_id: orgA, role: 'owner' });
  t.is(scopedAdmin.statusCode, 201);
  t.true(scopedAdmin.body.user.is_admin, 'the account is the administrator');
  const byScoped = await as(s.server, scopedAdmin.body.access_token).post('/auth/mint', { email: address, org_id: orgA });
  t.is(byScoped.statusCode, 403, 'a scoped token is never the system administrator');
  t.is(byScoped.body.message, 'this operation needs the system administrator');
  t.is((await as(s.server, scopedAdmin.body.access_token).get(`/orgs/${orgB}`)).statusCode, 404, 'nor does it see other orgs');

  const anon = await call(s.server, 'POST', '/auth/mint', { email: address, org_id: orgA });
  t.is(anon.statusCode, 401);
  t.is(anon.body.message, 'missing bearer token');
  t.falsy(await userByEmail(address));
});

test('a scoped token cannot manage the account’s SSH keys (no way out of its scope)', async (t) => {
  const tmp = await tempDir();
  t.teardown(tmp.cleanup);
  const key = await makeKey(tmp.dir, 'escape', 'ed25519');
  // The administrator's own account, minted into one org for a bot: registering a key and logging in
  // with it would give back an unscoped administrator token.
  const scoped = await admin.post('/auth/mint', { email: 'admin@example.com', org_id: orgA, role: 'member' });
  const bot = as(s.server, scoped.body.access_token);
  const add = await bot.post('/auth/keys', { public_key: key.publicLine });
  t.is(add.statusCode, 403);
  t.is(add.body.message, `a token scoped to org ${orgA} cannot manage SSH keys; use a login token`);
  t.is((await s.kernel.db('user_keys').where({ fingerprint: key.fingerprint })).length, 0);

  const own = await admin.post('/auth/keys', { public_key: key.publicLine });
  t.is(own.statusCode, 201);
  const list = await bot.get('/auth/keys');
  t.is(list.statusCode, 403);
  const del = await bot.delete(`/auth/keys/${own.body.id}`);
  t.is(del.statusCode, 403);
  t.truthy(await s.kernel.db('user_keys').where({ id: own.body.id }).first());
});

test('/auth/me under a scoped token shows only what the scope reaches', async (t) => {
  const address = email('wide');
  const unscoped = await userInOrg(s.server, adminToken, orgA, address, 'admin');
  t.is((await admin.post(`/orgs/${orgB}/members`, { email: address, role: 'member' })).statusCode, 201);
  t.is((await admin.post(`/projects/${p3}/members`, { email: address, role: 'member' })).statusCode, 201);
  const full = await as(s.server, unscoped).get('/auth/me');
  t.deepEqual(full.body.orgs.map((o: { id: string }) => o.id).sort(), [orgA, orgB].sort());
  // An org's members reach all its projects: listed with the stronger of the org and project roles.
  const roles = Object.fromEntries(full.body.projects.map((p: { id: string; role: string }) => [p.id, p.role]));
  t.deepEqual(roles, { [p1]: 'admin', [p2]: 'admin', [p3]: 'member' });

  const orgScoped = await admin.post('/auth/mint', { email: address, org_id: orgA, role: 'member' });
  const meOrg = await as(s.server, orgScoped.body.access_token).get('/auth/me');
  t.is(meOrg.statusCode, 200);
  t.deepEqual(
    meOrg.body.orgs.map((o: { id: string }) => o.id),
    [orgA],
  );
  t.deepEqual(meOrg.body.projects.map((p: { id: string }) => p.id).sort(), [p1, p2].sort(), "the org's projects, none of another org");

  const projectScoped = await admin.post('/auth/mint', { email: address, project_id: p3 });
  const meProject = await as(s.server, projectScoped.body.access_token).get('/auth/me');
  t.deepEqual(meProject.body.orgs, []);
  t.deepEqual(
    meProject.body.projects.map((p: { id: string }) => p.id),
    [p3],
  );
});

test('public_key onboards the user: registered on the account, then SSH login works; a bad key is 400 and creates nothing', async (t) => {
  const { dir, cleanup } = await tempDir();
  try {
    const key = await makeKey(dir, 'onboard', 'ed25519');
    const address = email('onboard');
    const minted = await admin.post('/auth/mint', { email: address, org_id: orgA, public_key: key.publicLine });
    t.is(minted.statusCode, 201, JSON.stringify(minted.body));
    const stored = await s.kernel.db('user_keys').where({ user_id: minted.body.user.id });
    t.deepEqual(
      stored.map((k) => k.fingerprint),
      [key.fingerprint],
    );

    const challenge = await call(s.server, 'POST', '/auth/challenge', { email: address });
    const verified = await call(s.server, 'POST', '/auth/verify', {
      challenge_id: challenge.body.challenge_id,
      signature: await sshSign(key, challenge.body.nonce),
    });
    t.is(verified.statusCode, 200, JSON.stringify(verified.body));
    t.is(verified.body.user.email, address);

    const badAddress = email('badkey');
    const bad = await admin.post('/auth/mint', { email: badAddress, org_id: orgA, public_key: 'ssh-ed25519 not-base64!' });
    t.is(bad.statusCode, 400);
    t.regex(bad.body.message, /"public_key"/);
    t.falsy(await userByEmail(badAddress), 'the failed mint created no user');
  } finally {
    await cleanup();
  }
});
