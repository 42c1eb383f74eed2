// Self-service access requests: anonymous create and status, admin list, approve (one transaction,
// idempotent), reject (reason required; 409 once approved). Row-count tests are serial (run first, alone).
import test from 'ava';
import { as, call, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { makeKey, sshSign, tempDir, type SshKey } from './helpers.ts';

let s: TestServer;
let adminToken = '';
let orgA = '';
let orgB = '';
let orgAdmin: ReturnType<typeof as>;
let member: ReturnType<typeof as>;
let otherAdmin: ReturnType<typeof as>;
let dir = '';
let cleanup: () => Promise<void> = async () => {};
let counter = 0;
const email = (prefix: string) => `${prefix}${++counter}@example.com`;
const hex = (byte: string) => byte.repeat(32);

async function counts() {
  const out: Record<string, number> = {};
  for (const table of ['access_requests', 'users', 'user_keys', 'org_members']) {
    out[table] = Number(((await s.kernel.db(table).count({ n: '*' }).first()) as { n: number }).n);
  }
  return out;
}

const requestAccess = (payload: unknown) => call(s.server, 'POST', '/auth/request-access', payload);

async function newKey(name: string): Promise<SshKey> {
  return makeKey(dir, `${name}-${++counter}`, 'ed25519');
}

async function pending(prefix: string, key?: SshKey) {
  const address = email(prefix);
  const body = key
    ? { org_id: orgA, email: address, ssh_public_key: key.publicLine }
    : { org_id: orgA, email: address, nostr_pubkey: counter.toString(16).padStart(64, 'f') };
  const res = await requestAccess(body);
  if (res.statusCode !== 201) throw new Error(`request-access: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return { email: address, id: res.body.id as string };
}

test.before(async () => {
  const tmp = await tempDir();
  dir = tmp.dir;
  cleanup = tmp.cleanup;
  s = await startTestServer();
  const boot = await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  adminToken = boot.body.access_token;
  const admin = as(s.server, adminToken);
  orgA = (await admin.post('/orgs', { name: 'Request Org A' })).body.id;
  orgB = (await admin.post('/orgs', { name: 'Request Org B' })).body.id;
  orgAdmin = as(s.server, await userInOrg(s.server, adminToken, orgA, 'areq-admin@example.com', 'admin'));
  member = as(s.server, await userInOrg(s.server, adminToken, orgA, 'areq-member@example.com', 'member'));
  otherAdmin = as(s.server, await userInOrg(s.server, adminToken, orgB, 'areq-other@example.com', 'admin'));
});

test.after.always(async () => {
  await s?.stop();
  await cleanup();
});

test('anyone asks with an SSH key: 201 pending; the status is readable by id without a token', async (t) => {
  const key = await newKey('asker');
  const address = email('asker');
  const res = await requestAccess({ org_id: orgA, email: address.toUpperCase(), ssh_public_key: key.publicLine, message: 'hi, I am on the team' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.like(res.body, { org_id: orgA, email: address, status: 'pending', key_type: 'ssh', ssh_fingerprint: key.fingerprint, nostr_pubkey: null });
  t.regex(res.body.id, /^req_/, "the interface's prefix");
  const status = await call(s.server, 'GET', `/auth/request-access/${res.body.id}`);
  t.is(status.statusCode, 200);
  t.deepEqual(Object.keys(status.body).sort(), ['created_at', 'decided_at', 'id', 'org_id', 'reason', 'status']);
  t.like(status.body, { id: res.body.id, status: 'pending', reason: null });
});

test('a nostr key is accepted (stored lower-case)', async (t) => {
  const res = await requestAccess({ org_id: orgA, email: email('nostr'), nostr_pubkey: hex('AB') });
  t.is(res.statusCode, 201);
  t.like(res.body, { key_type: 'nostr', nostr_pubkey: hex('ab'), ssh_fingerprint: null });
});

test('approve: account, SSH key and membership; the requester can then log in; approving again is 200 unchanged', async (t) => {
  const key = await newKey('approved');
  const req = await pending('approved', key);
  const res = await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/approve`, { role: 'admin' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.like(res.body, { status: 'approved', role: 'admin' });
  const user = await s.kernel.db('users').where({ email: req.email }).first();
  t.is(res.body.user_id, user.id);
  t.is((await s.kernel.db('org_members').where({ org_id: orgA, user_id: user.id }).first()).role, 'admin');
  t.is((await s.kernel.db('user_keys').where({ user_id: user.id })).length, 1);
  const again = await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/approve`);
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, res.body);
  const challenge = await call(s.server, 'POST', '/auth/challenge', { email: req.email });
  const login = await call(s.server, 'POST', '/auth/verify', {
    challenge_id: challenge.body.challenge_id,
    signature: await sshSign(key, challenge.body.nonce),
  });
  t.is(login.statusCode, 200, JSON.stringify(login.body));
  t.is((await call(s.server, 'GET', `/auth/request-access/${req.id}`)).body.status, 'approved');
  const reject = await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/reject`, { reason: 'changed my mind' });
  t.is(reject.statusCode, 409);
});

test('approve with a nostr key: the key is registered on the account', async (t) => {
  const address = email('nostrok');
  const created = await requestAccess({ org_id: orgA, email: address, nostr_pubkey: hex('7e') });
  const res = await orgAdmin.post(`/orgs/${orgA}/access-requests/${created.body.id}/approve`);
  t.is(res.statusCode, 200);
  t.is(res.body.role, 'member');
  const key = await s.kernel
    .db('user_nostr_keys')
    .where({ pubkey: hex('7e') })
    .first();
  t.is(key?.user_id, res.body.user_id);
});

test('reject: reason required (400), then 200 with the reason visible to the requester; approving it is 409', async (t) => {
  const req = await pending('rejected');
  t.is((await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/reject`, {})).statusCode, 400);
  t.is((await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/reject`, { reason: '   ' })).statusCode, 400);
  t.is((await call(s.server, 'GET', `/auth/request-access/${req.id}`)).body.status, 'pending');
  const res = await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/reject`, { reason: 'unknown to us' });
  t.is(res.statusCode, 200);
  t.like(res.body, { status: 'rejected', reason: 'unknown to us' });
  const status = await call(s.server, 'GET', `/auth/request-access/${req.id}`);
  t.like(status.body, { status: 'rejected', reason: 'unknown to us' });
  t.is((await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/reject`, { reason: 'again' })).body.reason, 'unknown to us');
  t.is((await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/approve`)).statusCode, 409);
  t.is(await s.kernel.db('users').where({ email: req.email }).first(), undefined);
  const retry = await requestAccess({ org_id: orgA, email: req.email, nostr_pubkey: hex('11') });
  t.is(retry.statusCode, 201, 'a rejected requester may ask again');
});

test('list: newest first, filtered by status; members get 403, another org 404', async (t) => {
  const first = await pending('listed');
  const second = await pending('listed');
  const list = await orgAdmin.get(`/orgs/${orgA}/access-requests?status=pending&limit=100`);
  t.is(list.statusCode, 200);
  const ids = list.body.data.map((r: { id: string }) => r.id);
  t.true(ids.indexOf(second.id) < ids.indexOf(first.id) && ids.indexOf(first.id) >= 0);
  t.true(list.body.data.every((r: { status: string }) => r.status === 'pending'));
  const denied = await member.get(`/orgs/${orgA}/access-requests`);
  t.is(denied.statusCode, 403);
  t.is(denied.body.message, 'missing permission members:write');
  t.is((await otherAdmin.get(`/orgs/${orgA}/access-requests`)).statusCode, 404);
  t.is((await otherAdmin.get(`/orgs/${orgB}/access-requests`)).body.data.length, 0);
  t.is((await orgAdmin.get(`/orgs/${orgA}/access-requests?status=maybe`)).statusCode, 400);
});

test.serial('approval is atomic: a key owned by someone else fails with 409 and leaves no account or membership', async (t) => {
  const key = await newKey('taken');
  const owner = await userInOrg(s.server, adminToken, orgB, email('keyowner'));
  t.is((await as(s.server, owner).post('/auth/keys', { public_key: key.publicLine })).statusCode, 201);
  const req = await pending('atomic', key);
  const before = await counts();
  const res = await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/approve`);
  t.is(res.statusCode, 409, JSON.stringify(res.body));
  t.deepEqual(await counts(), before);
  t.is(await s.kernel.db('users').where({ email: req.email }).first(), undefined);
  t.is((await call(s.server, 'GET', `/auth/request-access/${req.id}`)).body.status, 'pending');
});

