// Invites: create (members:write), list, revoke, accept (single use, expiry), e-mail invites applied at
// SSH login, identity-targeted invites through the UnknownIdentityHandler hook, and app-branded invites.
// Tests that compare row counts are serial (ava runs them first, alone).
import test from 'ava';
import { as, call, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { DAY, makeKey, sshSign, tempDir, within, type SshKey } from './helpers.ts';
import { UnknownIdentityHandlerToken } from '../../core/auth/identity-hooks.ts';

let s: TestServer;
let admin: ReturnType<typeof as>;
let adminToken = '';
let orgA = '';
let orgB = '';
let orgAdmin: ReturnType<typeof as>;
let orgOwner: ReturnType<typeof as>;
let member: ReturnType<typeof as>;
let otherAdmin: ReturnType<typeof as>;
let dir = '';
let cleanup: () => Promise<void> = async () => {};
let counter = 0;
const email = (prefix: string) => `${prefix}${++counter}@example.com`;
const inviteCount = async () => Number(((await s.kernel.db('invites').count({ n: '*' }).first()) as { n: number }).n);

/** A fresh account with an unscoped token, member of org B only (so it is a stranger to org A). */
async function stranger(prefix: string) {
  const address = email(prefix);
  const token = await userInOrg(s.server, adminToken, orgB, address);
  return { email: address, token, api: as(s.server, token) };
}

test.before(async () => {
  const tmp = await tempDir();
  dir = tmp.dir;
  cleanup = tmp.cleanup;
  s = await startTestServer();
  const boot = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  adminToken = boot.body.access_token;
  admin = as(s.server, adminToken);
  orgA = (await admin.post('/orgs', { name: 'Invite Org A' })).body.id;
  orgB = (await admin.post('/orgs', { name: 'Invite Org B' })).body.id;
  orgAdmin = as(s.server, await userInOrg(s.server, adminToken, orgA, 'orgadmin@example.com', 'admin'));
  orgOwner = as(s.server, await userInOrg(s.server, adminToken, orgA, 'orgowner@example.com', 'owner'));
  member = as(s.server, await userInOrg(s.server, adminToken, orgA, 'member@example.com', 'member'));
  otherAdmin = as(s.server, await userInOrg(s.server, adminToken, orgB, 'otheradmin@example.com', 'admin'));
});

test.after.always(async () => {
  await s?.stop();
  await cleanup();
});

test('an org admin creates an invite: 201, code shown once, member role and 7 days by default', async (t) => {
  const t0 = Date.now();
  const res = await orgAdmin.post('/auth/invites', { org_id: orgA, provider_hint: 'github', identity_hint: 'octocat' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.like(res.body, { org_id: orgA, role: 'member', status: 'pending', provider_hint: 'github', identity_hint: 'octocat', email: null, email_sent: false });
  t.regex(res.body.code, /^svcinv_[A-Za-z0-9_-]{32}$/);
  within(t, res.body.expires_at, t0 + 7 * DAY, Date.now() + 7 * DAY);
  const row = await s.kernel.db('invites').where({ id: res.body.id }).first();
  t.not(row.code_hash, res.body.code);
  const list = await orgAdmin.get(`/orgs/${orgA}/invites`);
  t.is(list.statusCode, 200);
  const listed = list.body.data.find((i: { id: string }) => i.id === res.body.id);
  t.like(listed, { status: 'pending' });
  t.false('code' in listed);
  t.false(JSON.stringify(list.body).includes(res.body.code));
});

test('accepting: the caller joins with the role; the code is single-use (410 afterwards)', async (t) => {
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, role: 'admin', redirect_url: 'https://app.example.test/welcome', expires_in_days: 2 });
  t.is(invite.body.redirect_url, 'https://app.example.test/welcome');
  const user = await stranger('accept');
  const res = await user.api.post(`/auth/invites/${invite.body.code}/accept`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(res.body.membership, { org_id: orgA, role: 'admin' });
  t.like(res.body.invite, { id: invite.body.id, status: 'accepted' });
  t.is((await user.api.get(`/orgs/${orgA}`)).statusCode, 200);
  const again = await (await stranger('second')).api.post(`/auth/invites/${invite.body.code}/accept`);
  t.is(again.statusCode, 410);
  t.is(again.body.message, 'invite already used');
});

test('an existing member keeps a stronger role when accepting a weaker invite', async (t) => {
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, role: 'member' });
  const res = await orgAdmin.post(`/auth/invites/${invite.body.code}/accept`);
  t.is(res.statusCode, 200);
  t.deepEqual(res.body.membership, { org_id: orgA, role: 'admin' });
});

