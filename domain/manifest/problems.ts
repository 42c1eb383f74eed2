import type { ManifestProblem } from './types.ts';

/** Collects every finding; validation never stops at the first one. */
export class Problems {
  readonly list: ManifestProblem[] = [];

  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
}

/** `base.key`, or `key` at the root. */
export const at = (base: string, key: string): string => (base ? `${base}.${key}` : key);
/** `base[i]`. */
export const index = (base: string, i: number): string => `${base}[${i}]`;

import { isObject } from '../../core/is-object.ts';
import { closest } from '../../core/closest.ts';

export { isObject };
export const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0;
export const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);

/** The value's kind in words, for messages ("got a list"). */
export function kindOf(v: unknown): string {
  if (v === null || v === undefined) return 'nothing';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `a ${typeof v}`;
}

/**
 * Reports keys of `value` outside `known` as `Unknown key '<k>' in <section>`, with the nearest
 * known key when one is close enough to be a typo. Keys starting `x-` are extensions, never errors.
 */
export function unknownKeys(problems: Problems, value: Record<string, unknown>, known: readonly string[], path: string): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key) || key.startsWith('x-')) continue;
    const near = closest(key, known);
    problems.add(at(path, key), `Unknown key '${key}' in ${path || 'the manifest'}${near ? `; did you mean '${near}'?` : ''}`);
  }
}

/** Requires a mapping at `path`; false (with a finding) otherwise. */
export function expectObject(problems: Problems, value: unknown, path: string): value is Record<string, unknown> {
  if (isObject(value)) return true;
  problems.add(path, `${path} must be a mapping, got ${kindOf(value)}`);
  return false;
}
