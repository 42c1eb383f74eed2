// `svc auth keys add --nostr HEX` and `svc auth login --nostr --key-file F` against the real API.
import test from 'ava';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { schnorr } from '@noble/curves/secp256k1.js';
import { as, call, startTestServer, type TestServer } from '../support/server.ts';
import { runCli, tempHome } from '../cli/helpers.ts';
import { nostrPublicKey } from '../../cli/nostr.ts';

let s: TestServer;
let adminToken = '';

test.before(async () => {
  s = await startTestServer();
  adminToken = (await call(s.server, 'POST', '/auth/bootstrap', { email: 'admin@example.com' })).body.access_token;
});

test.after.always(async () => {
  await s?.stop();
});

test('keys add --nostr registers the key; login --nostr stores a working token', async (t) => {
  const home = await tempHome();
  const secret = schnorr.utils.randomSecretKey();
  const pubkey = nostrPublicKey(secret);
  const keyFile = join(home, 'nostr.key');
  await writeFile(keyFile, `${Buffer.from(secret).toString('hex')}\n`, { mode: 0o600 });

  const add = await runCli(home, ['auth', 'keys', 'add', '--nostr', pubkey, '--label', 'cli', '--json'], { SVC_API_URL: s.url, SVC_TOKEN: adminToken });
  t.is(add.code, 0, add.stderr);
  t.like(JSON.parse(add.stdout), { type: 'nostr', pubkey, label: 'cli' });
  const list = await runCli(home, ['auth', 'keys', 'list', '--nostr'], { SVC_API_URL: s.url, SVC_TOKEN: adminToken });
  t.is(list.code, 0, list.stderr);
  t.true(list.stdout.includes(pubkey));

  for (const extra of [[], ['--email', 'admin@example.com']]) {
    const login = await runCli(home, ['auth', 'login', '--nostr', '--key-file', keyFile, '--ttl-days', '2', ...extra], { SVC_API_URL: s.url });
    t.is(login.code, 0, login.stderr);
    t.regex(login.stdout, /Logged in as admin@example\.com/);
    const stored = JSON.parse(await readFile(join(home, '.svc', 'credentials.json'), 'utf8'));
    const token = (Object.values(stored.credentials ?? stored)[0] as { access_token: string }).access_token;
    t.is((await as(s.server, token).get('/auth/me')).body.user.email, 'admin@example.com');
  }
});

test('login --nostr refuses a key file others can read, and an unregistered key', async (t) => {
  const home = await tempHome();
  const keyFile = join(home, 'open.key');
  await writeFile(keyFile, Buffer.from(schnorr.utils.randomSecretKey()).toString('hex'));
  await chmod(keyFile, 0o644);
  const open = await runCli(home, ['auth', 'login', '--nostr', '--key-file', keyFile], { SVC_API_URL: s.url });
  t.not(open.code, 0);
  t.regex(open.stderr, /accessible by others/);

  await chmod(keyFile, 0o600);
  const unknown = await runCli(home, ['auth', 'login', '--nostr', '--key-file', keyFile], { SVC_API_URL: s.url });
  t.not(unknown.code, 0);
  t.regex(unknown.stderr, /no user has this key/);
});