test('an expired code is 410; an unknown code 404; a malformed code 400', async (t) => {
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, expires_at: new Date(Date.now() + 60_000).toISOString() });
  t.is(invite.statusCode, 201);
  await s.kernel
    .db('invites')
    .where({ id: invite.body.id })
    .update({ expires_at: new Date(Date.now() - 1000) });
  const user = await stranger('late');
  const expired = await user.api.post(`/auth/invites/${invite.body.code}/accept`);
  t.is(expired.statusCode, 410);
  t.is(expired.body.message, 'invite expired');
  t.is(
    (
      await s.kernel
        .db('org_members')
        .where({ org_id: orgA })
        .whereIn('user_id', s.kernel.db('users').select('id').where({ email: user.email }))
    ).length,
    0,
  );
  const listed = (await orgAdmin.get(`/orgs/${orgA}/invites?limit=100`)).body.data.find((i: { id: string }) => i.id === invite.body.id);
  t.is(listed.status, 'expired');
  t.is((await user.api.post(`/auth/invites/svcinv_${'A'.repeat(32)}/accept`)).statusCode, 404);
  t.is((await user.api.post('/auth/invites/nonsense/accept')).statusCode, 400);
  t.is((await call(s.server, 'POST', `/auth/invites/${invite.body.code}/accept`)).statusCode, 401);
});

test('revoking: 204 (again 204), the code then answers 410; an accepted invite cannot be revoked (409)', async (t) => {
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA });
  t.is((await orgAdmin.delete(`/orgs/${orgA}/invites/${invite.body.id}`)).statusCode, 204);
  t.is((await orgAdmin.delete(`/orgs/${orgA}/invites/${invite.body.id}`)).statusCode, 204);
  const res = await (await stranger('revoked')).api.post(`/auth/invites/${invite.body.code}/accept`);
  t.is(res.statusCode, 410);
  t.is(res.body.message, 'invite revoked');
  const used = await orgAdmin.post('/auth/invites', { org_id: orgA });
  await (await stranger('used')).api.post(`/auth/invites/${used.body.code}/accept`);
  t.is((await orgAdmin.delete(`/orgs/${orgA}/invites/${used.body.id}`)).statusCode, 409);
  t.is((await otherAdmin.delete(`/orgs/${orgA}/invites/${used.body.id}`)).statusCode, 404);
  t.is((await otherAdmin.delete(`/orgs/${orgB}/invites/${used.body.id}`)).statusCode, 404);
});

test('an e-mail invite is only for that account (403 for another)', async (t) => {
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, email: 'someone.else@example.com' });
  const res = await (await stranger('wrongmail')).api.post(`/auth/invites/${invite.body.code}/accept`);
  t.is(res.statusCode, 403);
  t.is((await s.kernel.db('invites').where({ id: invite.body.id }).first()).accepted_at, null);
});

test.serial('a member cannot invite (403 naming members:write), nothing written', async (t) => {
  const before = await inviteCount();
  const res = await member.post('/auth/invites', { org_id: orgA });
  t.is(res.statusCode, 403);
  t.is(res.body.message, 'missing permission members:write');
  t.is((await member.get(`/orgs/${orgA}/invites`)).statusCode, 403);
  t.is(await inviteCount(), before);
});

test.serial('another org: 404 for creating, listing and revoking', async (t) => {
  const before = await inviteCount();
  const res = await otherAdmin.post('/auth/invites', { org_id: orgA });
  t.is(res.statusCode, 404);
  t.is(res.body.message, `org ${orgA} not found`);
  t.is((await otherAdmin.get(`/orgs/${orgA}/invites`)).statusCode, 404);
  t.is(await inviteCount(), before);
});

test.serial('only an owner invites an owner', async (t) => {
  const before = await inviteCount();
  const res = await orgAdmin.post('/auth/invites', { org_id: orgA, role: 'owner' });
  t.is(res.statusCode, 403);
  t.is(await inviteCount(), before);
  const owner = await orgOwner.post('/auth/invites', { org_id: orgA, role: 'owner' });
  t.is(owner.statusCode, 201);
});

for (const [name, payload] of [
  ['no org', { role: 'member' }],
  ['a bad org id', { org_id: 'org_nope' }],
  ['an unknown role', { org_id: 'ORG', role: 'king' }],
  ['a bad email', { org_id: 'ORG', email: 'not-mail' }],
  ['both expiries', { org_id: 'ORG', expires_in_days: 1, expires_at: new Date(Date.now() + DAY).toISOString() }],
  ['a past expiry', { org_id: 'ORG', expires_at: '2000-01-01T00:00:00Z' }],
  ['expires_in_days 0', { org_id: 'ORG', expires_in_days: 0 }],
  ['a bad redirect', { org_id: 'ORG', redirect_url: 'javascript:alert(1)' }],
  ['an unknown field', { org_id: 'ORG', code: 'mine' }],
  ['a broken SSH identity hint', { org_id: 'ORG', identity_hint: 'ssh-ed25519 AAAA' }],
] as const) {
  test.serial(`malformed invite (${name}): 400, nothing written`, async (t) => {
    const before = await inviteCount();
    const body = JSON.parse(JSON.stringify(payload).replace('"ORG"', JSON.stringify(orgA)));
    const res = await orgAdmin.post('/auth/invites', body);
    t.is(res.statusCode, 400, JSON.stringify(res.body));
    t.is(await inviteCount(), before);
  });
}

