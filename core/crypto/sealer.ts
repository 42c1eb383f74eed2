import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const VERSION = 'v1';

/** AES-256-GCM with a random 96-bit IV per value: `v1:<iv>:<tag>:<ciphertext>`, base64url parts. */
export class Sealer {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the master key must be 32 bytes');
  }

  seal(plaintext: string, context = ''): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(context));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join(':');
  }

  /** `context` must equal the one given to seal: a sealed value moved to another row does not open. */
  open(sealed: string, context = ''): string {
    const [version, iv, tag, body] = sealed.split(':');
    if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('not a sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** Accepts 64 hex characters or base64 of 32 bytes. */
export function parseMasterKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32) throw new Error('SVC_SECRETS_MASTER_KEY must be 32 bytes, written as 64 hex characters or base64');
  return key;
}

/**
 * The configured key, else `<dataDir>/master.key`, generated on first start. Production refuses
 * the generated file: replicas would each make their own and could not read each other's data.
 */
export function loadMasterKey(configured: string | null, dataDir: string, production: boolean): Buffer {
  if (configured) return parseMasterKey(configured);
  if (production) throw new Error('SVC_SECRETS_MASTER_KEY is required when NODE_ENV=production');
  const file = path.join(dataDir, 'master.key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    try {
      writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e; // another process made it first
    }
  }
  chmodSync(file, 0o600);
  return parseMasterKey(readFileSync(file, 'utf8'));
}
