import { isObject } from '../is-object.ts';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { configSchema, type Config } from './schema.ts';

const DEFAULTS_FILE = fileURLToPath(new URL('../../config/default.yaml', import.meta.url));

/** Environment variables with a name of their own, and the config path each sets. */
const NAMED_ENV: Record<string, string> = {
  NODE_ENV: 'env',
  PORT: 'server.port',
  HOST: 'server.host',
  DATABASE_URL: 'database.url',
  SVC_DATA_DIR: 'data_dir',
  SVC_ROLES: 'roles',
  SVC_PLUGINS: 'plugins',
  SVC_LOG_LEVEL: 'log.level',
  SVC_LOG_FORMAT: 'log.format',
  SVC_METRICS_TOKEN: 'metrics.token',
  SVC_PUBLIC_URL: 'server.public_url',
  SVC_BOOTSTRAP_TOKEN: 'auth.bootstrap_token',
  SVC_SECRETS_MASTER_KEY: 'secrets.master_key',
  SVC_HARNESS_A_COMMAND: 'harnesses.harness_a.command',
  SVC_HARNESS_B_COMMAND: 'harnesses.harness_b.command',
  SVC_HARNESS_C_COMMAND: 'harnesses.harness_c.command',
  SVC_HARNESS_D_COMMAND: 'harnesses.harness_d.command',
  SVC_HARNESS_E_COMMAND: 'harnesses.harness_e.command',
  SVC_HARNESS_F_COMMAND: 'harnesses.harness_f.command',
  SVC_WORKSPACE_ROOT: 'worker.workspace_root',
  SVC_RUN_AS_UID: 'worker.run_as_uid',
  SVC_SANDBOX: 'worker.sandbox.mode',
  SVC_SANDBOX_NETWORK: 'worker.sandbox.network',
  SVC_WORKER_URLS: 'worker.urls',
  SVC_BUILD_REUSE: 'builds.reuse',
  SVC_INTERNAL_API_KEY: 'builds.internal_api_key',
};

/** Any other key is reachable as SVC_<SECTION>__<KEY>, e.g. SVC_AUTH__TOKEN_TTL_DAYS=7. */
const GENERIC_PREFIX = 'SVC_';
const PATH_SEPARATOR = '__';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

type Tree = Record<string, unknown>;

/** Deep merge of config trees: mappings merge key by key, anything else in `over` replaces. */
export function merge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isObject(v) && isObject(out[k]) ? merge(out[k] as Tree, v) : v;
  return out;
}

function setPath(tree: Tree, dotted: string, value: unknown): void {
  const keys = dotted.split('.');
  let node = tree;
  for (const key of keys.slice(0, -1)) {
    if (!isObject(node[key])) node[key] = {};
    node = node[key] as Tree;
  }
  node[keys[keys.length - 1]] = value;
}

function readYaml(file: string): Tree {
  const parsed = YAML.parse(readFileSync(file, 'utf8')) ?? {};
  if (!isObject(parsed)) throw new ConfigError([`${file}: the top level must be a mapping`]);
  return expandShorthands(parsed);
}

/** `worker.sandbox: off` is `worker.sandbox: {mode: off}`, so a later layer can still set one key of it. */
function expandShorthands(tree: Tree): Tree {
  const worker = tree.worker;
  if (isObject(worker) && typeof worker.sandbox === 'string') return { ...tree, worker: { ...worker, sandbox: { mode: worker.sandbox } } };
  return tree;
}

/** The config path an environment variable sets (`PORT` → `server.port`, `SVC_AUTH__TOKEN_TTL_DAYS` → `auth.token_ttl_days`), or null when it sets none. */
export function configPathOf(name: string): string | null {
  if (NAMED_ENV[name]) return NAMED_ENV[name];
  if (name.startsWith(GENERIC_PREFIX) && name.includes(PATH_SEPARATOR)) return name.slice(GENERIC_PREFIX.length).toLowerCase().split(PATH_SEPARATOR).join('.');
  return null;
}

/** Whether the config key at `dotted` holds text, so a value like an all-digit hex key stays a string. */
function holdsText(dotted: string): boolean {
  try {
    return configSchema.extract(dotted).type === 'string';
  } catch {
    return false;
  }
}

/**
 * Env values are YAML scalars ("7" → 7, "true" → true, "null" → null), except that a key holding
 * text keeps the text as written ("0123" stays "0123", not 123); lists are comma-separated.
 */
function envOverrides(env: NodeJS.ProcessEnv): { tree: Tree; sources: Map<string, string> } {
  const tree: Tree = {};
  const sources = new Map<string, string>();
  for (const [name, raw] of Object.entries(env)) {
    if (raw === undefined) continue;
    const dotted = configPathOf(name);
    if (!dotted) continue;
    let value: unknown = raw;
    try {
      value = YAML.parse(raw);
    } catch {
      /* keep the raw string */
    }
    if (isObject(value) || ((typeof value === 'number' || typeof value === 'boolean') && holdsText(dotted))) value = raw;
    setPath(tree, dotted, value);
    sources.set(dotted, name);
  }
  return { tree, sources };
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Extra layer above the file and below the environment (tests, `svc serve` flags). */
  overrides?: Tree;
  cwd?: string;
}

/** defaults ← config file (SVC_CONFIG, else ./svc.yaml when present) ← overrides ← environment. */
export function loadConfig(opts: LoadOptions = {}): Config {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  let tree = readYaml(DEFAULTS_FILE);
  const file = env.SVC_CONFIG ? path.resolve(cwd, env.SVC_CONFIG) : path.join(cwd, 'svc.yaml');
  if (env.SVC_CONFIG && !existsSync(file)) throw new ConfigError([`SVC_CONFIG: file not found: ${file}`]);
  if (existsSync(file)) tree = merge(tree, readYaml(file));
  if (opts.overrides) tree = merge(tree, expandShorthands(opts.overrides));
  const { tree: fromEnv, sources } = envOverrides(env);
  tree = merge(tree, fromEnv);

  const { value, error } = configSchema.validate(tree, { abortEarly: false, convert: true });
  if (error) {
    throw new ConfigError(
      error.details.map((d) => {
        const at = d.path.join('.');
        const from = sources.get(at) ? ` (from ${sources.get(at)})` : '';
        return `${at}: ${d.message}${from}`;
      }),
    );
  }
  const config = value as Config;
  config.data_dir = path.resolve(cwd, config.data_dir);
  return config;
}
