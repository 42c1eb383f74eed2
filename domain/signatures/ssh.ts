// SSH public key parsing and `ssh-keygen -Y sign` signature verification, on node:crypto only.
// Wire formats: RFC 4251/4253 (string, mpint, ssh-rsa), RFC 5656 (ECDSA), RFC 8709 (Ed25519),
// and OpenSSH's PROTOCOL.sshsig for the signature envelope.
import { createHash, createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';

export type SshKeyType = 'ssh-ed25519' | 'ssh-rsa' | 'ecdsa-sha2-nistp256' | 'ecdsa-sha2-nistp384' | 'ecdsa-sha2-nistp521';

export interface SshPublicKey {
  type: SshKeyType;
  /** The wire-format key blob (base64-decoded middle field). */
  blob: Buffer;
  /** 'SHA256:' + unpadded base64 of sha256(blob), as `ssh-keygen -lf` prints. */
  fingerprint: string;
  comment: string | null;
  keyObject: KeyObject;
  /** Canonical '<type> <base64>' without a comment. */
  openssh: string;
}

export interface VerifiedSignature {
  key: SshPublicKey;
  namespace: string;
  hashAlgorithm: 'sha256' | 'sha512';
}

/** Its message is a short sentence that is safe to show to API clients. */
export class SshKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SshKeyError';
  }
}

const MAX_KEY_LINE_CHARS = 16 * 1024;
const MAX_ARMOR_CHARS = 64 * 1024;
const MIN_RSA_BITS = 2048;
const MAX_RSA_BITS = 16384; // OpenSSH's own ceiling; also bounds verification cost
const SSHSIG_MAGIC = Buffer.from('SSHSIG');
const ARMOR_BEGIN = '-----BEGIN SSH SIGNATURE-----';
const ARMOR_END = '-----END SSH SIGNATURE-----';

interface EcdsaCurve {
  name: string;
  jwkCurve: string;
  fieldBytes: number;
  hash: string;
}
const ECDSA_CURVES: Partial<Record<SshKeyType, EcdsaCurve>> = {
  'ecdsa-sha2-nistp256': { name: 'nistp256', jwkCurve: 'P-256', fieldBytes: 32, hash: 'sha256' },
  'ecdsa-sha2-nistp384': { name: 'nistp384', jwkCurve: 'P-384', fieldBytes: 48, hash: 'sha384' },
  'ecdsa-sha2-nistp521': { name: 'nistp521', jwkCurve: 'P-521', fieldBytes: 66, hash: 'sha512' },
};
const RSA_SIGNATURE_HASHES: Record<string, string> = { 'rsa-sha2-256': 'sha256', 'rsa-sha2-512': 'sha512' };
const SUPPORTED_TYPES = new Set<string>(['ssh-ed25519', 'ssh-rsa', ...Object.keys(ECDSA_CURVES)]);

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Sequential reader over RFC 4251 data types; every read is bounds-checked. */
class WireReader {
  private offset = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly what: string,
  ) {}

  private truncated(): never {
    throw new SshKeyError(`${this.what} is truncated or malformed.`);
  }

  uint32(): number {
    if (this.buf.length - this.offset < 4) this.truncated();
    const value = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return value;
  }

  bytes(length: number): Buffer {
    if (length > this.buf.length - this.offset) this.truncated();
    const out = this.buf.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }

  string(): Buffer {
    return this.bytes(this.uint32());
  }

  text(): string {
    try {
      return utf8.decode(this.string());
    } catch (error) {
      if (error instanceof SshKeyError) throw error;
      throw new SshKeyError(`${this.what} contains invalid UTF-8 text.`);
    }
  }

  /** A non-negative mpint, returned as its big-endian magnitude without leading zeros. */
  unsignedMpint(): Buffer {
    const raw = this.string();
    if (raw.length === 0) return raw;
    if (raw[0] & 0x80) throw new SshKeyError(`${this.what} contains a negative integer.`);
    if (raw[0] === 0) {
      // RFC 4251: a leading zero is only allowed to keep the sign bit clear.
      if (raw.length === 1 || !(raw[1] & 0x80)) throw new SshKeyError(`${this.what} contains a non-canonical integer.`);
      return raw.subarray(1);
    }
    return raw;
  }

  end(): void {
    if (this.offset !== this.buf.length) throw new SshKeyError(`${this.what} has unexpected trailing data.`);
  }
}

function sshString(data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  return Buffer.concat([length, data]);
}

function decodeBase64(text: string, what: string): Buffer {
  // Buffer.from(..., 'base64') silently skips junk, so validate first.
  if (text.length === 0 || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) {
    throw new SshKeyError(`${what} is not valid base64.`);
  }
  return Buffer.from(text, 'base64');
}

function leftPad(magnitude: Buffer, size: number): Buffer {
  const out = Buffer.alloc(size);
  magnitude.copy(out, size - magnitude.length);
  return out;
}

