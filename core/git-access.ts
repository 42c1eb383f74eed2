import { realpathSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SecretMissing } from './errors.ts';
import type { SecretResolver } from './ports/secrets.ts';
import { UrlRefused, UrlUnresolved, type AddressGuard } from './http/address-guard.ts';
import { pinRepoHost } from './git-addresses.ts';

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
  /** With an address policy (AccessSecrets.addresses): checks the host again and returns `env` pinned to it; call before each clone, fetch or push. */
  connect?: () => Promise<Record<string, string>>;
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
  /** This server's file:// policy, checked before any credential is looked up (checkRepoUrl); absent: not checked here. */
  repoUrls?: RepoUrlPolicy;
  /** This server's outbound address policy (outboundGuard(config)): the host is checked and git pinned to it (core/git-addresses.ts); absent: not checked here. */
  addresses?: AddressGuard;
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
  const access = await credentialsOf(url, secrets, purpose);
  return secrets.addresses ? pinned(url, access, secrets.addresses, purpose) : access;
}

/**
 * `access` with its host checked by the outbound address policy now (a refusal is a GitAccessError
 * naming the URL) and git pinned to the checked addresses; `connect` does it again for a later connection.
 */
async function pinned<T extends { env: Record<string, string> }>(
  url: string,
  access: T,
  guard: AddressGuard,
  purpose: string,
): Promise<T & { connect: () => Promise<Record<string, string>> }> {
  const connect = () =>
    pinRepoHost(url, guard, access.env).catch((err: unknown) => {
      if (err instanceof UrlUnresolved) throw new GitAccessError(`${purpose} ${redactUrl(url)} failed: ${err.message}`);
      throw err instanceof UrlRefused ? new GitAccessError(`${redactUrl(url)} is refused: ${err.message}`) : err;
    });
  return { ...access, env: await connect(), connect };
}

