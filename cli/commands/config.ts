import { parseCommand } from '../args.ts';
import { configPath, credentialsPath, DEFAULT_PROFILE, isExpired, normalizeApiUrl, readConfig, writeConfig, type Context, type Profile } from '../config.ts';
import { UsageError } from '../errors.ts';
import { formatFields, printJson, write } from '../output.ts';

export const CONFIG_USAGE = `usage: svc config <command> [--profile P]

  show                      the resolved API URL, profile, org, project and login state
  set api-url URL           set a profile value (profile: --profile, else the current profile)
  set org ID
  set project ID
  unset api-url|org|project
  use PROFILE               make PROFILE the current profile

~/.svc/config.json:
  {
    "current_profile": "default",
    "profiles": {
      "default": { "api_url": "https://svc.example.com", "org": "ORG_ID", "project": "PROJECT_ID" }
    }
  }

Examples:
  svc config set api-url http://127.0.0.1:4701
  svc config set project PROJECT_ID
  svc config show`;

const KEYS: Record<string, keyof Profile> = { 'api-url': 'api_url', org: 'org', project: 'project' };

function profileKey(name: string | undefined): keyof Profile {
  if (name === undefined || !Object.hasOwn(KEYS, name)) {
    throw new UsageError(`unknown config key "${name ?? ''}" (expected api-url, org or project)`, CONFIG_USAGE);
  }
  return KEYS[name];
}

export async function runConfig(ctx: Context, args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'show':
      parseCommand(rest, {}, CONFIG_USAGE, { min: 0, max: 0 });
      show(ctx);
      return 0;
    case 'set':
    case 'unset': {
      const count = command === 'set' ? 2 : 1;
      const { positionals } = parseCommand(rest, {}, CONFIG_USAGE, { min: count, max: count });
      const key = profileKey(positionals[0]);
      const value = key === 'api_url' && positionals[1] !== undefined ? normalizeApiUrl(positionals[1]) : positionals[1];
      const config = readConfig(ctx.home);
      const profiles = (config.profiles ??= {});
      const profile = (profiles[ctx.profileName] ??= {});
      if (value === undefined) delete profile[key];
      else profile[key] = value;
      config.current_profile ??= ctx.profileName;
      writeConfig(ctx.home, config);
      if (!ctx.json) {
        const what = value === undefined ? `Unset ${positionals[0]}` : `Set ${positionals[0]} to ${value}`;
        write(`${what} in profile "${ctx.profileName}" (${configPath(ctx.home)}).`);
      }
      return 0;
    }
    case 'use': {
      const { positionals } = parseCommand(rest, {}, CONFIG_USAGE, { min: 1, max: 1 });
      const config = readConfig(ctx.home);
      const name = positionals[0];
      (config.profiles ??= {})[name] ??= {};
      config.current_profile = name;
      writeConfig(ctx.home, config);
      if (!ctx.json) write(`Current profile is now "${name}".`);
      return 0;
    }
    case undefined:
      throw new UsageError('missing config command', CONFIG_USAGE);
    default:
      throw new UsageError(`unknown config command "${command}"`, CONFIG_USAGE);
  }
}

const SOURCES = { flag: '--api-url', env: 'SVC_API_URL', profile: 'profile', default: 'built-in default' };

/** What the CLI would use right now, and why. Never prints the token itself. */
function show(ctx: Context): void {
  const config = readConfig(ctx.home);
  const login =
    ctx.tokenSource === 'env'
      ? 'token from SVC_TOKEN'
      : ctx.credential
        ? `${ctx.credential.email ?? 'token'}${ctx.credential.expires_at ? `, expires ${ctx.credential.expires_at}` : ''}${isExpired(ctx.credential) ? ' (EXPIRED)' : ''}`
        : 'not logged in';
  const summary = {
    config_path: configPath(ctx.home),
    credentials_path: credentialsPath(ctx.home),
    profile: ctx.profileName,
    profiles: Object.keys(config.profiles ?? {}),
    api_url: ctx.apiUrl,
    api_url_source: ctx.apiUrlSource,
    org: ctx.org ?? null,
    project: ctx.project ?? null,
    logged_in: Boolean(ctx.token),
    token_source: ctx.tokenSource ?? null,
    email: ctx.tokenSource === 'credentials' ? (ctx.credential?.email ?? null) : null,
    expires_at: ctx.tokenSource === 'credentials' ? (ctx.credential?.expires_at ?? null) : null,
  };
  if (ctx.json) return printJson(summary);
  const current = config.current_profile ?? DEFAULT_PROFILE;
  write(
    formatFields([
      ['config', summary.config_path],
      ['profile', `${ctx.profileName}${ctx.profileMissing ? ' (not in config)' : ''}`],
      ['profiles', summary.profiles.map((p) => (p === current ? `${p}*` : p)).join(', ')],
      ['api_url', `${ctx.apiUrl} (${SOURCES[ctx.apiUrlSource]})`],
      ['org', ctx.org],
      ['project', ctx.project],
      ['login', login],
    ]),
  );
}