function bitLength(magnitude: Buffer): number {
  return magnitude.length === 0 ? 0 : (magnitude.length - 1) * 8 + (32 - Math.clz32(magnitude[0]));
}

/** Key type names come from clients; keep them short and printable before echoing them back. */
function displayType(type: string): string {
  const clean = type.replace(/[^\x21-\x7e]/g, '?');
  return clean.length > 64 ? `${clean.slice(0, 61)}...` : clean;
}

function unsupportedType(type: string): SshKeyError {
  if (type.endsWith('-cert-v01@openssh.com')) return new SshKeyError('SSH certificates are not supported; use a plain public key.');
  if (type.startsWith('sk-')) return new SshKeyError('Security-key (FIDO) SSH keys are not supported.');
  return new SshKeyError(`Unsupported SSH key type "${displayType(type)}"; use ssh-ed25519, ssh-rsa or ecdsa-sha2-nistp256/384/521.`);
}

function importJwk(jwk: JsonWebKey): KeyObject {
  try {
    return createPublicKey({ key: jwk, format: 'jwk' });
  } catch {
    throw new SshKeyError('Public key is not a valid key of its type.');
  }
}

function keyFromBlob(blob: Buffer, comment: string | null): SshPublicKey {
  const reader = new WireReader(blob, 'Public key');
  const type = reader.text();
  if (!SUPPORTED_TYPES.has(type)) throw unsupportedType(type);
  let jwk: JsonWebKey;
  const curve = ECDSA_CURVES[type as SshKeyType];
  if (type === 'ssh-ed25519') {
    const point = reader.string();
    reader.end();
    if (point.length !== 32) throw new SshKeyError('Ed25519 public key must be 32 bytes.');
    jwk = { kty: 'OKP', crv: 'Ed25519', x: point.toString('base64url') };
  } else if (type === 'ssh-rsa') {
    const exponent = reader.unsignedMpint(); // RFC 4253 puts e before n
    const modulus = reader.unsignedMpint();
    reader.end();
    const bits = bitLength(modulus);
    if (bits < MIN_RSA_BITS) throw new SshKeyError(`RSA keys must be at least ${MIN_RSA_BITS} bits.`);
    if (bits > MAX_RSA_BITS) throw new SshKeyError(`RSA keys larger than ${MAX_RSA_BITS} bits are not supported.`);
    if (exponent.length === 0) throw new SshKeyError('RSA public exponent is invalid.');
    jwk = { kty: 'RSA', n: modulus.toString('base64url'), e: exponent.toString('base64url') };
  } else if (curve) {
    if (reader.text() !== curve.name) throw new SshKeyError('ECDSA key curve does not match its key type.');
    const point = reader.string();
    reader.end();
    // Only the uncompressed SEC1 form (0x04 || x || y) is used by OpenSSH.
    if (point.length !== 1 + 2 * curve.fieldBytes || point[0] !== 0x04) {
      throw new SshKeyError('ECDSA public key point is malformed.');
    }
    const x = point.subarray(1, 1 + curve.fieldBytes);
    const y = point.subarray(1 + curve.fieldBytes);
    jwk = { kty: 'EC', crv: curve.jwkCurve, x: x.toString('base64url'), y: y.toString('base64url') };
  } else {
    throw unsupportedType(type);
  }
  const base64 = blob.toString('base64');
  return {
    type: type as SshKeyType,
    blob: Buffer.from(blob),
    fingerprint: 'SHA256:' + createHash('sha256').update(blob).digest('base64').replace(/=+$/, ''),
    comment,
    keyObject: importJwk(jwk),
    openssh: `${type} ${base64}`,
  };
}

export function parsePublicKey(line: string): SshPublicKey {
  if (typeof line !== 'string') throw new SshKeyError('Public key must be a string.');
  const trimmed = line.trim();
  if (trimmed === '') throw new SshKeyError('Public key is empty.');
  if (trimmed.length > MAX_KEY_LINE_CHARS) throw new SshKeyError('Public key is too long.');
  if (/[\r\n]/.test(trimmed)) throw new SshKeyError('Public key must be a single line.');
  const match = /^(\S+)\s+(\S+)(?:\s+(.*))?$/.exec(trimmed);
  if (!match) throw new SshKeyError('Public key must look like "<type> <base64> [comment]".');
  const [, lineType, base64, comment] = match;
  if (!SUPPORTED_TYPES.has(lineType)) throw unsupportedType(lineType);
  const key = keyFromBlob(decodeBase64(base64, 'Public key'), comment?.trim() || null);
  if (key.type !== lineType) throw new SshKeyError('Public key type does not match its encoded data.');
  return key;
}