test('invited by e-mail, the user registers a key and logs in by SSH: the membership is theirs', async (t) => {
  const user = await stranger('sshinvite');
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, email: user.email, role: 'admin' });
  const key: SshKey = await makeKey(dir, 'sshinvite', 'ed25519');
  t.is((await user.api.post('/auth/keys', { public_key: key.publicLine })).statusCode, 201);
  const challenge = await call(s.server, 'POST', '/auth/challenge', { email: user.email });
  const signature = await sshSign(key, challenge.body.nonce);
  const login = await call(s.server, 'POST', '/auth/verify', { challenge_id: challenge.body.challenge_id, signature });
  t.is(login.statusCode, 200, JSON.stringify(login.body));
  const me = await as(s.server, login.body.access_token).get('/auth/me');
  t.deepEqual(
    me.body.orgs.map((o: { id: string; role: string }) => [o.id, o.role]).sort(),
    [
      [orgA, 'admin'],
      [orgB, 'member'],
    ].sort(),
  );
  const row = await s.kernel.db('invites').where({ id: invite.body.id }).first();
  t.is(row.accepted_by, login.body.user.id);
});

test('identity-targeted (SSH): an unknown key matching the hint gets an account, its key and the membership, once', async (t) => {
  const key = await makeKey(dir, 'targeted', 'ed25519');
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, identity_hint: key.fingerprint, email: 'targeted@example.com' });
  t.is(invite.statusCode, 201);
  const handler = s.kernel.container.resolve(UnknownIdentityHandlerToken);
  const found = await handler.onUnknownIdentity({ kind: 'ssh', publicKey: key.publicLine, fingerprint: key.fingerprint });
  t.truthy(found);
  const user = await s.kernel.db('users').where({ id: found!.userId }).first();
  t.is(user.email, 'targeted@example.com');
  t.is((await s.kernel.db('user_keys').where({ user_id: user.id, fingerprint: key.fingerprint })).length, 1);
  t.is((await s.kernel.db('org_members').where({ org_id: orgA, user_id: user.id }).first()).role, 'member');
  t.is(await handler.onUnknownIdentity({ kind: 'ssh', publicKey: key.publicLine, fingerprint: key.fingerprint }), null);
  const challenge = await call(s.server, 'POST', '/auth/challenge', { email: 'targeted@example.com' });
  const login = await call(s.server, 'POST', '/auth/verify', {
    challenge_id: challenge.body.challenge_id,
    signature: await sshSign(key, challenge.body.nonce),
  });
  t.is(login.statusCode, 200);
});

test('identity-targeted (nostr): a hex key hint, no e-mail: a placeholder account joins; other keys get nothing', async (t) => {
  const pubkey = 'ab'.repeat(32);
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, identity_hint: pubkey.toUpperCase(), provider_hint: 'nostr' });
  t.is(invite.body.identity_hint, pubkey);
  const handler = s.kernel.container.resolve(UnknownIdentityHandlerToken);
  t.is(await handler.onUnknownIdentity({ kind: 'nostr', publicKey: 'cd'.repeat(32) }), null);
  const found = await handler.onUnknownIdentity({ kind: 'nostr', publicKey: pubkey });
  t.truthy(found);
  const user = await s.kernel.db('users').where({ id: found!.userId }).first();
  t.regex(user.email, /^nostr-[0-9a-f]{16}@identity\.invalid$/);
  t.truthy(await s.kernel.db('org_members').where({ org_id: orgA, user_id: user.id }).first());
  t.is((await s.kernel.db('user_nostr_keys').where({ pubkey }).first())?.user_id, user.id);
});

test('app invites: e-mail and branding required; the invite carries the branding', async (t) => {
  const res = await orgAdmin.post('/auth/app-invites', {
    org_id: orgA,
    email: 'appuser@example.com',
    app: { app_name: 'Shop', primary_color: '#336699' },
    redirect_url: 'https://shop.example.test/',
  });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(res.body.app, { app_name: 'Shop', primary_color: '#336699' });
  t.is(res.body.email, 'appuser@example.com');
  t.is((await orgAdmin.post('/auth/app-invites', { org_id: orgA, email: 'x@example.com' })).statusCode, 400);
  t.is((await member.post('/auth/app-invites', { org_id: orgA, email: 'x@example.com', app: { app_name: 'Shop' } })).statusCode, 403);
});
