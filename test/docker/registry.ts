/**
 * Debian's docker-registry (Distribution 2.8) on a free loopback port, for the build tests: with
 * token auth (svc as the realm) or with htpasswd basic auth (an own registry).
 */
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

export const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

/** A signing key for svc's registry tokens and the certificate the registry trusts it by. */
export function tokenKeyPair(dir: string): { keyFile: string; certFile: string } {
  const keyFile = path.join(dir, 'token-key.pem');
  const certFile = path.join(dir, 'token-cert.pem');
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  execFileSync('openssl', ['req', '-x509', '-new', '-key', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=svc-registry-token'], { stdio: 'ignore' });
  return { keyFile, certFile };
}

/** A bcrypt hash for an htpasswd file, from the C library's crypt(3) through perl (Debian's perl-base). */
function bcrypt(password: string): string {
  const salt = randomBytes(16)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '.')
    .slice(0, 22);
  return execFileSync('perl', ['-e', 'print crypt($ARGV[0], $ARGV[1])', password, `$2b$05$${salt}`], { encoding: 'utf8' });
}

export type RegistryAuth = { token: { realm: string; certFile: string } } | { htpasswd: { username: string; password: string } };

export interface Registry {
  host: string;
  stop(): void;
}

export async function startRegistry(dir: string, auth: RegistryAuth): Promise<Registry> {
  mkdirSync(dir, { recursive: true });
  const host = `127.0.0.1:${await freePort()}`;
  let authLines: string[];
  if ('token' in auth) {
    authLines = [
      '  token:',
      `    realm: "${auth.token.realm}/registry/token"`,
      '    service: svc-registry',
      '    issuer: svc',
      `    rootcertbundle: ${auth.token.certFile}`,
    ];
  } else {
    const file = path.join(dir, 'htpasswd');
    const hash = bcrypt(auth.htpasswd.password);
    if (!hash.startsWith('$2b$')) throw new Error('crypt(3) here makes no bcrypt hashes: the htpasswd registry cannot be set up');
    writeFileSync(file, `${auth.htpasswd.username}:${hash}\n`);
    authLines = ['  htpasswd:', '    realm: own-registry', `    path: ${file}`];
  }
  const config = path.join(dir, 'registry.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log: { level: error }',
      `storage: { filesystem: { rootdirectory: ${path.join(dir, 'data')} }, delete: { enabled: true } }`,
      `http: { addr: "${host}" }`,
      'auth:',
      ...authLines,
    ].join('\n'),
  );
  const child = spawn('docker-registry', ['serve', config], { stdio: 'ignore' });
  const stop = () => child.kill();
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://${host}/v2/`).then(
      (r) => r.status === 401,
      () => false,
    );
    if (ok) return { host, stop };
    await new Promise((r) => setTimeout(r, 100));
  }
  stop();
  throw new Error('docker-registry did not start');
}

/** The registry's own answer for a manifest: status and Docker-Content-Digest. */
export async function manifestDigest(
  host: string,
  repository: string,
  reference: string,
  authorization: string,
): Promise<{ status: number; digest: string | null }> {
  const res = await fetch(`http://${host}/v2/${repository}/manifests/${reference}`, {
    headers: { authorization, accept: 'application/vnd.docker.distribution.manifest.v2+json' },
  });
  await res.arrayBuffer();
  return { status: res.status, digest: res.headers.get('docker-content-digest') };
}

export interface TokenRegistry extends Registry {
  /** The key svc signs registry tokens with (builds.token.key_file). */
  keyFile: string;
}

/** A registry in `work` that takes svc's tokens, `${realm}/registry/token` being svc's token endpoint. */
export async function startTokenRegistry(work: string, realm: string): Promise<TokenRegistry> {
  const { keyFile, certFile } = tokenKeyPair(work);
  const registry = await startRegistry(path.join(work, 'registry'), { token: { realm, certFile } });
  return { ...registry, keyFile };
}
