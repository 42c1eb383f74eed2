import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { USER, runCli, startFake, tempHome, type FakeApi, type Recorded } from './helpers.ts';

const run = promisify(execFile);
const NAMESPACE = 'svc-auth';

let fake: FakeApi;
let work: string;
let allowedSigners: string;
const challenges = new Map<string, string>();

/** Verify an armored SSH signature over `message` for `email` with real ssh-keygen, as the server would. */
async function sshVerify(email: string, message: string, signature: string): Promise<boolean> {
  const dir = await mkdtemp(join(work, 'verify-'));
  await writeFile(join(dir, 'msg'), message);
  await writeFile(join(dir, 'sig'), signature);
  try {
    await run('sh', [
      '-c',
      `ssh-keygen -Y verify -f "$1" -I "$2" -n ${NAMESPACE} -s "$3" < "$4"`,
      'sh',
      allowedSigners,
      email,
      join(dir, 'sig'),
      join(dir, 'msg'),
    ]);
    return true;
  } catch {
    return false;
  }
}

async function keygen(name: string): Promise<string> {
  const path = join(work, name);
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', path]);
  return path;
}

test.before(async () => {
  work = await mkdtemp(join(tmpdir(), 'svc-cli-login-'));
  const key = await keygen('alice');
  allowedSigners = join(work, 'allowed_signers');
  await writeFile(allowedSigners, `${USER.email} ${await readFile(`${key}.pub`, 'utf8')}`);

  fake = await startFake();
  let next = 0;
  fake
    .on('POST', '/auth/challenge', () => {
      const id = `ch_${++next}`;
      // Base64url like the real server's: no newline, so a stray one added by the client breaks the signature.
      const nonce = Buffer.from(`nonce-${id}-${Math.random()}`).toString('base64url');
      challenges.set(id, nonce);
      return { body: { challenge_id: id, nonce, namespace: NAMESPACE, expires_at: '2099-01-01T00:00:00.000Z' } };
    })
    .on('POST', '/auth/verify', async (req: Recorded) => {
      const { challenge_id, signature } = req.body as { challenge_id: string; signature: string };
      const nonce = challenges.get(challenge_id);
      challenges.delete(challenge_id);
      if (!nonce || !(await sshVerify(USER.email, nonce, signature))) {
        return { status: 401, body: { statusCode: 401, error: 'Unauthorized', message: 'Signature verification failed' } };
      }
      return { body: { access_token: `tok-${challenge_id}`, token_type: 'Bearer', expires_at: '2099-01-01T00:00:00.000Z', user: USER } };
    })
    .on('POST', '/auth/keys', (req) => ({
      status: 201,
      body: { id: 'key_9', type: 'ssh-ed25519', fingerprint: 'SHA256:x', label: (req.body as { label?: string }).label ?? null, created_at: 'c' },
    }));
});
test.after.always(() => fake?.stop());

test.serial('login signs the nonce with a real ed25519 key (verified by ssh-keygen) and stores the token', async (t) => {
  const home = await tempHome();
  const result = await runCli(home, ['auth', 'login', '--email', USER.email, '--key', join(work, 'alice'), '--ttl-days', '3', '--api-url', fake.url]);
  t.is(result.code, 0, result.stderr);
  t.regex(result.stdout, /^Logged in as ada@example\.com on http:\/\/127\.0\.0\.1:\d+ until 2099/);

  const [challenge, verify] = fake.requests.filter((r) => r.path.startsWith('/auth/')).slice(-2);
  t.like(challenge, { method: 'POST', path: '/auth/challenge', body: { email: USER.email }, authorization: undefined });
  t.like(verify, { method: 'POST', path: '/auth/verify', authorization: undefined });
  const body = verify.body as { challenge_id: string; signature: string; ttl_days: number };
  t.is(body.ttl_days, 3);
  t.regex(body.signature, /^-----BEGIN SSH SIGNATURE-----\n[\s\S]+-----END SSH SIGNATURE-----\n?$/);

  const credentials = JSON.parse(await readFile(join(home, '.svc', 'credentials.json'), 'utf8'));
  t.deepEqual(credentials, {
    [fake.url]: { access_token: `tok-${body.challenge_id}`, expires_at: '2099-01-01T00:00:00.000Z', email: USER.email },
  });
});

