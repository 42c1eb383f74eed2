import { isIP } from 'node:net';
import { type AddressGuard, normalizeHost, UrlRefused, UrlUnresolved } from './http/address-guard.ts';

/**
 * The outbound address policy (core/http/address-guard.ts) for git, which opens its connections
 * itself: the repository's host is resolved with the guard right before each clone, fetch or push,
 * and git is pinned to the addresses that were checked (https: curl's resolve list through
 * `http.curloptResolve`, with redirects off; ssh: `-o HostName=<address>`), so a name cannot
 * resolve elsewhere between the check and the connection (docs/security.md, "Outbound addresses").
 */

export interface RepoEndpoint {
  kind: 'https' | 'ssh';
  /** As a connection reaches it (normalizeHost: numeric IPv4 forms dotted, no brackets). */
  host: string;
  /** The host as the URL writes it (what curl matches a resolve entry against). */
  written: string;
  port: number;
}

/**
 * Where an https, ssh or scp-like repository URL connects; null for file:// and local paths (nothing
 * is reached). UrlRefused when an http(s) URL does not parse, or when the host the URL parser reads
 * is not the one written after the last `@` (a URL curl could read as another host).
 */
export function repoEndpoint(url: string): RepoEndpoint | null {
  if (/^https?:\/\//i.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new UrlRefused(`${url.replace(/^(\w+:\/\/)[^@/]+@/, '$1')} is not a valid URL`);
    }
    const written = /^https?:\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^:/?#]*)/i.exec(url)?.[1] ?? '';
    const host = normalizeHost(parsed.hostname);
    if (normalizeHost(written) !== host || /[\\\s]/.test(url)) throw new UrlRefused(`the URL's host is ambiguous (${host} or ${written || 'none'})`);
    return { kind: 'https', host, written, port: Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80)) };
  }
  const ssh = /^(?:git\+)?ssh:\/\/(?:[^@/]*@)?(\[[^\]]*\]|[^:/]*)(?::(\d*))?(?:\/|$)/i.exec(url);
  if (ssh) return { kind: 'ssh', host: normalizeHost(ssh[1]), written: ssh[1], port: Number(ssh[2] || 22) };
  const scp = /^[^@/]+@(\[[^\]]*\]|[^:/]+):(?!\/\/)/.exec(url);
  if (scp && !url.includes('://')) return { kind: 'ssh', host: normalizeHost(scp[1]), written: scp[1], port: 22 };
  return null;
}

/** Why the policy refuses a repository URL's host, with the setting that would allow it; null when it may be reached or names no host. */
export async function repoHostRefusal(url: string, guard: AddressGuard, opts: { acceptUnresolved: boolean }): Promise<string | null> {
  try {
    const endpoint = repoEndpoint(url);
    if (!endpoint) return null;
    await guard.checkHost(endpoint.host, endpoint.port);
    return null;
  } catch (err) {
    if (err instanceof UrlUnresolved && opts.acceptUnresolved) return null;
    if (err instanceof UrlRefused) return withHint(err.message);
    throw err;
  }
}

/** The refusal, and the operator setting that lifts it. */
export function withHint(message: string): string {
  if (/own listening address/.test(message)) return message;
  if (/a private address/.test(message))
    return `${message} (an operator may allow private addresses with outbound.allow_private or list the host in outbound.allowed_hosts)`;
  if (/this service's own address/.test(message)) return `${message} (an operator may allow it with outbound.allow_loopback or outbound.allowed_hosts)`;
  return message;
}

/** Appends `git -c` settings through git's environment (GIT_CONFIG_COUNT), after any already there. */
export function withGitConfig(env: Record<string, string>, entries: [key: string, value: string][]): Record<string, string> {
  const start = Number(env.GIT_CONFIG_COUNT ?? 0) || 0;
  const out: Record<string, string> = { ...env, GIT_CONFIG_COUNT: String(start + entries.length) };
  entries.forEach(([key, value], i) => {
    out[`GIT_CONFIG_KEY_${start + i}`] = key;
    out[`GIT_CONFIG_VALUE_${start + i}`] = value;
  });
  return out;
}

/**
 * Checks the repository's host now and returns `env` with git pinned to the addresses checked.
 * Throws UrlRefused (a name that does not resolve too: git would resolve it itself).
 */
export async function pinRepoHost(url: string, guard: AddressGuard, env: Record<string, string>): Promise<Record<string, string>> {
  let endpoint: RepoEndpoint | null;
  let addresses: string[];
  try {
    endpoint = repoEndpoint(url);
    if (!endpoint) return env;
    addresses = await guard.checkHost(endpoint.host, endpoint.port);
  } catch (err) {
    if (err instanceof UrlRefused) err.message = withHint(err.message); // UrlUnresolved stays one
    throw err;
  }
  if (endpoint.kind === 'https') {
    // A redirect would reach a host nobody checked (and carry the token's header there).
    const entries: [string, string][] = [['http.followRedirects', 'false']];
    if (!isIP(endpoint.written.replace(/^\[(.*)\]$/, '$1'))) {
      const list = addresses.map((a) => (isIP(a) === 6 ? `[${a}]` : a)).join(',');
      entries.push(['http.curloptResolve', `${endpoint.written}:${endpoint.port}:${list}`]);
    }
    return withGitConfig(env, entries);
  }
  if (!/^[\w.-]+$/.test(endpoint.host) && isIP(endpoint.host) === 0) throw new UrlRefused(`${endpoint.written} is not a host name ssh can be pinned to`);
  const ssh = env.GIT_SSH_COMMAND ?? 'ssh -o BatchMode=yes';
  return { ...env, GIT_SSH_COMMAND: `${ssh} -o HostName=${addresses[0]} -o HostKeyAlias=${endpoint.host}` };
}

/**
 * Why the policy refuses a registry `host[:port]` (a manifest's registry.host, a build's registry
 * override), with the setting that lifts it; null when it may be reached. The registry is reached
 * by the builder's engine, which resolves the name itself: this check cannot pin it.
 */
export async function registryHostRefusal(hostPort: string, guard: AddressGuard, opts: { acceptUnresolved: boolean }): Promise<string | null> {
  let parsed: URL;
  try {
    parsed = new URL(`https://${hostPort.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '')}`);
  } catch {
    return `${hostPort} is not a host[:port]`;
  }
  try {
    await guard.checkHost(parsed.hostname, Number(parsed.port || 443));
    return null;
  } catch (err) {
    if (err instanceof UrlUnresolved && opts.acceptUnresolved) return null;
    if (err instanceof UrlRefused) return withHint(err.message);
    throw err;
  }
}

/** `owner/name` of a code-host repository URL (https, ssh, or a path ending in owner/name), null when it has none. */
export function repoPath(url: string | null): string | null {
  return url?.match(/[:/]([^/:]+\/[^/]+?)(\.git)?\/?$/)?.[1] ?? null;
}
