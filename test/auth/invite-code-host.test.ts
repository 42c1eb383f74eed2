// Invites naming a code-host user: the user's public SSH keys come from the code host's REST API
// (a fake one, GET /users/{login}/keys) when the invite is made, and are registered to whoever
// accepts it; one of them signing in unregistered gets the account, the keys and the membership.
import test from 'ava';
import { as, call, startTestServer, userInOrg, type TestServer } from '../support/server.ts';
import { fakeCodeHost } from '../support/fake-hosts.ts';
import { makeKey, sshSign, tempDir, type SshKey } from './helpers.ts';
import { UnknownIdentityHandlerToken } from '../../core/auth/identity-hooks.ts';

let s: TestServer;
let host: Awaited<ReturnType<typeof fakeCodeHost>>;
let adminToken = '';
let orgA = '';
let orgAdmin: ReturnType<typeof as>;
let dir = '';
let cleanup: () => Promise<void> = async () => {};
let laptop: SshKey;
let desktop: SshKey;
const inviteCount = async () => Number(((await s.kernel.db('invites').count({ n: '*' }).first()) as { n: number }).n);

test.before(async () => {
  ({ dir, cleanup } = await tempDir());
  laptop = await makeKey(dir, 'laptop', 'ed25519');
  desktop = await makeKey(dir, 'desktop', 'ecdsa');
  const ada = await makeKey(dir, 'ada', 'ed25519');
  host = await fakeCodeHost({
    tokens: new Set(),
    repos: new Map(),
    users: new Map([
      // The host lists keys without their comments, and may list one svc cannot read.
      ['octo-cat', [laptop.publicLine.split(' ').slice(0, 2).join(' '), desktop.publicLine, 'ssh-unknown AAAA']],
      ['ada', [ada.publicLine]],
      ['keyless', []],
    ]),
  });
  s = await startTestServer({ overrides: { adapters: { vcshost: { use: 'hub', options: { api_url: `${host.url}/api/v3`, timeout_ms: 300 } } } } });
  adminToken = (await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' })).body.access_token;
  const admin = as(s.server, adminToken);
  orgA = (await admin.post('/orgs', { name: 'Code Host Org' })).body.id;
  orgAdmin = as(s.server, await userInOrg(s.server, adminToken, orgA, 'chadmin@example.com', 'admin'));
});

test.after.always(async () => {
  await s?.stop();
  await host?.close();
  await cleanup();
});

test.serial("an invite naming a code-host user fetches the user's keys; accepting registers them and they sign in", async (t) => {
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, email: 'octo@example.com', code_host_user: 'octo-cat' });
  t.is(invite.statusCode, 201, JSON.stringify(invite.body));
  t.like(invite.body, { code_host_user: 'octo-cat', code_host_keys: 2, status: 'pending' });
  t.like(host.requests.at(-1), { method: 'GET', path: '/api/v3/users/octo-cat/keys' });

  const user = as(
    s.server,
    await userInOrg(s.server, adminToken, (await as(s.server, adminToken).post('/orgs', { name: 'Home' })).body.id, 'octo@example.com'),
  );
  const accepted = await user.post(`/auth/invites/${invite.body.code}/accept`);
  t.is(accepted.statusCode, 200, JSON.stringify(accepted.body));
  const keys = await user.get('/auth/keys');
  t.deepEqual(keys.body.data.map((k: { fingerprint: string }) => k.fingerprint).sort(), [laptop.fingerprint, desktop.fingerprint].sort());
  t.true(keys.body.data.every((k: { label: string }) => k.label === 'code host: octo-cat'));

  const challenge = await call(s.server, 'POST', '/auth/challenge', { email: 'octo@example.com' });
  const login = await call(s.server, 'POST', '/auth/verify', {
    challenge_id: challenge.body.challenge_id,
    signature: await sshSign(desktop, challenge.body.nonce),
  });
  t.is(login.statusCode, 200, JSON.stringify(login.body));
});

test.serial('a code-host user unknown to the host or without keys is 422, a host that does not answer 502; nothing is stored', async (t) => {
  const before = await inviteCount();
  const unknown = await orgAdmin.post('/auth/invites', { org_id: orgA, code_host_user: 'nobody' });
  t.is(unknown.statusCode, 422);
  t.is(unknown.body.message, '"code_host_user" nobody is not a user of the code host');
  const keyless = await orgAdmin.post('/auth/invites', { org_id: orgA, code_host_user: 'keyless' });
  t.is(keyless.statusCode, 422);
  t.is(keyless.body.message, '"code_host_user" keyless has no public SSH keys on the code host');
  const bad = await orgAdmin.post('/auth/invites', { org_id: orgA, code_host_user: '../etc' });
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /code_host_user/);
  host.delayMs = 1_000;
  try {
    const down = await orgAdmin.post('/auth/invites', { org_id: orgA, code_host_user: 'ada' });
    t.is(down.statusCode, 502);
    t.regex(down.body.message, /the code host did not list the keys of ada/);
  } finally {
    host.delayMs = 0;
  }
  t.is(await inviteCount(), before);
});

test.serial('an unregistered code-host key signing in first gets an account, all the invite keys and the membership', async (t) => {
  const key = await makeKey(dir, 'ada-2', 'ed25519');
  host.state.users!.set('ada', [key.publicLine]);
  const invite = await orgAdmin.post('/auth/invites', { org_id: orgA, email: 'ada@example.com', code_host_user: 'ada', role: 'admin' });
  t.is(invite.statusCode, 201, JSON.stringify(invite.body));
  const handler = s.kernel.container.resolve(UnknownIdentityHandlerToken);
  const found = await handler.onUnknownIdentity({ kind: 'ssh', publicKey: key.publicLine, fingerprint: key.fingerprint });
  t.truthy(found);
  t.is((await s.kernel.db('users').where({ id: found!.userId }).first()).email, 'ada@example.com');
  t.is((await s.kernel.db('org_members').where({ org_id: orgA, user_id: found!.userId }).first()).role, 'admin');
  t.is((await s.kernel.db('user_keys').where({ user_id: found!.userId, fingerprint: key.fingerprint })).length, 1);
});
