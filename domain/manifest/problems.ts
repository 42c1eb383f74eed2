import type { ManifestProblem } from './types.ts';

/** Collects every finding; validation never stops at the first one. Warnings do not refuse the manifest. */
export class Problems {
  readonly list: ManifestProblem[] = [];
  readonly warnings: ManifestProblem[] = [];

  add(path: string, message: string): void {
    this.list.push({ path, message });
  }

  warn(path: string, message: string): void {
    this.warnings.push({ path, message });
  }
}

/** `base.key`, or `key` at the root. */
export const at = (base: string, key: string): string => (base ? `${base}.${key}` : key);
/**
 * Keys that manifests written for other deployment tools commonly carry and svc has no feature for:
 * accepted with a warning rather than refused (strictness still catches a misspelt key of svc's own).
 */
export const IGNORED_KEYS = {
  root: ['name', 'description', 'version', 'ingress'],
  service: ['replicas', 'resources', 'labels'],
} as const;

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
 * Keys in `ignored` (manifest keys of other tools that svc has no use for) are warnings instead:
 * accepted, said to be ignored, and left out of the parsed manifest (`IGNORED_KEYS`).
 */
export function unknownKeys(problems: Problems, value: Record<string, unknown>, known: readonly string[], path: string, ignored: readonly string[] = []): void {
  for (const key of Object.keys(value)) {
    if (known.includes(key) || key.startsWith('x-')) continue;
    if (ignored.includes(key)) {
      problems.warn(at(path, key), `'${key}' in ${path || 'the manifest'} is not used by svc and is ignored`);
      continue;
    }
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