async function credentialsOf(url: string, secrets: AccessSecrets, purpose: string): Promise<RepoAccess> {
  const kind = repoKind(url);
  if (secrets.repoUrls) checkRepoUrl(url, secrets.repoUrls);
  if (kind === 'file') return { kind, env: {}, secrets: [] };
  const name = kind === 'https' ? secrets.tokenSecret : secrets.sshKeySecret;
  const value = await secrets.lookup(name);
  if (value === null) {
    const what = kind === 'https' ? 'a token' : 'an SSH private key';
    throw new GitAccessError(
      `${purpose} ${redactUrl(url)} over ${kind.toUpperCase()} needs ${what}, and no secret ${name} was found: ` +
        `set it with \`svc secrets set ${name} ${secrets.scopeHint}\` (project or org scope, or a system secret shared with jobs)`,
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
  /** This server's file:// policy (repoUrlPolicy(config)). */
  repoUrls: RepoUrlPolicy;
  /** This server's outbound address policy (outboundGuard(config)). */
  addresses?: AddressGuard;
}): AccessSecrets {
  return {
    repoUrls: opts.repoUrls,
    tokenSecret: opts.names.token_secret,
    sshKeySecret: opts.names.ssh_key_secret,
    credentialsDir: opts.credentialsDir,
    scopeHint: `--project ${opts.projectId}`,
    ...(opts.addresses ? { addresses: opts.addresses } : {}),
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
 * An unsupported URL, or one this server's file:// policy refuses, is still a GitAccessError.
 */
export async function optionalRepoAccess(
  url: string,
  secrets: AccessSecrets,
  purpose: string,
): Promise<{ access: Pick<RepoAccess, 'env' | 'secrets' | 'token' | 'connect'>; note: string | null }> {
  repoKind(url);
  if (secrets.repoUrls) checkRepoUrl(url, secrets.repoUrls);
  let found: { access: Pick<RepoAccess, 'env' | 'secrets' | 'token'>; note: string | null };
  try {
    const { env, secrets: masked, token } = await credentialsOf(url, secrets, purpose);
    found = { access: { env, secrets: masked, ...(token === undefined ? {} : { token }) }, note: null };
  } catch (err) {
    if (!(err instanceof GitAccessError)) throw err;
    found = { access: { env: {}, secrets: [] }, note: `${err.message}; going without credentials` };
  }
  // The address policy's refusal is never a reason to go without credentials: it refuses the URL.
  // Readers connect once, right away: the pinned environment is theirs (no `connect`).
  if (!secrets.addresses) return found;
  const { connect: _once, ...access } = await pinned(url, found.access, secrets.addresses, purpose);
  return { ...found, access };
}

/**
 * Where this server lets git read `file://` repositories (`worker.git.allow_file_urls`,
 * `worker.git.file_roots`, docs/security.md "Repository URLs and remotes").
 */
export interface RepoUrlPolicy {
  /** `config.env`: production refuses file:// unless `allowFileUrls` is true. */
  env: 'development' | 'production' | 'test';
  /** null: allowed unless `env` is production. */
  allowFileUrls: boolean | null;
  /** Absolute directories a file:// repository must be under; none: anywhere, except in production (nowhere). */
  fileRoots: string[];
}

/** The policy of a loaded config. */
export function repoUrlPolicy(config: {
  env: RepoUrlPolicy['env'];
  worker: { git: { allow_file_urls: boolean | null; file_roots: string[] } };
}): RepoUrlPolicy {
  return { env: config.env, allowFileUrls: config.worker.git.allow_file_urls, fileRoots: config.worker.git.file_roots };
}

/** The real path of `p`, resolving links in its longest existing part (a repository not made yet is judged by its parent). */
function realPathOf(p: string): string {
  const absolute = path.resolve(p);
  const rest: string[] = [];
  for (let at = absolute; ; at = path.dirname(at)) {
    try {
      return path.join(realpathSync(at), ...rest.reverse());
    } catch {
      if (path.dirname(at) === at) return absolute;
      rest.push(path.basename(at));
    }
  }
}

const under = (p: string, root: string) => p === root || p.startsWith(root.endsWith(path.sep) ? root : root + path.sep);

/**
 * The one check of a repository URL against this server's file:// policy, made where a project's
 * repo_url is set and again wherever one is cloned or fetched (the worker's checkout, builds,
 * manifest reads), so a project made before the policy changed is refused too. https passes, ssh
 * when git would read no part of it as an option (checkSshUrl);
 * a file:// URL (or an absolute path) passes only where file URLs are allowed (`allow_file_urls`,
 * null: unless production) and, when `file_roots` names directories (always in production), only
 * when its real path (links resolved) is under one of theirs. Throws GitAccessError naming the URL.
 */
export function checkRepoUrl(url: string, policy: RepoUrlPolicy): void {
  const kind = repoKind(url);
  if (kind === 'ssh') checkSshUrl(url);
  if (kind !== 'file') return;
  const allowed = policy.allowFileUrls ?? policy.env !== 'production';
  if (!allowed) {
    const why = policy.allowFileUrls === false ? 'worker.git.allow_file_urls is false' : `this server runs with NODE_ENV=${policy.env}`;
    throw new GitAccessError(
      `${url} is refused: file:// repositories are for local development only and ${why}; use an https:// or ssh:// URL ` +
        '(an operator may set worker.git.allow_file_urls: true with worker.git.file_roots)',
    );
  }
  if (policy.fileRoots.length === 0) {
    if (policy.env !== 'production') return;
    throw new GitAccessError(
      `${url} is refused: worker.git.allow_file_urls is true but worker.git.file_roots names no directory, and in production a file:// repository must be under one`,
    );
  }
  if (!url.startsWith('file:///') && !path.isAbsolute(url)) throw new GitAccessError(`${url} is refused: a file:// URL names an absolute path (file:///path)`);
  const local = url.startsWith('file://') ? url.slice('file://'.length) : url;
  if (local.includes('%')) throw new GitAccessError(`${url} is refused: percent-encoded file:// URLs are not accepted under worker.git.file_roots`);
  const real = realPathOf(local);
  const roots = policy.fileRoots.map(realPathOf);
  if (!roots.some((root) => under(real, root)))
    throw new GitAccessError(
      // The real path is not shown: it would tell the caller where links on the server's disk lead.
      `${url} is refused: its real path (links resolved) is not under worker.git.file_roots (${policy.fileRoots.join(', ')})`,
    );
}

/** ssh://, git+ssh:// or scp-like user@host:path, with no part git could read as an option. */
const SSH_URL = /^(?:(?:git\+)?ssh:\/\/(?:(?!-)[\w.~-]+@)?(?!-)[\w.-]+(?::\d+)?\/(?!-)\S+|(?!-)[\w.-]+@(?!-)[\w.-]+:(?!\/\/)(?!-)\S+)$/;

/**
 * An SSH repository URL (repoKind 'ssh') git may be given: ssh://, git+ssh:// or user@host:path
 * with no user, host or path beginning with '-' (`ssh://-oProxyCommand=…` makes git run ssh with
 * that option) and no white space. Checked where a project's repo_url is set and by checkRepoUrl
 * wherever one is cloned. Throws GitAccessError naming the URL.
 */
export function checkSshUrl(url: string): void {
  if (SSH_URL.test(url)) return;
  throw new GitAccessError(
    `${redactUrl(url)} is refused: an SSH URL is ssh://[user@]host[:port]/path or user@host:path, with no white space and no user, host or path beginning with "-" (git would hand it to ssh as an option)`,
  );
}

/**
 * What `git.remote` names, or a GitAccessError saying why it may not: the remote `origin` (the
 * project's repository), an https:// URL, or an SSH URL (ssh://, git+ssh://, user@host:path). Never
 * a local path, file://, http://, another transport (ext::, fd::), a name of another remote, or a
 * URL carrying credentials (the project's secrets hold those).
 */
export function pushRemoteKind(remote: string): 'origin' | 'https' | 'ssh' {
  if (remote === 'origin') return 'origin';
  const refuse = (why: string): never => {
    throw new GitAccessError(`git.remote ${redactUrl(remote)} is refused: ${why}`);
  };
  if (/[\s\0-\x1f\x7f]/.test(remote)) refuse('it contains white space or control characters');
  if (remote.startsWith('https://')) {
    let parsed: URL;
    try {
      parsed = new URL(remote);
    } catch {
      return refuse('it is not a valid https:// URL');
    }
    if (!parsed.hostname || parsed.hostname.startsWith('-')) refuse('an https:// remote needs a host');
    if (parsed.username || parsed.password) refuse("a remote URL carries no credentials (the project's git secrets hold them)");
    return 'https';
  }
  if (SSH_URL.test(remote)) return 'ssh';
  return refuse(
    "it must be 'origin' or an https:// or ssh URL (ssh://host/path or user@host:path); a local path, file://, http:// or another transport is never pushed to",
  );
}

/**
 * `git.remote` for a project whose repository is `repoUrl` (null: none): `origin`, or an https or
 * SSH URL of the same kind as the repository's, on its host (an https repository pushes over https
 * with its token, an SSH one over SSH with its key; a file:// repository only to origin). The jobs API checks
 * it when a job is created, the worker again before it pushes. Throws GitAccessError naming git.remote.
 */
export function checkPushRemote(remote: string, repoUrl: string | null): void {
  const kind = pushRemoteKind(remote);
  if (kind === 'origin') return;
  if (repoUrl === null) throw new GitAccessError(`git.remote ${redactUrl(remote)} is refused: the project has no repo_url, so its jobs push nowhere`);
  const repo = repoKind(repoUrl);
  if (repo !== kind)
    throw new GitAccessError(
      `git.remote ${redactUrl(remote)} is refused: it is an ${kind === 'https' ? 'https' : 'SSH'} URL but the project's repo_url is ${repo === 'file' ? 'a file:// repository' : `an ${repo === 'https' ? 'https' : 'SSH'} URL`}; a remote must be of the repository's own kind${repo === 'file' ? " (here only 'origin')" : ''}`,
    );
  // The push carries the repository's token or key: a remote elsewhere would receive it.
  const [remoteHost, repoHost] = [hostOf(remote), hostOf(repoUrl)];
  if (remoteHost !== repoHost)
    throw new GitAccessError(
      `git.remote ${redactUrl(remote)} is refused: it is on ${remoteHost}, not on the repository's host ${repoHost}; the push carries the repository's credentials, so a remote must be on the same host`,
    );
}

/** The host (with any non-default port) an https or SSH URL names, lower case. */
function hostOf(url: string): string {
  const scp = /^[^@/]+@([^:/]+):/.exec(url);
  if (scp && !url.includes('://')) return scp[1].toLowerCase();
  return new URL(url.replace(/^git\+ssh:/, 'ssh:')).host.toLowerCase();
}
