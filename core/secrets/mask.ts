/** Values shorter than this are not masked: replacing every "abc" would garble output and reveal little. */
export const MIN_MASKED_CHARS = 4;
export const MASK = '***';

/**
 * Base64 runs that spell `value` wherever it sits in a longer encoded text: base64 works in groups of
 * three bytes, so the value's characters depend on its offset in the group (0, 1 or 2). For each offset
 * the characters made only of the value's bits are kept, those shared with neighbouring bytes dropped;
 * the exact encoding (with its padding) and the URL-safe alphabet are included.
 */
function base64Forms(bytes: Buffer): string[] {
  const forms = [bytes.toString('base64')];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString('base64');
    forms.push(encoded.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + bytes.length) * 8) / 6)));
  }
  return forms.flatMap((f) => [f, f.replace(/\+/g, '-').replace(/\//g, '_')]);
}

/** URL-encodings of `value`: percent-encoded (upper- and lower-case hex), and as a form field (space as `+`). */
function urlForms(value: string): string[] {
  const encoded = encodeURIComponent(value);
  return [encoded, encoded.replace(/%[0-9A-F]{2}/g, (p) => p.toLowerCase()), encoded.replace(/%20/g, '+')];
}

/** The spellings of one secret that output may carry: itself, base64 (standard and URL-safe), URL-encoded, hex. */
export function secretForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const hex = bytes.toString('hex');
  return [value, ...base64Forms(bytes), ...urlForms(value), hex, hex.toUpperCase()];
}

/**
 * A function that replaces every occurrence of the known secret values, and of their common encodings
 * (`secretForms`), in execution output, compiled once for many lines. Longest forms go first in one
 * pass, so a form containing another is masked whole and masks are never re-matched. Encoded forms
 * shorter than the value's own length floor are skipped (a 4-character value's base64 core is 4 chars).
 */
export function secretMasker(values: readonly string[]): (text: string) => string {
  const secrets = values.filter((v) => typeof v === 'string' && v.length >= MIN_MASKED_CHARS);
  const known = [...new Set(secrets.flatMap(secretForms).filter((f) => f.length >= MIN_MASKED_CHARS))].sort((a, b) => b.length - a.length);
  if (!known.length) return (text) => text;
  const pattern = new RegExp(known.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return (text) => (text ? text.replace(pattern, MASK) : text);
}

export function maskSecrets(text: string, values: readonly string[]): string {
  return secretMasker(values)(text);
}