test.serial('decisions by a member (403), another org (404) or on a request of another org (404) write nothing', async (t) => {
  const req = await pending('guarded');
  const before = await counts();
  const denied = await member.post(`/orgs/${orgA}/access-requests/${req.id}/approve`);
  t.is(denied.statusCode, 403);
  t.is(denied.body.message, 'missing permission members:write');
  t.is((await member.post(`/orgs/${orgA}/access-requests/${req.id}/reject`, { reason: 'no' })).statusCode, 403);
  t.is((await otherAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/approve`)).statusCode, 404);
  t.is((await otherAdmin.post(`/orgs/${orgB}/access-requests/${req.id}/approve`)).statusCode, 404);
  t.is((await orgAdmin.post(`/orgs/${orgA}/access-requests/req_${'0'.repeat(26)}/approve`)).statusCode, 404);
  t.is((await orgAdmin.post(`/orgs/${orgA}/access-requests/areq_${'0'.repeat(26)}/approve`)).statusCode, 404, 'ids minted before (areq_) are still ids');
  t.is((await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/approve`, { role: 'owner' })).statusCode, 403);
  t.is((await orgAdmin.post(`/orgs/${orgA}/access-requests/${req.id}/approve`, { role: 'king' })).statusCode, 400);
  t.deepEqual(await counts(), before);
  t.is((await call(s.server, 'GET', `/auth/request-access/${req.id}`)).body.status, 'pending');
});