test.serial('login defaults to ~/.ssh/id_ed25519', async (t) => {
  const home = await tempHome();
  await mkdir(join(home, '.ssh'), { mode: 0o700 });
  await run('cp', [join(work, 'alice'), join(home, '.ssh', 'id_ed25519')]);
  const result = await runCli(home, ['auth', 'login', '--email', USER.email], { SVC_API_URL: fake.url });
  t.is(result.code, 0, result.stderr);
  t.true(JSON.parse(await readFile(join(home, '.svc', 'credentials.json'), 'utf8'))[fake.url].access_token.startsWith('tok-ch_'));
});

test.serial('a key the server does not know is refused: error printed with how to register the key, exit 1, nothing stored', async (t) => {
  const home = await tempHome();
  const mallory = await keygen('mallory');
  const result = await runCli(home, ['auth', 'login', '--email', USER.email, '--key', mallory, '--api-url', fake.url]);
  t.is(result.code, 1);
  t.is(
    result.stderr,
    'svc: Signature verification failed (401)\n' +
      `svc: hint: to register this key: logged in elsewhere, run \`svc auth keys add ${mallory}.pub\`; else an admin runs ` +
      `\`svc auth mint --email ${USER.email} --org ORG_ID --key ${mallory}.pub\`, or ask for access with \`svc access-request --help\`\n`,
  );
  await t.throwsAsync(readFile(join(home, '.svc', 'credentials.json')));
});

test.serial('login without any key explains where it looked', async (t) => {
  const result = await runCli(await tempHome(), ['auth', 'login', '--email', USER.email, '--api-url', fake.url]);
  t.is(result.code, 1);
  t.regex(result.stderr, /no SSH private key found \(looked for ~\/\.ssh\/id_ed25519, ~\/\.ssh\/id_ecdsa, ~\/\.ssh\/id_rsa\)/);
});

test.serial('keys add sends the public key line and refuses a private key', async (t) => {
  const home = await tempHome();
  const pub = (await readFile(join(work, 'alice.pub'), 'utf8')).trim();
  const ok = await runCli(home, ['auth', 'keys', 'add', join(work, 'alice.pub'), '--label', 'laptop'], { SVC_API_URL: fake.url, SVC_TOKEN: 't' });
  t.is(ok.code, 0, ok.stderr);
  t.like(fake.requests.at(-1), { method: 'POST', path: '/auth/keys', authorization: 'Bearer t', body: { public_key: pub, label: 'laptop' } });
  const bad = await runCli(home, ['auth', 'keys', 'add', join(work, 'alice')], { SVC_API_URL: fake.url, SVC_TOKEN: 't' });
  t.is(bad.code, 1);
  t.regex(bad.stderr, /is a private key; pass the public key/);
});

test.serial('bootstrap registers ~/.ssh/id_ed25519.pub by default', async (t) => {
  const home = await tempHome();
  await mkdir(join(home, '.ssh'));
  await run('cp', [join(work, 'alice.pub'), join(home, '.ssh', 'id_ed25519.pub')]);
  fake.on('POST', '/auth/bootstrap', { status: 201, body: { access_token: 'boot-tok', token_type: 'Bearer', expires_at: null, user: USER } });
  const result = await runCli(home, ['auth', 'bootstrap', '--email', USER.email, '--name', 'Ada', '--ttl-days', '30', '--json'], { SVC_API_URL: fake.url });
  t.is(result.code, 0, result.stderr);
  t.deepEqual(fake.requests.at(-1)?.body, {
    email: USER.email,
    public_key: (await readFile(join(work, 'alice.pub'), 'utf8')).trim(),
    display_name: 'Ada',
    ttl_days: 30,
  });
  t.deepEqual(JSON.parse(result.stdout), { access_token: 'boot-tok', token_type: 'Bearer', expires_at: null, user: USER });
});
