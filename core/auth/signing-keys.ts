import { randomUUID } from 'node:crypto';
import { inject, injectable } from '../di.ts';
import {
  SignJWT,
  createLocalJWKSet,
  decodeProtectedHeader,
  errors as joseErrors,
  exportJWK,
  exportPKCS8,
  generateKeyPair,
  importPKCS8,
  jwtVerify,
  type JWK,
  type JWTPayload,
} from 'jose';
import { Tokens } from '../tokens.ts';
import type { Config } from '../config/schema.ts';
import type { Db } from '../db/knex.ts';
import type { Sealer } from '../crypto/sealer.ts';
import type { SealedColumn } from '../crypto/sealed-columns.ts';

const ALG = 'RS256';
const KEY_LOCK = 4701_0002;
const MAX_KID_CHARS = 200;

const sealingContext = (kid: string): string => `signing-key:${kid}`;

/** The private keys, for the master-key rekey. */
export const SIGNING_KEY_SEALS: SealedColumn = {
  table: 'signing_keys',
  key: 'kid',
  column: 'private_key_enc',
  context: (r) => sealingContext(r.kid as string),
};

interface ActiveKey {
  kid: string;
  privateKey: CryptoKey;
}

/**
 * RS256 signing keys: generated on first start, private half sealed with the master key,
 * public halves published as a JWKS. Rotation makes a new active key; retired keys stay
 * published so tokens they signed keep verifying until they expire.
 * Replicas share the table: each signs with the key that is active in the database (a rotation on
 * another replica is picked up at the next token it issues) and loads a key it does not know as soon
 * as a token names one that exists.
 */
@injectable()
export class SigningKeys {
  private active: ActiveKey | null = null;
  private published: JWK[] = [];
  private keySet: ReturnType<typeof createLocalJWKSet> | null = null;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Sealer) private readonly sealer: Sealer,
    @inject(Tokens.Config) private readonly config: Config,
  ) {}

  /** Makes sure one active key exists (once, across replicas starting together) and loads keys. */
  async ensureActive(): Promise<void> {
    await this.db.transaction(async (trx) => {
      // At boot, replicas starting together queue here behind one another; on a loaded machine that
      // can outlast the session's lock_timeout, which is meant for requests, not for a start.
      await trx.raw(`SET LOCAL lock_timeout = '60s'`);
      await trx.raw('SELECT pg_advisory_xact_lock(?)', [KEY_LOCK]);
      const existing = await trx('signing_keys').where({ active: true }).first();
      if (!existing) await this.insertKey(trx);
    });
    await this.load();
  }

  async rotate(): Promise<string> {
    const kid = await this.db.transaction(async (trx) => {
      await trx.raw('SELECT pg_advisory_xact_lock(?)', [KEY_LOCK]);
      await trx('signing_keys').where({ active: true }).update({ active: false, retired_at: trx.fn.now() });
      return this.insertKey(trx);
    });
    await this.load();
    return kid;
  }

  /** The published keys as the database has them now (another replica may have rotated). */
  async jwks(): Promise<{ keys: JWK[] }> {
    const stored = await this.db('signing_keys').pluck('kid');
    const loaded = new Set(this.published.map((k) => k.kid));
    if (stored.length !== loaded.size || stored.some((kid) => !loaded.has(kid))) await this.load();
    return { keys: this.published };
  }

  async sign(claims: Record<string, unknown>, subject: string, ttlSeconds: number): Promise<{ token: string; expiresAt: Date }> {
    if (!this.active) throw new Error('signing keys are not loaded');
    const current = await this.db('signing_keys').where({ active: true }).first('kid');
    if (current && current.kid !== this.active.kid) await this.load(); // rotated by another replica
    const now = Math.floor(Date.now() / 1000);
    const exp = now + ttlSeconds;
    const active = this.active;
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: ALG, kid: active.kid, typ: 'JWT' })
      .setIssuer(this.config.auth.issuer)
      .setSubject(subject)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .setJti(randomUUID())
      .sign(active.privateKey);
    return { token, expiresAt: new Date(exp * 1000) };
  }

  /** Verifies signature, issuer and expiry; reloads keys once when another replica made the token's key. */
  async verify(token: string): Promise<JWTPayload> {
    try {
      return await this.verifyWithLoaded(token);
    } catch (e) {
      if (e instanceof joseErrors.JWKSNoMatchingKey && (await this.isStoredButNotLoaded(token))) {
        await this.load();
        return this.verifyWithLoaded(token);
      }
      throw e;
    }
  }

  /** One primary-key lookup, so made-up kids cannot make every request reload all keys. */
  private async isStoredButNotLoaded(token: string): Promise<boolean> {
    let kid: unknown;
    try {
      kid = decodeProtectedHeader(token).kid;
    } catch {
      return false;
    }
    if (typeof kid !== 'string' || kid.length === 0 || kid.length > MAX_KID_CHARS) return false;
    if (this.published.some((k) => k.kid === kid)) return false;
    return Boolean(await this.db('signing_keys').where({ kid }).first('kid'));
  }

  private async verifyWithLoaded(token: string): Promise<JWTPayload> {
    if (!this.keySet) throw new Error('signing keys are not loaded');
    const { payload } = await jwtVerify(token, this.keySet, { issuer: this.config.auth.issuer, algorithms: [ALG] });
    return payload;
  }

  private async insertKey(trx: Db): Promise<string> {
    const kid = randomUUID();
    const { publicKey, privateKey } = await generateKeyPair(ALG, { extractable: true, modulusLength: 2048 });
    const jwk = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
    await trx('signing_keys').insert({
      kid,
      alg: ALG,
      public_jwk: jwk,
      private_key_enc: this.sealer.seal(await exportPKCS8(privateKey), sealingContext(kid)),
    });
    return kid;
  }

  private async load(): Promise<void> {
    const rows = await this.db('signing_keys').orderBy('created_at', 'desc');
    const active = rows.find((r) => r.active);
    if (!active) throw new Error('no active signing key');
    const pem = this.sealer.open(active.private_key_enc, sealingContext(active.kid));
    this.active = { kid: active.kid, privateKey: await importPKCS8(pem, ALG) };
    this.published = rows.map((r) => r.public_jwk as JWK);
    this.keySet = createLocalJWKSet({ keys: this.published });
  }
}
