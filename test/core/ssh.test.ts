import test from 'ava';
import { execFile, execFileSync } from 'node:child_process';
import { createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parsePublicKey, SshKeyError, verifySshSignature, type SshKeyType } from '../../domain/signatures/ssh.ts';

const SSH_KEYGEN = '/usr/bin/ssh-keygen';
const NAMESPACE = 'svc-auth';
const run = promisify(execFile);

interface KeySpec {
  name: string;
  args: string[];
  type: SshKeyType;
  comment: string;
}
const KEY_SPECS: KeySpec[] = [
  { name: 'ed25519', args: ['-t', 'ed25519'], type: 'ssh-ed25519', comment: 'alice@laptop' },
  { name: 'rsa', args: ['-t', 'rsa', '-b', '3072'], type: 'ssh-rsa', comment: 'rsa key with spaces' },
  { name: 'ecdsa256', args: ['-t', 'ecdsa', '-b', '256'], type: 'ecdsa-sha2-nistp256', comment: 'p256' },
  { name: 'ecdsa384', args: ['-t', 'ecdsa', '-b', '384'], type: 'ecdsa-sha2-nistp384', comment: 'p384' },
  { name: 'ecdsa521', args: ['-t', 'ecdsa', '-b', '521'], type: 'ecdsa-sha2-nistp521', comment: 'p521' },
];

interface GeneratedKey extends KeySpec {
  publicLine: string;
  keygenFingerprint: string;
  nonce: Buffer;
  signature: string; // armored, from `ssh-keygen -Y sign`
}

let dir = '';
const keys = new Map<string, GeneratedKey>();

async function generate(name: string, args: string[], comment: string): Promise<string> {
  const path = join(dir, name);
  await run(SSH_KEYGEN, ['-q', ...args, '-N', '', '-C', comment, '-f', path]);
  return path;
}

async function signFile(keyPath: string, message: Buffer, extra: string[] = []): Promise<string> {
  const messagePath = `${keyPath}.nonce-${extra.join('')}`;
  await writeFile(messagePath, message);
  await run(SSH_KEYGEN, ['-Y', 'sign', '-f', keyPath, '-n', NAMESPACE, ...extra, messagePath]);
  return readFile(`${messagePath}.sig`, 'utf8');
}

const nonce = (): Buffer => Buffer.from(`nonce-${Math.random()}-${Date.now()}`);

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ssh-test-'));
  await Promise.all(
    [...KEY_SPECS, { name: 'other', args: ['-t', 'ed25519'], type: 'ssh-ed25519' as const, comment: 'bob' }].map(async (spec) => {
      const path = await generate(spec.name, spec.args, spec.comment);
      const { stdout } = await run(SSH_KEYGEN, ['-lf', `${path}.pub`]);
      const message = nonce();
      keys.set(spec.name, {
        ...spec,
        publicLine: await readFile(`${path}.pub`, 'utf8'),
        keygenFingerprint: stdout.split(' ')[1],
        nonce: message,
        signature: await signFile(path, message),
      });
    }),
  );
});

