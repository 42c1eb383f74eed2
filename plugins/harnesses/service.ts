/**
 * Whether a harness can run on this machine: its binary is found (PATH, or the configured path)
 * and its credentials are present (the server's environment, system or project secrets, or a
 * login file the CLI keeps under the home directory). Secret values never leave this module except
 * through `credentials()`, which the worker merges into the job's environment.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { AuthWhere, HarnessAuthStatus, HarnessDefinition } from '../../core/ports/harness.ts';
import type { SecretContext, SecretResolver } from '../../core/ports/secrets.ts';
import { SecretMissing, SecretNotShared } from '../../core/errors.ts';
import { versionNote } from '../../core/harness-versions.ts';
import type { OAuthRefresher } from './oauth.ts';

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

/** Every variable name a harness may read credentials from, and those naming its endpoint. */
export const credentialNames = (def: HarnessDefinition): string[] => [
  ...new Set([...(def.credentials?.env ?? []).flat(), ...(def.credentials?.endpoints ?? [])]),
];

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

/** What `<binary> <args>` printed, per binary, its change time and the arguments; null when it failed (and then read again next time). */
const versionOutputs = new Map<string, Promise<string | null>>();

export function versionOutput(binary: string, args: string[]): Promise<string | null> {
  let key = `${binary}\0${args.join('\0')}`;
  try {
    key += `\0${statSync(binary).mtimeMs}`;
  } catch {
    return Promise.resolve(null);
  }
  let out = versionOutputs.get(key);
  if (!out) {
    const read = new Promise<string | null>((resolve) =>
      execFile(binary, args, { timeout: 20_000, encoding: 'utf8' }, (err, stdout) => resolve(err ? null : stdout.trim())),
    );
    versionOutputs.set(key, read);
    // A read that failed (a busy machine timing it out, say) is tried again next time.
    void read.then((v) => {
      if (v === null && versionOutputs.get(key) === read) versionOutputs.delete(key);
    });
    out = read;
  }
  return out;
}

export class HarnessAuth {
  /** `secrets` is looked up per call: the secrets plugin registers after this one, or is not loaded at all. */
  constructor(
    private readonly secrets: () => SecretResolver | null,
    private readonly oauth: OAuthRefresher | null = null,
  ) {}

  /**
   * Credentials from the environment first, then secrets (the job's scopes in `ctx`, then system
   * secrets shared with jobs: these go into the agent's process). A stored OAuth refresh token is
   * exchanged for a current access token here; the refresh token itself never reaches the CLI.
   */
  async credentials(def: HarnessDefinition, ctx: SecretContext = {}): Promise<Record<string, string>> {
    const { found } = await this.lookup(def, ctx);
    const login = def.credentials?.oauth;
    const refreshToken = login ? found[login.refresh] : undefined;
    if (!login || refreshToken === undefined) return found;
    delete found[login.refresh];
    if (!this.oauth) return found;
    return { ...found, [login.token]: await this.oauth.accessToken(login, refreshToken) };
  }

  /** The credentials found, and the names only an unshared system secret holds (what `status` explains). */
  private async lookup(def: HarnessDefinition, ctx: SecretContext): Promise<{ found: Record<string, string>; notShared: string[] }> {
    const found = environmentCredentials(def);
    const notShared: string[] = [];
    const missing = credentialNames(def).filter((n) => !(n in found));
    const secrets = missing.length === 0 ? null : this.secrets();
    if (!secrets) return { found, notShared };
    for (const name of missing) {
      try {
        found[name] = await secrets.resolve(name, { ...ctx, internal: false });
      } catch (err) {
        // not set in any scope searched (or not shared with jobs): that group is simply not satisfied
        if (err instanceof SecretNotShared) notShared.push(err.message);
      }
    }
    return { found, notShared };
  }

  /**
   * Which of the harness's credential variables the job's secrets hold (its project, user and org,
   * and system secrets shared with jobs), names only: what a worker that lacks them in its own
   * environment would still get for the job.
   */
  async secretNames(def: HarnessDefinition, ctx: SecretContext): Promise<Set<string>> {
    const held = new Set<string>();
    const secrets = this.secrets();
    if (!secrets) return held;
    for (const name of new Set((def.credentials?.env ?? []).flat())) {
      try {
        await secrets.resolve(name, { ...ctx, internal: false });
        held.add(name);
      } catch (err) {
        if (!(err instanceof SecretMissing)) throw err;
      }
    }
    return held;
  }

  /**
   * `where.commandsIn` (a runtime that runs the CLI in an image) skips looking for the binary on
   * this machine, and with it the version note: only the credentials are checked.
   */
  async status(def: HarnessDefinition, ctx: SecretContext = {}, where: AuthWhere = {}): Promise<HarnessAuthStatus> {
    const command = def.command ?? def.id;
    let found: string;
    let note: string | null = null;
    if (where.commandsIn) {
      found = `'${command}' runs in ${where.commandsIn} (not looked for here)`;
    } else {
      const binary = findBinary(command);
      if (!binary) {
        const install = `Install the CLI for the user that runs jobs, or set harnesses.${def.id}.command (${commandVariable(def.id)}) to its path.`;
        return {
          available: false,
          reason: `binary '${command}' not found${command.includes('/') ? '' : ' on PATH'}`,
          instructions: [install, ...(def.credentials?.instructions ?? [])],
          missing: 'binary',
        };
      }
      // A CLI older or newer than the versions tested is said, never refused: it may well work.
      note = def.versions ? versionNote(await versionOutput(binary, def.versions.args), def.versions) : null;
      found = note ? `${binary} found (${note})` : `${binary} found`;
    }
    const spec = def.credentials;
    if (!spec || (spec.env.length === 0 && !spec.files?.length)) return { available: true, reason: `${found}; it needs no credentials`, instructions: [] };

    const fromEnv = environmentCredentials(def);
    const groupOf = (have: Record<string, string>) => spec.env.find((g) => g.every((n) => have[n]));
    let group = groupOf(fromEnv);
    if (group) return { available: true, reason: `${found}; credentials from the environment (${group.join(', ')})`, instructions: [] };
    const home = process.env.HOME || homedir();
    const file = spec.files?.find((f) => isReadableFile(path.join(home, f)));
    if (file) return { available: true, reason: `${found}; logged in (~/${file})`, instructions: [] };
    const secrets = await this.lookup(def, ctx);
    group = groupOf(secrets.found);
    if (group) return { available: true, reason: `${found}; credentials from secrets and the environment (${group.join(', ')})`, instructions: [] };

    const wanted = spec.env.map((g) => g.join(' + ')).join(', or ');
    return {
      available: false,
      reason:
        `no credentials: set ${wanted || 'nothing'}${spec.files?.length ? `, or log in (${spec.files.map((f) => `~/${f}`).join(', ')})` : ''}` +
        secrets.notShared.map((m) => `; ${m}`).join('') +
        (note ? `; ${note}` : ''),
      instructions: spec.instructions,
      missing: 'credentials',
      present: Object.keys(fromEnv),
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