test.serial('one open request per org and e-mail (409); an unknown or deleted org is 404', async (t) => {
  const req = await pending('dupe');
  const before = await counts();
  const again = await requestAccess({ org_id: orgA, email: req.email, nostr_pubkey: hex('22') });
  t.is(again.statusCode, 409);
  const missing = await requestAccess({ org_id: `org_${'0'.repeat(26)}`, email: email('lost'), nostr_pubkey: hex('33') });
  t.is(missing.statusCode, 404);
  t.deepEqual(await counts(), before);
  t.is((await call(s.server, 'GET', `/auth/request-access/req_${'0'.repeat(26)}`)).statusCode, 404);
  t.is((await call(s.server, 'GET', `/auth/request-access/areq_${'0'.repeat(26)}`)).statusCode, 404);
  t.is((await call(s.server, 'GET', '/auth/request-access/whatever')).statusCode, 400);
});

for (const [name, payload] of [
  ['no key', { org_id: 'ORG', email: 'a@example.com' }],
  ['both keys', { org_id: 'ORG', email: 'a@example.com', nostr_pubkey: 'ab'.repeat(32), ssh_public_key: 'ssh-ed25519 AAAA' }],
  ['a short nostr key', { org_id: 'ORG', email: 'a@example.com', nostr_pubkey: 'ab'.repeat(31) }],
  ['a non-hex nostr key', { org_id: 'ORG', email: 'a@example.com', nostr_pubkey: 'zz'.repeat(32) }],
  ['a broken SSH key', { org_id: 'ORG', email: 'a@example.com', ssh_public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA==' }],
  ['no email', { org_id: 'ORG', nostr_pubkey: 'ab'.repeat(32) }],
  ['a bad email', { org_id: 'ORG', email: 'nope', nostr_pubkey: 'ab'.repeat(32) }],
  ['a bad org id', { org_id: 'acme', email: 'a@example.com', nostr_pubkey: 'ab'.repeat(32) }],
  ['an unknown field', { org_id: 'ORG', email: 'a@example.com', nostr_pubkey: 'ab'.repeat(32), role: 'owner' }],
  ['a huge message', { org_id: 'ORG', email: 'a@example.com', nostr_pubkey: 'ab'.repeat(32), message: 'x'.repeat(1001) }],
] as const) {
  test.serial(`malformed request (${name}): 400, nothing written`, async (t) => {
    const before = await counts();
    const body = JSON.parse(JSON.stringify(payload).replace('"ORG"', JSON.stringify(orgA)));
    const res = await requestAccess(body);
    t.is(res.statusCode, 400, JSON.stringify(res.body));
    t.deepEqual(await counts(), before);
  });
}

test.serial('a body over 32 KB is refused before anything is read', async (t) => {
  const res = await requestAccess({ org_id: orgA, email: 'big@example.com', nostr_pubkey: hex('ab'), message: 'x'.repeat(40_000) });
  t.is(res.statusCode, 413);
});
