import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SecretMissing } from './errors.ts';
import type { SecretResolver } from './ports/secrets.ts';

/**
 * How git reaches a project's repository with the project's credentials, shared by the worker's
 * checkout and the builders' (BuildRequest.access): never on a command line, always masked.
 */

/** A repository URL git cannot be given, or a credential it needs that no secret holds. */
export class GitAccessError extends Error {
  override name = 'GitAccessError';
}

/** How git commands reach one repository: extra environment, and the secret values to mask. */
export interface RepoAccess {
  kind: 'file' | 'https' | 'ssh';
  env: Record<string, string>;
  secrets: string[];
  /** The HTTPS token itself, for tools that take it their own way (the in-cluster builders); absent for SSH and file://. */
  token?: string;
}

export interface AccessSecrets {
  tokenSecret: string;
  sshKeySecret: string;
  /** The secret's value, or null when no scope holds it. */
  lookup(name: string): Promise<string | null>;
  /** Where a key file may be written (outside any checkout, removed after use). */
  credentialsDir: string;
  /** `svc secrets set` scope flag for the hint, e.g. `--project proj_…`. */
  scopeHint: string;
}

const SCP_LIKE = /^[\w.-]+@[\w.-]+:(?!\/\/)/;

/** The URL without any user or password, for messages. */
export function redactUrl(url: string): string {
  return url.replace(/^(\w+:\/\/)[^@/]+@/, '$1');
}

export function repoKind(url: string): RepoAccess['kind'] {
  if (url.startsWith('file://') || path.isAbsolute(url)) return 'file';
  if (/^https?:\/\//.test(url)) return 'https';
  if (url.startsWith('ssh://') || url.startsWith('git+ssh://') || SCP_LIKE.test(url)) return 'ssh';
  throw new GitAccessError(`unsupported repository URL ${redactUrl(url)}: use https://, ssh:// (or user@host:path) or file:///absolute/path`);
}

/**
 * Credentials for `url`, resolved before anything is cloned so that a missing secret fails fast:
 * HTTPS sends the token secret as a basic-auth header through git's environment config (never on a
 * command line), SSH uses the key secret through GIT_SSH_COMMAND, file:// needs nothing.
 */
export async function repoAccess(url: string, secrets: AccessSecrets, purpose: string): Promise<RepoAccess> {
  const kind = repoKind(url);
  if (kind === 'file') return { kind, env: {}, secrets: [] };
  const name = kind === 'https' ? secrets.tokenSecret : secrets.sshKeySecret;
  const value = await secrets.lookup(name);
  if (value === null) {
    const what = kind === 'https' ? 'a token' : 'an SSH private key';
    throw new GitAccessError(
      `${purpose} ${redactUrl(url)} over ${kind.toUpperCase()} needs ${what}, and no secret ${name} was found: ` +
        `set it with \`svc secrets set ${name} ${secrets.scopeHint}\` (project, org or system scope)`,
    );
  }
  if (kind === 'https') {
    const basic = Buffer.from(`x-access-token:${value}`).toString('base64');
    return {
      kind,
      env: { GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: `Authorization: Basic ${basic}` },
      secrets: [value, basic],
      token: value,
    };
  }
  await mkdir(secrets.credentialsDir, { recursive: true, mode: 0o700 });
  const keyFile = path.join(secrets.credentialsDir, 'ssh_key');
  await writeFile(keyFile, value.endsWith('\n') ? value : `${value}\n`, { mode: 0o600 });
  const quote = (p: string) => `'${p.replace(/'/g, `'\\''`)}'`;
  const knownHosts = path.join(secrets.credentialsDir, 'known_hosts');
  return {
    kind,
    env: {
      GIT_SSH_COMMAND: `ssh -i ${quote(keyFile)} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=${quote(knownHosts)}`,
    },
    secrets: [value],
  };
}

/** The secret names of `worker.git`, looked up in a project's scopes (project, org, system). */
export function projectAccessSecrets(opts: {
  names: { token_secret: string; ssh_key_secret: string };
  resolver: SecretResolver | null;
  projectId: string;
  orgId: string | null;
  credentialsDir: string;
}): AccessSecrets {
  return {
    tokenSecret: opts.names.token_secret,
    sshKeySecret: opts.names.ssh_key_secret,
    credentialsDir: opts.credentialsDir,
    scopeHint: `--project ${opts.projectId}`,
    lookup: async (name) => {
      if (!opts.resolver) return null;
      try {
        return await opts.resolver.resolve(name, { projectId: opts.projectId, orgId: opts.orgId });
      } catch (err) {
        if (err instanceof SecretMissing && err.secret === name) return null;
        throw err;
      }
    },
  };
}

/**
 * Like `repoAccess`, for readers that may also reach public repositories (builds, manifest sync):
 * without the secret, git goes without credentials and `note` says which secret a private one needs.
 * An unsupported URL is still a GitAccessError.
 */
export async function optionalRepoAccess(
  url: string,
  secrets: AccessSecrets,
  purpose: string,
): Promise<{ access: Pick<RepoAccess, 'env' | 'secrets' | 'token'>; note: string | null }> {
  repoKind(url);
  try {
    const { env, secrets: masked, token } = await repoAccess(url, secrets, purpose);
    return { access: { env, secrets: masked, ...(token === undefined ? {} : { token }) }, note: null };
  } catch (err) {
    if (!(err instanceof GitAccessError)) throw err;
    return { access: { env: {}, secrets: [] }, note: `${err.message}; going without credentials` };
  }
}
