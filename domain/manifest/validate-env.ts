import { type Problems, at, expectObject } from './problems.ts';

/** Merged env_overrides of one step (workflow defaults under the step's own): at most 4 KB of JSON. */
export const MAX_ENV_PAYLOAD_BYTES = 4096;

/**
 * Names a manifest may not override: the process basics a worker relies on, the dynamic linker's
 * hooks, and the platform's own `SVC_*` namespace.
 */
export const RESERVED_ENV_NAMES = ['PATH', 'HOME', 'USER', 'SHELL', 'PWD', 'HOSTNAME', 'TMPDIR', 'LD_PRELOAD', 'LD_LIBRARY_PATH'] as const;
export const RESERVED_ENV_PREFIX = 'SVC_';

/** Names that carry credentials: their value must be a `${secret.NAME}` expression, never a literal. */
const SECRET_NAME = /(^|_)(SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|PRIVATE_KEY|CREDENTIALS?)$/;
const EXPRESSION = /\$\{([^}]*)\}/g;
const SECRET_EXPRESSION = /^secret\.[A-Za-z0-9_]+$/;
const KEY = /^[A-Z_][A-Z0-9_]*$/;

/** The one rule for reserved names: the manifest's env_overrides and the jobs API's (plugins/jobs/job/schemas.ts) both apply it. */
export const isReservedEnvName = (key: string) => (RESERVED_ENV_NAMES as readonly string[]).includes(key) || key.startsWith(RESERVED_ENV_PREFIX);

/** Checks one env_overrides mapping; returns the valid string entries (for the merged-size check). */
export function checkEnvOverrides(problems: Problems, value: unknown, path: string): Record<string, string> {
  if (value === undefined) return {};
  if (!expectObject(problems, value, path)) return {};
  const valid: Record<string, string> = {};
  for (const [key, raw] of Object.entries(value)) {
    const where = at(path, key);
    if (typeof raw !== 'string') {
      problems.add(where, `Invalid env override '${key}': the value must be a string`);
      continue;
    }
    if (key !== key.toUpperCase() && /[a-z]/.test(key)) {
      problems.add(where, `Invalid env override '${key}': lowercase key (names are upper case: A-Z, 0-9, _)`);
    } else if (!KEY.test(key)) {
      problems.add(where, `Invalid env override '${key}': names are upper case letters, digits and _, not starting with a digit`);
    } else if (isReservedEnvName(key)) {
      problems.add(where, `Invalid env override '${key}': reserved variable`);
    }
    for (const [, expression] of raw.matchAll(EXPRESSION)) {
      if (!SECRET_EXPRESSION.test(expression)) {
        problems.add(where, `Invalid env override '${key}': non-secret expression '\${${expression}}' (only \${secret.<NAME>} is allowed)`);
      }
    }
    if (SECRET_NAME.test(key) && !/^\$\{secret\.[A-Za-z0-9_]+\}$/.test(raw)) {
      problems.add(where, `Invalid env override '${key}': non-secret expression where a secret is required (use \${secret.<NAME>})`);
    }
    valid[key] = raw;
  }
  return valid;
}

/** The 4 KB limit on what a step would receive (workflow defaults merged under the step's values). */
export function checkMergedSize(problems: Problems, merged: Record<string, string>, path: string, stepName: string, workflow: string): void {
  const bytes = Buffer.byteLength(JSON.stringify(merged), 'utf8');
  if (bytes > MAX_ENV_PAYLOAD_BYTES) {
    problems.add(path, `Invalid env overrides for step '${stepName}' in workflow '${workflow}': merged payload is ${bytes} bytes, over the 4 KB limit`);
  }
}
