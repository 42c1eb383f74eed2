import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { GlobalFlags } from './args.ts';
import { CliError, UsageError } from './errors.ts';

/**
 * ~/.svc/config.json:
 *   { "current_profile": "default",
 *     "profiles": { "default": { "api_url": "https://svc.example.com", "org": "<org id>", "project": "<project id>" } } }
 * ~/.svc/credentials.json (mode 0600, keyed by API URL without a trailing slash):
 *   { "https://svc.example.com": { "access_token": "...", "expires_at": "<ISO time>", "email": "me@example.com" } }
 */
export interface Profile {
  api_url?: string;
  org?: string;
  project?: string;
}

export interface ConfigFile {
  current_profile?: string;
  profiles?: Record<string, Profile>;
}

export interface Credential {
  access_token: string;
  expires_at?: string | null;
  email?: string | null;
}

export type CredentialsFile = Record<string, Credential>;

export const DEFAULT_API_URL = 'http://localhost:4701';
export const DEFAULT_PROFILE = 'default';

export type ApiUrlSource = 'flag' | 'env' | 'profile' | 'default';

/** Everything a command needs, resolved once from flags, environment and ~/.svc. */
export interface Context {
  flags: GlobalFlags;
  env: NodeJS.ProcessEnv;
  home: string;
  json: boolean;
  profileName: string;
  /** True when the profile was picked explicitly (flag or SVC_PROFILE) but is not in config.json. */
  profileMissing: boolean;
  profile: Profile;
  apiUrl: string;
  apiUrlSource: ApiUrlSource;
  /** --org, else the profile's org. */
  org?: string;
  /** --project, else the profile's project. */
  project?: string;
  token?: string;
  tokenSource?: 'env' | 'credentials';
  credential?: Credential;
}

export const svcDir = (home: string): string => join(home, '.svc');
export const configPath = (home: string): string => join(svcDir(home), 'config.json');
export const credentialsPath = (home: string): string => join(svcDir(home), 'credentials.json');

/** `~` is $HOME when set (tests point it at a temp dir), else the OS's idea of home. */
export const homeDir = (env: NodeJS.ProcessEnv): string => env.HOME || homedir();

/** An API URL as credentials are keyed: http(s) only, no trailing slash. */
export function normalizeApiUrl(raw: string): string {
  const trimmed = raw.trim().replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(trimmed);
  } catch {
    throw new UsageError(`invalid API URL "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`invalid API URL "${raw}": use http:// or https://`);
  }
  return trimmed;
}

function readJson<T>(path: string, fallback: T): T {
  if (!existsSync(path)) return fallback;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read ${path}: ${(error as Error).message}`);
  }
  if (text.trim() === '') return fallback;
  try {
    const value = JSON.parse(text);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('expected a JSON object');
    return value as T;
  } catch (error) {
    throw new CliError(`cannot parse ${path}: ${(error as Error).message}`);
  }
}

/** Write a file under ~/.svc atomically: the directory is 0700 and the file 0600, even if either already existed. */
function writePrivateJson(home: string, path: string, value: unknown): void {
  const dir = svcDir(home);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, path);
    chmodSync(path, 0o600);
  } catch (error) {
    throw new CliError(`cannot write ${path}: ${(error as Error).message}`);
  }
}

export const readConfig = (home: string): ConfigFile => readJson<ConfigFile>(configPath(home), {});
export const writeConfig = (home: string, config: ConfigFile): void => writePrivateJson(home, configPath(home), config);
export const readCredentials = (home: string): CredentialsFile => readJson<CredentialsFile>(credentialsPath(home), {});

export function saveCredential(home: string, apiUrl: string, credential: Credential): void {
  const all = readCredentials(home);
  all[normalizeApiUrl(apiUrl)] = credential;
  writePrivateJson(home, credentialsPath(home), all);
}

/** Forget the credential for one API URL; true if there was one. */
export function removeCredential(home: string, apiUrl: string): boolean {
  const all = readCredentials(home);
  const key = normalizeApiUrl(apiUrl);
  if (!Object.hasOwn(all, key)) return false;
  delete all[key];
  writePrivateJson(home, credentialsPath(home), all);
  return true;
}

/** The profile to use: --profile, then SVC_PROFILE, then config.json's current_profile, then "default". */
export function profileNameFor(flags: GlobalFlags, env: NodeJS.ProcessEnv, config: ConfigFile): string {
  return flags.profile || env.SVC_PROFILE || config.current_profile || DEFAULT_PROFILE;
}

/**
 * Resolve the context. API URL: --api-url > SVC_API_URL > the profile's api_url > http://localhost:4701.
 * Token: SVC_TOKEN > credentials.json entry for the API URL.
 */
export function resolveContext(flags: GlobalFlags, env: NodeJS.ProcessEnv): Context {
  const home = homeDir(env);
  const config = readConfig(home);
  const profileName = profileNameFor(flags, env, config);
  const stored = config.profiles?.[profileName];
  const profile: Profile = stored ?? {};
  const explicitProfile = Boolean(flags.profile || env.SVC_PROFILE);

  let apiUrlSource: ApiUrlSource = 'default';
  let rawUrl = DEFAULT_API_URL;
  if (flags.apiUrl) [rawUrl, apiUrlSource] = [flags.apiUrl, 'flag'];
  else if (env.SVC_API_URL) [rawUrl, apiUrlSource] = [env.SVC_API_URL, 'env'];
  else if (profile.api_url) [rawUrl, apiUrlSource] = [profile.api_url, 'profile'];
  let apiUrl: string;
  try {
    apiUrl = normalizeApiUrl(rawUrl);
  } catch (error) {
    const where = { flag: '--api-url', env: 'SVC_API_URL', profile: `profile "${profileName}" in ${configPath(home)}`, default: '' };
    throw new UsageError(`${(error as Error).message} (from ${where[apiUrlSource]})`);
  }

  const credential = readCredentials(home)[apiUrl];
  let token: string | undefined;
  let tokenSource: Context['tokenSource'];
  if (env.SVC_TOKEN) [token, tokenSource] = [env.SVC_TOKEN, 'env'];
  else if (credential?.access_token) [token, tokenSource] = [credential.access_token, 'credentials'];

  return {
    flags,
    env,
    home,
    json: flags.json,
    profileName,
    profileMissing: explicitProfile && !stored,
    profile,
    apiUrl,
    apiUrlSource,
    org: flags.org || profile.org,
    project: flags.project || profile.project,
    token,
    tokenSource,
    credential,
  };
}

/** True when a stored credential's expiry has passed. */
export function isExpired(credential: Credential | undefined, now = Date.now()): boolean {
  if (!credential?.expires_at) return false;
  const at = Date.parse(credential.expires_at);
  return Number.isFinite(at) && at <= now;
}
