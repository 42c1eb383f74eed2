/**
 * Whether a harness can run on this machine: its binary is found (PATH, or the configured path)
 * and its credentials are present (the server's environment, system or project secrets, or a
 * login file the CLI keeps under the home directory). Secret values never leave this module except
 * through `credentials()`, which the worker merges into the job's environment.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { HarnessAuthStatus, HarnessDefinition } from '../../core/ports/harness.ts';
import type { SecretContext, SecretResolver } from '../../core/ports/secrets.ts';

const isExecutableFile = (file: string): boolean => {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

/** The absolute path the command runs as, or null when it is not found. */
export function findBinary(command: string, envPath = process.env.PATH ?? ''): string | null {
  if (command.includes('/')) return isExecutableFile(command) ? path.resolve(command) : null;
  for (const dir of envPath.split(path.delimiter)) {
    if (dir && isExecutableFile(path.join(dir, command))) return path.join(dir, command);
  }
  return null;
}

/** Every variable name a harness may read credentials from. */
export const credentialNames = (def: HarnessDefinition): string[] => [...new Set((def.credentials?.env ?? []).flat())];

/** The declared credential variables the server's own environment holds. */
export function environmentCredentials(def: HarnessDefinition, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  return Object.fromEntries(
    credentialNames(def)
      .filter((n) => env[n])
      .map((n) => [n, env[n] as string]),
  );
}

/** `SVC_HARNESS_B_COMMAND` for harness_b; plugin harnesses use the generic config variable. */
export function commandVariable(id: string): string {
  const letter = /^harness_([a-f])$/.exec(id)?.[1];
  return letter ? `SVC_HARNESS_${letter.toUpperCase()}_COMMAND` : `SVC_HARNESSES__${id.toUpperCase().replace(/-/g, '_')}__COMMAND`;
}

export class HarnessAuth {
  /** `secrets` is looked up per call: the secrets plugin registers after this one, or is not loaded at all. */
  constructor(private readonly secrets: () => SecretResolver | null) {}

  /** Credentials from the environment first, then secrets (system scope, or the job's scopes in `ctx`). */
  async credentials(def: HarnessDefinition, ctx: SecretContext = {}): Promise<Record<string, string>> {
    const found = environmentCredentials(def);
    const missing = credentialNames(def).filter((n) => !(n in found));
    const secrets = missing.length === 0 ? null : this.secrets();
    if (!secrets) return found;
    for (const name of missing) {
      try {
        found[name] = await secrets.resolve(name, ctx);
      } catch {
        // not set in any scope searched: that group is simply not satisfied
      }
    }
    return found;
  }

  async status(def: HarnessDefinition, ctx: SecretContext = {}): Promise<HarnessAuthStatus> {
    const command = def.command ?? def.id;
    const install = `Install the CLI for the user that runs jobs, or set harnesses.${def.id}.command (${commandVariable(def.id)}) to its path.`;
    const binary = findBinary(command);
    if (!binary) {
      return {
        available: false,
        reason: `binary '${command}' not found${command.includes('/') ? '' : ' on PATH'}`,
        instructions: [install, ...(def.credentials?.instructions ?? [])],
        missing: 'binary',
      };
    }
    const spec = def.credentials;
    if (!spec || (spec.env.length === 0 && !spec.files?.length))
      return { available: true, reason: `${binary} found; it needs no credentials`, instructions: [] };

    const fromEnv = environmentCredentials(def);
    const groupOf = (have: Record<string, string>) => spec.env.find((g) => g.every((n) => have[n]));
    let group = groupOf(fromEnv);
    if (group) return { available: true, reason: `${binary} found; credentials from the environment (${group.join(', ')})`, instructions: [] };
    const home = process.env.HOME || homedir();
    const file = spec.files?.find((f) => isReadableFile(path.join(home, f)));
    if (file) return { available: true, reason: `${binary} found; logged in (~/${file})`, instructions: [] };
    group = groupOf(await this.credentials(def, ctx));
    if (group) return { available: true, reason: `${binary} found; credentials from secrets and the environment (${group.join(', ')})`, instructions: [] };

    const wanted = spec.env.map((g) => g.join(' + ')).join(', or ');
    return {
      available: false,
      reason: `no credentials: set ${wanted || 'nothing'}${spec.files?.length ? `, or log in (${spec.files.map((f) => `~/${f}`).join(', ')})` : ''}`,
      instructions: spec.instructions,
      missing: 'credentials',
    };
  }
}

function isReadableFile(file: string): boolean {
  try {
    accessSync(file, constants.R_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