function decodeArmor(armored: string): Buffer {
  if (typeof armored !== 'string') throw new SshKeyError('Signature must be a string.');
  if (armored.length > MAX_ARMOR_CHARS) throw new SshKeyError('Signature is too long.');
  const lines = armored
    .replace(/\r\n?/g, '\n')
    .trim()
    .split('\n')
    .map((l) => l.trim());
  if (lines.length < 3 || lines[0] !== ARMOR_BEGIN || lines[lines.length - 1] !== ARMOR_END) {
    throw new SshKeyError(`Signature must be an armored "${ARMOR_BEGIN}" block.`);
  }
  return decodeBase64(lines.slice(1, -1).join(''), 'Signature');
}

/** Checks an RFC 4253 signature blob (string format, string data) over `data`; throws unless it verifies. */
function checkSignature(key: SshPublicKey, signatureBlob: Buffer, data: Buffer): void {
  const reader = new WireReader(signatureBlob, 'Signature');
  const format = reader.text();
  const raw = reader.string();
  reader.end();
  let valid: boolean;
  try {
    const curve = ECDSA_CURVES[key.type];
    if (key.type === 'ssh-ed25519') {
      if (format !== 'ssh-ed25519') throw new SshKeyError('Signature format does not match the key type.');
      if (raw.length !== 64) throw new SshKeyError('Ed25519 signature must be 64 bytes.');
      valid = verify(null, data, key.keyObject, raw);
    } else if (key.type === 'ssh-rsa') {
      if (format === 'ssh-rsa') {
        throw new SshKeyError('Legacy SHA-1 RSA signatures are not accepted; sign with rsa-sha2-256 or rsa-sha2-512.');
      }
      const hash = RSA_SIGNATURE_HASHES[format];
      if (!hash) throw new SshKeyError('Signature format does not match the key type.');
      const modulusBytes = Math.ceil((key.keyObject.asymmetricKeyDetails?.modulusLength ?? 0) / 8);
      if (raw.length === 0 || raw.length > modulusBytes) throw new SshKeyError('RSA signature has the wrong length.');
      // OpenSSH accepts signatures whose leading zero bytes were dropped; OpenSSL wants full length.
      valid = verify(hash, data, key.keyObject, leftPad(raw, modulusBytes));
    } else if (curve) {
      if (format !== key.type) throw new SshKeyError('Signature format does not match the key type.');
      const inner = new WireReader(raw, 'ECDSA signature');
      const r = inner.unsignedMpint();
      const s = inner.unsignedMpint();
      inner.end();
      if (r.length > curve.fieldBytes || s.length > curve.fieldBytes) throw new SshKeyError('SSH signature does not verify.');
      const p1363 = Buffer.concat([leftPad(r, curve.fieldBytes), leftPad(s, curve.fieldBytes)]);
      valid = verify(curve.hash, data, { key: key.keyObject, dsaEncoding: 'ieee-p1363' }, p1363);
    } else {
      throw unsupportedType(key.type);
    }
  } catch (error) {
    if (error instanceof SshKeyError) throw error;
    valid = false;
  }
  if (!valid) throw new SshKeyError('SSH signature does not verify.');
}

export function verifySshSignature(armored: string, message: Buffer | string, expectedNamespace: string): VerifiedSignature {
  if (!expectedNamespace) throw new SshKeyError('A signature namespace is required.');
  const reader = new WireReader(decodeArmor(armored), 'Signature');
  if (!reader.bytes(SSHSIG_MAGIC.length).equals(SSHSIG_MAGIC)) throw new SshKeyError('Not an SSH signature (bad magic).');
  const version = reader.uint32();
  if (version !== 1) throw new SshKeyError(`Unsupported SSH signature version ${version}.`);
  const publicKeyBlob = reader.string();
  const namespaceBytes = reader.string();
  const reserved = reader.string();
  const hashAlgorithm = reader.text();
  const signatureBlob = reader.string();
  reader.end();

  if (!namespaceBytes.equals(Buffer.from(expectedNamespace, 'utf8'))) {
    throw new SshKeyError(`Signature was made for a different namespace; expected "${expectedNamespace}".`);
  }
  if (hashAlgorithm !== 'sha256' && hashAlgorithm !== 'sha512') {
    throw new SshKeyError('Signature hash algorithm must be sha256 or sha512.');
  }
  const key = keyFromBlob(publicKeyBlob, null);
  const digest = createHash(hashAlgorithm)
    .update(typeof message === 'string' ? Buffer.from(message, 'utf8') : message)
    .digest();
  // The signed blob is magic, namespace, reserved, hash name and H(message); the version and the key are not in it.
  const signedData = Buffer.concat([SSHSIG_MAGIC, sshString(namespaceBytes), sshString(reserved), sshString(Buffer.from(hashAlgorithm)), sshString(digest)]);
  checkSignature(key, signatureBlob, signedData);
  return { key, namespace: expectedNamespace, hashAlgorithm };
}
