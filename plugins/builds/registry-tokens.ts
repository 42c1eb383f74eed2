import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { SignJWT, jwtVerify } from 'jose';
import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Config } from '../../core/config/schema.ts';

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const ACTIONS = ['pull', 'push'] as const;
type Action = (typeof ACTIONS)[number];

export interface RepositoryAccess {
  type: 'repository';
  name: string;
  actions: string[];
}

/** The key id a Distribution registry expects: the libtrust fingerprint of the public key. */
export function libtrustKeyId(publicKey: KeyObject): string {
  const digest = createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest()
    .subarray(0, 30);
  let bits = '';
  for (const byte of digest) bits += byte.toString(2).padStart(8, '0');
  let out = '';
  for (let i = 0; i < bits.length; i += 5) out += BASE32[parseInt(bits.slice(i, i + 5), 2)];
  return out.match(/.{4}/g)!.join(':');
}

/** `repository:<name>:<a,b>` scopes of a token request; anything else is ignored. */
export function parseScopes(scopes: string[]): { name: string; actions: Action[] }[] {
  const out: { name: string; actions: Action[] }[] = [];
  for (const scope of scopes) {
    const m = /^repository:([a-z0-9._\/:-]+?):([a-z*,]+)$/.exec(scope);
    if (!m) continue;
    out.push({ name: m[1], actions: m[2].split(',').filter((a): a is Action => (ACTIONS as readonly string[]).includes(a)) });
  }
  return out;
}

export interface Grant {
  projectId: string;
  /** Repositories under this prefix (`<project slug>/`). */
  prefix: string;
  actions: Action[];
}

/**
 * Registry tokens for the native registry: svc is the token server a Distribution registry with
 * `auth: token` trusts (ES256 or RS256 JWTs, `kid` = libtrust fingerprint). Pushers and pullers
 * log in with a grant (a JWT of ours naming a project's repository prefix, as the Basic password);
 * a token then carries only the requested actions on repositories under that prefix.
 */
@injectable()
export class RegistryTokens {
  private readonly key: KeyObject;
  private readonly kid: string;
  private readonly alg: 'ES256' | 'RS256';

  constructor(@inject(Tokens.Config) private readonly config: Config) {
    this.key = loadOrCreateKey(config.builds.token.key_file ?? path.resolve(config.data_dir, 'registry-token-key.pem'), config.builds.token.key_file === null);
    this.alg = this.key.asymmetricKeyType === 'rsa' ? 'RS256' : 'ES256';
    this.kid = libtrustKeyId(createPublicKey(this.key));
  }

  /** The public key (PEM), for a registry's rootcertbundle made with openssl (docs/builds.md). */
  publicKeyPem(): string {
    return createPublicKey(this.key).export({ type: 'spki', format: 'pem' }).toString();
  }

  get username(): string {
    return 'svc-grant';
  }

  async grant(projectId: string, projectSlug: string, actions: Action[] = ['pull', 'push']): Promise<string> {
    const { issuer, service, ttl_seconds } = this.config.builds.token;
    return new SignJWT({ prefix: `${projectSlug}/`, actions })
      .setProtectedHeader({ alg: this.alg, kid: this.kid })
      .setIssuer(issuer)
      .setAudience(`${service}:grant`)
      .setSubject(projectId)
      .setIssuedAt()
      .setExpirationTime(`${ttl_seconds}s`)
      .sign(this.key);
  }

  /** The grant a Basic password carries, or null when it is not one of ours (or expired). */
  async verifyGrant(password: string): Promise<Grant | null> {
    const { issuer, service } = this.config.builds.token;
    try {
      const { payload } = await jwtVerify(password, createPublicKey(this.key), { issuer, audience: `${service}:grant`, algorithms: [this.alg] });
      if (typeof payload.prefix !== 'string' || !Array.isArray(payload.actions) || !payload.sub) return null;
      return {
        projectId: payload.sub,
        prefix: payload.prefix,
        actions: payload.actions.filter((a): a is Action => (ACTIONS as readonly unknown[]).includes(a)),
      };
    } catch {
      return null;
    }
  }

  /** What of the requested scopes the grant allows: other repositories get no actions (the registry answers insufficient_scope). */
  allowed(grant: Grant, requested: { name: string; actions: Action[] }[]): RepositoryAccess[] {
    return requested.map((r) => ({
      type: 'repository',
      name: r.name,
      actions: r.name.startsWith(grant.prefix) ? r.actions.filter((a) => grant.actions.includes(a)) : [],
    }));
  }

  async registryToken(subject: string, access: RepositoryAccess[]): Promise<{ token: string; expires_in: number; issued_at: string }> {
    const { issuer, service, ttl_seconds } = this.config.builds.token;
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ access })
      .setProtectedHeader({ alg: this.alg, kid: this.kid, typ: 'JWT' })
      .setIssuer(issuer)
      .setSubject(subject)
      .setAudience(service)
      .setIssuedAt(now)
      .setNotBefore(now - 5)
      .setExpirationTime(now + ttl_seconds)
      .setJti(randomUUID())
      .sign(this.key);
    return { token, expires_in: ttl_seconds, issued_at: new Date(now * 1000).toISOString() };
  }
}

function loadOrCreateKey(file: string, mayCreate: boolean): KeyObject {
  if (existsSync(file)) return createPrivateKey(readFileSync(file));
  if (!mayCreate) throw new Error(`builds.token.key_file: ${file} does not exist`);
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  mkdirSync(path.dirname(file), { recursive: true });
  try {
    writeFileSync(file, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  } catch (e) {
    // A replica sharing the data folder wrote it first: use that one.
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return createPrivateKey(readFileSync(file));
    throw e;
  }
  return privateKey;
}
