import type { AttemptWork } from '../../core/ports/attempts.ts';
import type { SecretContext, SecretResolver } from '../../core/ports/secrets.ts';
import type { Manifest } from '../../domain/manifest/types.ts';
import { WorkerFailure } from './failure.ts';
import { inputEnv, inputsOf, shellTextOf } from './inputs.ts';

/**
 * What a job's token may do: read and work on jobs of its project (its own through /jobs routes), read the manifest, emit events,
 * and read and post to the project's threads (an agent answers in its coordination thread).
 */
export const JOB_TOKEN_PERMISSIONS = [
  'jobs:read',
  'jobs:create',
  'jobs:write',
  'manifest:read',
  'events:write',
  'threads:read',
  'chat:write',
  'inference:use',
] as const;

const SECRET_EXPRESSION = /\$\{secret\.[^}]*\}/;

/** `SVC_APP_API_URL_<NAME>`: the name upper-cased, anything but letters and digits as `_`. */
export const appApiVariable = (name: string) => `SVC_APP_API_URL_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;

/**
 * The address of each app API the job may call (`hints.app_apis`), from the manifest's
 * `x-svc.api_spec.<name>`: a URL string, or an object with `url` or `base_url`. A name the manifest
 * gives no address is left out (the job sees no variable for it).
 */
export function appApiUrls(work: AttemptWork, manifest: Manifest | null): Record<string, string> {
  const names = Array.isArray(work.job.hints.app_apis) ? (work.job.hints.app_apis as unknown[]).filter((n): n is string => typeof n === 'string') : [];
  const specs = (manifest?.['x-svc']?.api_spec ?? {}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const name of names) {
    const spec = specs[name];
    const url =
      typeof spec === 'string'
        ? spec
        : spec && typeof spec === 'object'
          ? ((spec as Record<string, unknown>).url ?? (spec as Record<string, unknown>).base_url)
          : undefined;
    if (typeof url === 'string' && /^https?:\/\//.test(url)) out[appApiVariable(name)] = url;
  }
  return out;
}

export interface SpecEnv {
  agentId: string;
  resourceIndex: string;
  jobToken: string;
  apiUrl: string;
  appApis: Record<string, string>;
}

/**
 * Exactly the spec's variables (plus SVC_API_URL); a root job's SVC_PARENT_JOB_ID is empty. A step
 * of a run also gets its inputs, `SVC_INPUT_<NAME>` (inputEnv): what its shell command's
 * `${inputs.…}` refer to.
 */
export function specEnv(work: AttemptWork, e: SpecEnv): Record<string, string> {
  return {
    ...inputEnv(inputsOf(work), [shellTextOf(work.job.hints.step)]).env,
    SVC_PROJECT_ID: work.project.id,
    SVC_JOB_ID: work.job.id,
    SVC_ATTEMPT_ID: work.attempt.id,
    SVC_AGENT_ID: e.agentId,
    SVC_PARENT_JOB_ID: work.job.parent_id ?? '',
    SVC_RESOURCE_INDEX: e.resourceIndex,
    SVC_JOB_TOKEN: e.jobToken,
    ...e.appApis,
    SVC_API_URL: e.apiUrl,
  };
}

/**
 * The job's env_overrides with every `${secret.NAME}` resolved (project, user, org, system), and the
 * secret values found, for masking. A missing secret fails the attempt naming it.
 */
export async function resolveOverrides(
  work: AttemptWork,
  resolver: SecretResolver | null,
  ctx: SecretContext,
): Promise<{ env: Record<string, string>; secrets: string[] }> {
  const env: Record<string, string> = {};
  const secrets: string[] = [];
  for (const [key, value] of Object.entries(work.job.env_overrides ?? {})) {
    if (!SECRET_EXPRESSION.test(value)) {
      env[key] = value;
      continue;
    }
    if (!resolver) throw new WorkerFailure(`env_overrides.${key} names a secret, but no secret resolver is loaded (the secrets plugin)`);
    try {
      const expanded = await resolver.expandWithValues(value, ctx);
      env[key] = expanded.text;
      secrets.push(...expanded.values);
    } catch (err) {
      throw new WorkerFailure(`env_overrides.${key}: ${(err as Error).message}`);
    }
  }
  return { env, secrets };
}
