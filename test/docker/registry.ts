/**
 * Debian's docker-registry on loopback, configured for token auth with svc as its realm (the
 * key svc signs tokens with is written to `keyFile` first), and a free port finder: what the
 * engine-backed build and flow tests push to.
 */
import { execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';

export const freePort = () =>
  new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });

export interface TokenRegistry {
  /** host:port */
  host: string;
  /** The token signing key svc is to use (builds.token.key_file). */
  keyFile: string;
  stop(): void;
}

/** Starts the registry in `work` (its storage, key and config live there) with `${realm}/registry/token` as its token realm. */
export async function startTokenRegistry(work: string, realm: string): Promise<TokenRegistry> {
  const keyFile = path.join(work, 'token-key.pem');
  const certFile = path.join(work, 'token-cert.pem');
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  execFileSync('openssl', ['req', '-x509', '-new', '-key', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=svc-registry-token'], { stdio: 'ignore' });
  const host = `127.0.0.1:${await freePort()}`;
  const config = path.join(work, 'registry.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log: { level: error }',
      `storage: { filesystem: { rootdirectory: ${path.join(work, 'registry-data')} }, delete: { enabled: true } }`,
      `http: { addr: "${host}" }`,
      'auth:',
      '  token:',
      `    realm: "${realm}/registry/token"`,
      '    service: svc-registry',
      '    issuer: svc',
      `    rootcertbundle: ${certFile}`,
    ].join('\n'),
  );
  const registry = spawn('docker-registry', ['serve', config], { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://${host}/v2/`).then(
      (r) => r.status === 401,
      () => false,
    );
    if (ok) return { host, keyFile, stop: () => registry.kill() };
    await new Promise((r) => setTimeout(r, 100));
  }
  registry.kill();
  throw new Error('docker-registry did not start');
}
