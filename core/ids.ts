import { randomBytes } from 'node:crypto';

/** Crockford base32, lower case, as TypeID writes it. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
export const TYPEID_SUFFIX = '[0-7][0-9a-hjkmnp-tv-z]{25}';

/** A UUIDv7: 48 bits of milliseconds, then randomness, so ids sort by creation time. */
function uuidv7Bytes(now = Date.now()): Buffer {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  return bytes;
}

/** 128 bits as 26 base32 characters (the first carries 3 bits), most significant first. */
function encode(bytes: Buffer): string {
  let value = BigInt('0x' + bytes.toString('hex'));
  let out = '';
  for (let i = 0; i < 26; i++) {
    out = ALPHABET[Number(value & 31n)] + out;
    value >>= 5n;
  }
  return out;
}

export type IdPrefix =
  | 'org'
  | 'proj'
  | 'usr'
  | 'key'
  | 'chl'
  | 'sk'
  | 'att'
  | 'inv'
  | 'mlk'
  | 'req'
  | 'role'
  | 'grp'
  | 'bnd'
  | 'sa'
  | 'sat'
  | 'prun'
  | 'evt'
  | 'sch'
  | 'wh'
  | 'whd'
  | 'rpl'
  | 'route'
  | 'doc'
  | 'docv'
  | 'thr'
  | 'msg'
  | 'itgt'
  | 'imod'
  | 'rc'
  | 'fx'
  | 'bld'
  | 'brun'
  | 'rel'
  | 'env'
  | 'dep';

export const newId = (prefix: IdPrefix): string => `${prefix}_${encode(uuidv7Bytes())}`;

/**
 * Prefixes ids were once minted with, before the interface's own: rows made then keep their ids,
 * so routes still accept them (managed models were `mdl_`, access requests `areq_`).
 */
export const FORMER_PREFIXES: Partial<Record<IdPrefix, string>> = { imod: 'mdl', req: 'areq' };

export interface Drawing<T> {
  /** Draws tried at most. */
  draws: number;
  /** Tries the n-th draw (n = 0, 1, …): its result, or null when the value drawn was taken. */
  attempt(n: number): Promise<T | null>;
  /** An error that means the value drawn was taken (a unique violation); any other ends the drawing. */
  taken?(error: unknown): boolean;
  /** Thrown when every draw was taken. */
  exhausted(): Error;
}

/** Draws a value that must be unique (an id, a slug) until one is free. */
export async function drawUntilFree<T>({ draws, attempt, taken = () => false, exhausted }: Drawing<T>): Promise<T> {
  for (let n = 0; n < draws; n++) {
    try {
      const result = await attempt(n);
      if (result !== null) return result;
    } catch (e) {
      if (!taken(e)) throw e;
    }
  }
  throw exhausted();
}