test.after.always(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const key = (name: string): GeneratedKey => keys.get(name)!;

// ---- helpers for hand-built signatures -------------------------------------------------------

function sshString(data: Buffer | string): Buffer {
  const body = Buffer.from(data);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  return Buffer.concat([length, body]);
}

function mpint(magnitude: Buffer): Buffer {
  let start = 0;
  while (start < magnitude.length && magnitude[start] === 0) start++;
  const trimmed = magnitude.subarray(start);
  return sshString(trimmed.length && trimmed[0] & 0x80 ? Buffer.concat([Buffer.from([0]), trimmed]) : trimmed);
}

function armor(blob: Buffer, eol = '\n'): string {
  const body = blob.toString('base64').match(/.{1,70}/g) ?? [];
  return ['-----BEGIN SSH SIGNATURE-----', ...body, '-----END SSH SIGNATURE-----', ''].join(eol);
}

function unarmor(armored: string): Buffer {
  return Buffer.from(armored.replace(/-----[A-Z ]+-----/g, '').replace(/\s/g, ''), 'base64');
}

interface SigParts {
  keyBlob: Buffer;
  namespace?: string;
  hashAlgorithm?: string;
  version?: number;
  magic?: string;
}

function signedData(message: Buffer, namespace: string, hashAlgorithm: string): Buffer {
  const digest = createHash(hashAlgorithm).update(message).digest();
  return Buffer.concat([Buffer.from('SSHSIG'), sshString(namespace), sshString(''), sshString(hashAlgorithm), sshString(digest)]);
}

function sshsig(parts: SigParts, signatureBlob: Buffer): string {
  const version = Buffer.alloc(4);
  version.writeUInt32BE(parts.version ?? 1);
  return armor(
    Buffer.concat([
      Buffer.from(parts.magic ?? 'SSHSIG'),
      version,
      sshString(parts.keyBlob),
      sshString(parts.namespace ?? NAMESPACE),
      sshString(''),
      sshString(parts.hashAlgorithm ?? 'sha512'),
      sshString(signatureBlob),
    ]),
  );
}

/** Cross-check a hand-built signature with OpenSSH itself. */
function opensshAccepts(publicLine: string, armored: string, message: Buffer): boolean {
  const signers = join(dir, `allowed-${Math.random()}`);
  const sigPath = join(dir, `sig-${Math.random()}`);
  execFileSync('sh', ['-c', 'printf "%s\\n" "$1" > "$2"; printf "%s" "$3" > "$4"', 'sh', `tester ${publicLine.trim()}`, signers, armored, sigPath]);
  try {
    execFileSync(SSH_KEYGEN, ['-Y', 'verify', '-f', signers, '-I', 'tester', '-n', NAMESPACE, '-s', sigPath], { input: message, stdio: 'pipe' });
    return true;
  } catch {
    return false;
  }
}

async function pemKey(name: string, args: string[]): Promise<{ line: string; privateKey: KeyObject }> {
  const path = await generate(name, [...args, '-m', 'PEM'], name);
  return { line: await readFile(`${path}.pub`, 'utf8'), privateKey: createPrivateKey(await readFile(path)) };
}

const isSshKeyError = { instanceOf: SshKeyError };

// ---- parsePublicKey ------------------------------------------------------------------------

for (const spec of KEY_SPECS) {
  test(`parsePublicKey ${spec.name}: fingerprint matches ssh-keygen -lf`, (t) => {
    const k = key(spec.name);
    const parsed = parsePublicKey(k.publicLine);
    t.is(parsed.type, spec.type);
    t.is(parsed.fingerprint, k.keygenFingerprint);
    t.is(parsed.comment, spec.comment);
    t.is(parsed.openssh, k.publicLine.split(' ').slice(0, 2).join(' '));
    t.true(parsed.blob.equals(Buffer.from(k.publicLine.split(' ')[1], 'base64')));
    t.is(parsed.keyObject.type, 'public');
    t.is(parsed.keyObject.asymmetricKeyType, spec.type === 'ssh-ed25519' ? 'ed25519' : spec.type === 'ssh-rsa' ? 'rsa' : 'ec');
  });

  test(`parsePublicKey ${spec.name}: every truncation of the blob throws SshKeyError`, (t) => {
    const blob = parsePublicKey(key(spec.name).publicLine).blob;
    for (let length = 0; length < blob.length; length += 1) {
      const line = `${spec.type} ${blob.subarray(0, length).toString('base64')}`;
      t.throws(() => parsePublicKey(line), isSshKeyError, `length ${length}`);
    }
  });
}

test('parsePublicKey tolerates surrounding whitespace and CRLF; no comment gives null', (t) => {
  const parsed = parsePublicKey(`  ${key('ed25519').publicLine.split(' ').slice(0, 2).join(' ')}\r\n`);
  t.is(parsed.comment, null);
  t.is(parsed.fingerprint, key('ed25519').keygenFingerprint);
});

test('parsePublicKey rejects unsupported and malformed keys with a reason', (t) => {
  const ed = parsePublicKey(key('ed25519').publicLine);
  const fake = (type: string, ...fields: Buffer[]) => `${type} ${Buffer.concat([sshString(type), ...fields]).toString('base64')}`;
  t.throws(() => parsePublicKey(fake('ssh-dss', sshString(Buffer.alloc(128, 1)))), { instanceOf: SshKeyError, message: /Unsupported SSH key type "ssh-dss"/ });
  t.throws(() => parsePublicKey(fake('sk-ssh-ed25519@openssh.com', sshString(Buffer.alloc(32)), sshString('ssh:'))), {
    instanceOf: SshKeyError,
    message: /FIDO/,
  });
  t.throws(() => parsePublicKey(fake('ssh-ed25519-cert-v01@openssh.com', sshString('x'))), { instanceOf: SshKeyError, message: /certificates/ });
  t.throws(() => parsePublicKey(`ssh-rsa ${ed.blob.toString('base64')}`), { instanceOf: SshKeyError, message: /does not match/ });
  t.throws(() => parsePublicKey(`ssh-ed25519 ${ed.blob.toString('base64').slice(0, -1)}!`), { instanceOf: SshKeyError, message: /base64/ });
  t.throws(() => parsePublicKey(`ssh-ed25519 ${Buffer.concat([ed.blob, Buffer.from([0])]).toString('base64')}`), {
    instanceOf: SshKeyError,
    message: /trailing/,
  });
  t.throws(() => parsePublicKey('ssh-ed25519'), isSshKeyError);
  t.throws(() => parsePublicKey(''), isSshKeyError);
  t.throws(() => parsePublicKey(`${ed.openssh}\n${ed.openssh}`), { instanceOf: SshKeyError, message: /single line/ });
  // A length field claiming 4 GiB must be a clean error, not a RangeError.
  t.throws(
    () => parsePublicKey(`ssh-ed25519 ${Buffer.concat([sshString('ssh-ed25519'), Buffer.from([0xff, 0xff, 0xff, 0xff])]).toString('base64')}`),
    isSshKeyError,
  );
  // Off-curve ECDSA point.
  const p256 = parsePublicKey(key('ecdsa256').publicLine);
  const bent = Buffer.from(p256.blob);
  bent[bent.length - 1] ^= 1;
  t.throws(() => parsePublicKey(`${p256.type} ${bent.toString('base64')}`), isSshKeyError);
});

test('parsePublicKey rejects RSA keys under 2048 bits', async (t) => {
  const path = await generate('rsa1024', ['-t', 'rsa', '-b', '1024'], 'small');
  const line = await readFile(`${path}.pub`, 'utf8');
  t.throws(() => parsePublicKey(line), { instanceOf: SshKeyError, message: /2048/ });
});

// ---- verifySshSignature ----------------------------------------------------------------------

for (const spec of KEY_SPECS) {
  test(`verifySshSignature ${spec.name}: ssh-keygen signature verifies; wrong namespace or message rejected`, (t) => {
    const k = key(spec.name);
    const result = verifySshSignature(k.signature, k.nonce, NAMESPACE);
    t.is(result.key.fingerprint, k.keygenFingerprint);
    t.is(result.key.type, spec.type);
    t.is(result.namespace, NAMESPACE);
    t.is(result.hashAlgorithm, 'sha512');
    t.is(verifySshSignature(k.signature, k.nonce.toString('utf8'), NAMESPACE).key.fingerprint, k.keygenFingerprint);

    t.throws(() => verifySshSignature(k.signature, k.nonce, 'git'), { instanceOf: SshKeyError, message: /namespace/ });
    t.throws(() => verifySshSignature(k.signature, Buffer.concat([k.nonce, Buffer.from('x')]), NAMESPACE), {
      instanceOf: SshKeyError,
      message: /does not verify/,
    });
  });

  test(`verifySshSignature ${spec.name}: every truncation and bit flip of the blob throws SshKeyError`, (t) => {
    const k = key(spec.name);
    const blob = unarmor(k.signature);
    const unexpected: string[] = [];
    const check = (label: string, armored: string) => {
      try {
        verifySshSignature(armored, k.nonce, NAMESPACE);
        unexpected.push(`${label}: accepted`);
      } catch (error) {
        if (!(error instanceof SshKeyError)) unexpected.push(`${label}: ${String(error)}`);
      }
    };
    for (let length = 0; length < blob.length; length += 1) check(`truncated to ${length}`, armor(blob.subarray(0, length)));
    for (let index = 0; index < blob.length; index += 1) {
      const flipped = Buffer.from(blob);
      flipped[index] ^= index % 2 ? 0x80 : 0x01;
      check(`flipped byte ${index}`, armor(flipped));
    }
    t.deepEqual(unexpected, []);
  });
}

test('tolerates CRLF line endings and surrounding whitespace in the armor', (t) => {
  const k = key('ed25519');
  const crlf = `\r\n  \t${armor(unarmor(k.signature), '\r\n')}\r\n\r\n`;
  t.is(verifySshSignature(crlf, k.nonce, NAMESPACE).key.fingerprint, k.keygenFingerprint);
});

test('a signature from key A reports key A, not key B', (t) => {
  const a = key('ed25519');
  const b = key('other');
  const result = verifySshSignature(a.signature, a.nonce, NAMESPACE);
  t.is(result.key.fingerprint, a.keygenFingerprint);
  t.not(result.key.fingerprint, b.keygenFingerprint);
  t.throws(() => verifySshSignature(a.signature, b.nonce, NAMESPACE), isSshKeyError);
});

test('RSA signature made with -O hashalg=sha256 verifies', async (t) => {
  const message = nonce();
  const armored = await signFile(join(dir, 'rsa'), message, ['-O', 'hashalg=sha256']);
  const result = verifySshSignature(armored, message, NAMESPACE);
  t.is(result.hashAlgorithm, 'sha256');
  t.is(result.key.fingerprint, key('rsa').keygenFingerprint);
});

test('garbage and truncated armor throw SshKeyError', (t) => {
  const k = key('ecdsa256');
  const cases = [
    '',
    'hello',
    '-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----',
    '-----BEGIN SSH SIGNATURE-----\n!!!!\n-----END SSH SIGNATURE-----',
    k.signature.slice(0, k.signature.length / 2),
    k.signature.replace('SSH SIGNATURE', 'PGP SIGNATURE'),
    armor(Buffer.from('not an sshsig blob at all')),
  ];
  for (const armored of cases) t.throws(() => verifySshSignature(armored, k.nonce, NAMESPACE), isSshKeyError, JSON.stringify(armored));
});

test('ECDSA r/s shorter than the field size (leading zero bytes) verify, as OpenSSH agrees', async (t) => {
  const { line, privateKey } = await pemKey('ecpem', ['-t', 'ecdsa', '-b', '256']);
  const keyBlob = parsePublicKey(line).blob;
  const message = nonce();
  const data = signedData(message, NAMESPACE, 'sha512');
  let p1363: Buffer;
  do p1363 = sign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
  while (p1363[0] !== 0); // r has at least one leading zero byte
  const inner = Buffer.concat([mpint(p1363.subarray(0, 32)), mpint(p1363.subarray(32))]);
  const armored = sshsig({ keyBlob }, Buffer.concat([sshString('ecdsa-sha2-nistp256'), sshString(inner)]));
  t.true(opensshAccepts(line, armored, message));
  t.false(opensshAccepts(line, armored, Buffer.concat([message, Buffer.from('x')]))); // the cross-check is not vacuous
  t.is(verifySshSignature(armored, message, NAMESPACE).key.type, 'ecdsa-sha2-nistp256');
});

test('RSA: short signatures are padded, legacy ssh-rsa (SHA-1) is rejected, other envelope fields are checked', async (t) => {
  const { line, privateKey } = await pemKey('rsapem', ['-t', 'rsa', '-b', '2048']);
  const keyBlob = parsePublicKey(line).blob;
  const rsaSig = (format: string, raw: Buffer) => Buffer.concat([sshString(format), sshString(raw)]);

  // PKCS#1 v1.5 is deterministic, so vary the message until the signature starts with a zero byte.
  let message: Buffer, data: Buffer, raw: Buffer;
  do {
    message = nonce();
    data = signedData(message, NAMESPACE, 'sha512');
    raw = sign('sha256', data, privateKey);
  } while (raw[0] !== 0);
  const short = sshsig({ keyBlob }, rsaSig('rsa-sha2-256', raw.subarray(1)));
  t.true(opensshAccepts(line, short, message));
  t.is(verifySshSignature(short, message, NAMESPACE).key.type, 'ssh-rsa');

  const full = rsaSig('rsa-sha2-256', raw);
  t.notThrows(() => verifySshSignature(sshsig({ keyBlob }, full), message, NAMESPACE));
  t.throws(() => verifySshSignature(sshsig({ keyBlob }, rsaSig('rsa-sha2-512', raw)), message, NAMESPACE), {
    instanceOf: SshKeyError,
    message: /does not verify/,
  });
  t.throws(() => verifySshSignature(sshsig({ keyBlob }, rsaSig('ssh-rsa', sign('sha1', data, privateKey))), message, NAMESPACE), {
    instanceOf: SshKeyError,
    message: /SHA-1/,
  });
  t.throws(() => verifySshSignature(sshsig({ keyBlob, version: 2 }, full), message, NAMESPACE), { instanceOf: SshKeyError, message: /version/ });
  t.throws(() => verifySshSignature(sshsig({ keyBlob, magic: 'SSHSIH' }, full), message, NAMESPACE), { instanceOf: SshKeyError, message: /magic/ });
  const sha1Envelope = sshsig({ keyBlob, hashAlgorithm: 'sha1' }, rsaSig('rsa-sha2-256', sign('sha256', signedData(message, NAMESPACE, 'sha1'), privateKey)));
  t.throws(() => verifySshSignature(sha1Envelope, message, NAMESPACE), { instanceOf: SshKeyError, message: /sha256 or sha512/ });
});
