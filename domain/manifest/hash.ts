import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every level, no whitespace: one text per value. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * `sha256:<64 hex>` of the canonical JSON of the parsed (normalized) manifest: key order,
 * whitespace, comments, anchors and `run:` shorthand do not change it; any value does.
 */
export function manifestHash(parsed: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(parsed)).digest('hex')}`;
}
