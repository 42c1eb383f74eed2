import Joi from 'joi';
import { list } from './joi-list.ts';
import { workerSchema } from './worker-schema.ts';
import type { SandboxSettings } from '../sandbox.ts';
import { parseRange } from '../http/client-address.ts';

export const ROLES = ['api', 'orchestrator', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/** `{use, options}`: which adapter serves a port, and its own options (validated by the adapter). */
const adapterChoice = Joi.object({
  use: Joi.string().min(1).required(),
  options: Joi.object().unknown(true).default({}),
});

export const configSchema = Joi.object({
  env: Joi.string().valid('development', 'production', 'test').required(),
  data_dir: Joi.string().required(),
  roles: list(Joi.string().valid(...ROLES))
    .min(1)
    .unique()
    .required(),
  server: Joi.object({
    host: Joi.string().required(),
    port: Joi.number().integer().min(0).max(65535).required(),
    public_url: Joi.string().uri().allow(null).required(),
    shutdown_timeout_ms: Joi.number().integer().min(0).required(),
    body_timeout_ms: Joi.number().integer().min(100).max(3_600_000).required(),
    response_validation: Joi.string().valid('error', 'log', 'off').required(),
    response_validation_sample: Joi.number().min(0).max(100).required(),
    bench_routes: Joi.boolean().required(),
    trusted_proxies: list(
      Joi.string()
        .custom((value: string, helpers) => (parseRange(value) ? value.trim() : helpers.error('any.invalid')))
        .messages({
          'any.invalid': '{{#label}} must be an IP address or a CIDR (10.0.0.0/8, fd00::/8)',
        }),
    ).required(),
  }).required(),
  database: Joi.object({
    url: Joi.string().allow(null, '').required(),
    pool_max: Joi.number().integer().min(1).max(200).required(),
    control_pool_max: Joi.number().integer().min(1).max(50).required(),
    statement_timeout_ms: Joi.number().integer().min(0).required(),
    lock_timeout_ms: Joi.number().integer().min(0).required(),
    embedded_port: Joi.number().integer().min(0).max(65535).required(),
  }).required(),
  log: Joi.object({
    level: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').required(),
    format: Joi.string().valid('auto', 'pretty', 'json').required(),
  }).required(),
  metrics: Joi.object({
    token: Joi.string().min(16).allow(null).required(),
  }).required(),
  plugins: list(Joi.string()).required(),
  adapters: Joi.object().pattern(Joi.string(), adapterChoice).required(),
  auth: Joi.object({
    issuer: Joi.string().required(),
    token_ttl_days: Joi.number().integer().min(1).max(90).required(),
    challenge_ttl_seconds: Joi.number().integer().min(10).max(3600).required(),
    bootstrap_token: Joi.string().min(8).allow(null, '').required(),
    bootstrap_window_minutes: Joi.number().min(0).required(),
    bootstrap_trigger_file: Joi.string().required(),
    identity_provider_url: Joi.string().uri().allow(null).required(),
    sso: Joi.object({
      secret: Joi.string().min(32).allow(null, '').required(),
      issuer: Joi.string().allow(null, '').required(),
      audience: Joi.string().min(1).required(),
    }).required(),
    session_cookie_domain: Joi.string().hostname().pattern(/\./, 'a domain with a dot (example.com), never a public suffix alone').allow(null).required(),
    magic_link_limits: Joi.object({
      window_seconds: Joi.number().integer().min(1).max(86_400).required(),
      per_email: Joi.number().integer().min(1).required(),
      per_address: Joi.number().integer().min(1).required(),
    }).required(),
  }).required(),
  secrets: Joi.object({
    master_key: Joi.string().allow(null, '').required(),
  }).required(),
  harnesses: Joi.object({
    plugins: list(Joi.string().min(1)).unique().required(),
  })
    .pattern(
      /^[a-z][a-z0-9_-]*$/,
      Joi.object({
        command: Joi.string().min(1).allow(null).required(),
        default_model: Joi.alternatives(Joi.string().min(1), Joi.boolean().valid(false)).allow(null),
        mcp_servers: Joi.object().pattern(Joi.string(), Joi.object().unknown(true)),
      }),
    )
    .required(),
  harness_oauth: Joi.object({
    refresh_before_seconds: Joi.number().integer().min(0).max(86_400).required(),
    timeout_ms: Joi.number().integer().min(100).max(120_000).required(),
    token_urls: Joi.object()
      .pattern(/^[a-z][a-z0-9_-]*$/, Joi.string().uri({ scheme: ['http', 'https'] }))
      .required(),
  }).required(),
  worker: workerSchema,
  limits: Joi.object({
    requests: Joi.object({
      enabled: Joi.boolean().required(),
      per_second: Joi.number().greater(0).required(),
      burst: Joi.number().integer().min(1).required(),
      batch: Joi.number().integer().min(1).required(),
      lease_ms: Joi.number().integer().min(10).max(60_000).required(),
    }).required(),
    org: Joi.object({
      queued_jobs: Joi.number().integer().min(1).required(),
      running_attempts: Joi.number().integer().min(1).required(),
      webhooks: Joi.number().integer().min(1).required(),
      environments: Joi.number().integer().min(1).required(),
    }).required(),
  }).required(),
  outbound: Joi.object({
    allow_loopback: Joi.boolean().allow(null).required(),
    allow_private: Joi.boolean().allow(null).required(),
    allowed_hosts: list(Joi.string().min(1)).required(),
  }).required(),
  webhooks: Joi.object({
    retry_delays_ms: list(Joi.number().integer().min(1)).max(20).required(),
    timeout_ms: Joi.number().integer().min(1).required(),
    disable_after_failures: Joi.number().integer().min(1).required(),
    poll_ms: Joi.number().integer().min(10).required(),
    max_in_flight: Joi.number().integer().min(1).max(10_000).required(),
    allow_loopback: Joi.boolean().allow(null).required(),
    allow_private: Joi.boolean().allow(null).required(),
    allowed_hosts: list(Joi.string().min(1)).required(),
  }).required(),
  inference: Joi.object({
    providers: Joi.object()
      .pattern(
        /^[a-z][a-z0-9_-]*$/,
        Joi.object({
          kind: Joi.string().valid('openai', 'anthropic').required(),
          base_url: Joi.string()
            .uri({ scheme: ['http', 'https'] })
            .required(),
          credential_secret: Joi.string()
            .pattern(/^[A-Z][A-Z0-9_]*$/)
            .allow(null)
            .required(),
          models: list(Joi.string().min(1)).required(),
        }),
      )
      .required(),
    models_cache_seconds: Joi.number().integer().min(0).max(86_400).required(),
    request_timeout_ms: Joi.number().integer().min(1).required(),
    idle_timeout_ms: Joi.number().integer().min(1).required(),
    max_request_bytes: Joi.number().integer().min(1024).required(),
    proxy_url: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .allow(null, '')
      .required(),
    allow_loopback: Joi.boolean().allow(null).required(),
    allow_private: Joi.boolean().allow(null).required(),
    allowed_hosts: list(Joi.string().min(1)).required(),
  }).required(),
  retention: Joi.object({
    events_days: Joi.number().integer().min(0).max(36_500).required(),
    webhook_deliveries_days: Joi.number().integer().min(0).max(36_500).required(),
  }).required(),
  environments: Joi.object({
    health_interval_seconds: Joi.number().integer().min(1).max(86_400).required(),
  }).required(),
  work: Joi.object({
    lease_seconds: Joi.number().min(0.3).max(3600).required(),
    poll_ms: Joi.number().integer().min(10).max(60_000).required(),
  }).required(),
  builds: Joi.object({
    backend: Joi.string()
      .pattern(/^[a-z][a-z0-9_-]*$/)
      .valid(Joi.in('builders', { adjust: (builders: unknown) => Object.keys(builders ?? {}) }))
      .messages({ 'any.only': '{{#label}} must be a key of builds.builders (the builders this server has)' })
      .required(),
    builders: Joi.object()
      .pattern(/^[a-z][a-z0-9_-]*$/, Joi.object().unknown(true))
      .required(),
    reuse: Joi.boolean().required(),
    timeout_seconds: Joi.number().integer().min(1).max(86_400).required(),
    poll_ms: Joi.number().integer().min(10).required(),
    heartbeat_seconds: Joi.number().integer().min(1).max(600).required(),
    log_flush_ms: Joi.number().integer().min(0).max(10_000).required(),
    native_registry: Joi.string().min(1).allow(null).required(),
    internal_api_key: Joi.string().min(16).allow(null).required(),
    token: Joi.object({
      key_file: Joi.string().min(1).allow(null).required(),
      service: Joi.string().min(1).required(),
      issuer: Joi.string().min(1).required(),
      ttl_seconds: Joi.number().integer().min(30).max(86_400).required(),
    }).required(),
  }).required(),
}).required();

export interface HarnessSettings {
  command: string | null;
  /**
   * The model a job that names none runs, passed to the CLI explicitly (so the receipt names it).
   * Unset or null: the definition's `defaultModel`; false: none (the CLI's own config chooses).
   */
  default_model?: string | false | null;
  /** harness_a only: MCP servers in the CLI's `mcpServers` format. */
  mcp_servers?: Record<string, Record<string, unknown>>;
}
export type HarnessesConfig = { plugins: string[] } & { [id: string]: HarnessSettings | string[] };

export interface AdapterChoice {
  use: string;
  options: Record<string, unknown>;
}

export interface Config {
  env: 'development' | 'production' | 'test';
  data_dir: string;
  roles: Role[];
  server: {
    host: string;
    port: number;
    public_url: string | null;
    shutdown_timeout_ms: number;
    /** How long a client has to send a whole request, headers and body: then 408 and the connection is closed (core/http/server.ts createListener). */
    body_timeout_ms: number;
    response_validation: 'error' | 'log' | 'off';
    response_validation_sample: number;
    /** The benchmark's constant routes (plugins/bench); off unless a bench or test turns them on. */
    bench_routes: boolean;
    /** Reverse proxies whose X-Forwarded-For names the client (addresses or CIDRs); empty: the header is never read (core/http/client-address.ts). */
    trusted_proxies: string[];
  };
  database: { url: string | null; pool_max: number; control_pool_max: number; statement_timeout_ms: number; lock_timeout_ms: number; embedded_port: number };
  log: { level: string; format: 'auto' | 'pretty' | 'json' };
  /** GET /metrics: with a token, scrapers send it as a bearer token; without one, only clients on this host may scrape. */
  metrics: { token: string | null };
  plugins: string[];
  adapters: Record<string, AdapterChoice>;
  auth: {
    issuer: string;
    token_ttl_days: number;
    challenge_ttl_seconds: number;
    bootstrap_token: string | null;
    bootstrap_window_minutes: number;
    bootstrap_trigger_file: string;
    identity_provider_url: string | null;
    /** Web sign-on: identity-provider tokens (HS256 with `secret`) exchanged at POST /auth/exchange. */
    sso: { secret: string | null; issuer: string | null; audience: string };
    /** POST /auth/magic-link: requests allowed per e-mail and per client address in each window; over it, 429 and no mail. */
    magic_link_limits: { window_seconds: number; per_email: number; per_address: number };
    /**
     * The session cookie's Domain: null (the default) keeps it host-only; a root domain (example.com)
     * shares the sign-in with every host under it, as the interface's sign-on broker cookie is.
     */
    session_cookie_domain: string | null;
  };
  secrets: { master_key: string | null };
  /** `plugins`: harness packages or paths; `<id>.command`: that harness's binary (null: its default name on PATH). */
  harnesses: HarnessesConfig;
  /** OAuth logins svc refreshes for harness families (docs/harnesses.md). */
  harness_oauth: {
    /** An access token with fewer seconds than this left is renewed before a job gets it. */
    refresh_before_seconds: number;
    timeout_ms: number;
    /** Per family, another token endpoint than the CLI's own (a test's fake, a proxy). */
    token_urls: Record<string, string>;
  };
  worker: {
    concurrency: number;
    /** SVC_WORKSPACE_ROOT; null: <data_dir>/workspaces. */
    workspace_root: string | null;
    keep_workspaces: boolean;
    /** Reused workspaces (workspace.mode job and session) idle this long are removed. */
    workspace_idle_seconds: number;
    /** The repository cache attempts and builds clone from (core/repo-cache.ts, docs/workspaces.md). */
    repo_cache: {
      enabled: boolean;
      /** null: `.repo-cache` in the workspace root. */
      path: string | null;
      /** Above this, the mirrors and prepared checkouts used longest ago are removed. */
      max_bytes: number;
      /** Isolated attempts work in an overlay over a prepared checkout where the machine allows it (docs/workspaces.md). */
      copy_on_write: boolean;
    };
    run_as_uid: number | null;
    run_as_gid: number | null;
    heartbeat_seconds: number;
    /** How long a claimed attempt's lease lasts; each heartbeat renews it for this long. */
    lease_seconds: number;
    /** SVC_API_URL given to jobs; null: server.public_url, else this server's own address. */
    api_url: string | null;
    log_flush_ms: number;
    /** How often the worker reports which harnesses it can run (and at its start); a report counts for three times this. */
    harness_report_seconds: number;
    /** SVC_WORKER_URLS: worker type (`hints.worker_type`) → base URL of a `svc serve --roles worker` process. */
    urls: Record<string, string>;
    /** How long a dispatch or capacity call to a remote worker may take. */
    dispatch_timeout_ms: number;
    /** After a remote worker refused or could not be reached: how long before it is asked again. */
    dispatch_retry_ms: number;
    /** The attempt sandbox (core/sandbox.ts, docs/security.md); a bare mode in the file is the shorthand for `{mode}`. */
    sandbox: SandboxSettings;
    git: {
      token_secret: string;
      ssh_key_secret: string;
      author_name: string;
      author_email: string;
      /** file:// repositories (project repo_url): null allows them unless env is production (docs/security.md). */
      allow_file_urls: boolean | null;
      /** Absolute directories file:// repositories must be under (always in production; none elsewhere: anywhere). */
      file_roots: string[];
    };
    /** What the worker records of an attempt's diff (docs/diffs.md): patch text up to `max_patch_bytes` (0: counts only), `max_files` files listed. */
    diff: { max_patch_bytes: number; max_files: number };
  };
  /** Request rate limits per caller and per-org quotas (core/http/rate-limit.ts, docs/operations.md "Rate limits and quotas"). */
  limits: {
    /**
     * A token bucket per caller shared by every api replica through PostgreSQL: `per_second` refill,
     * `burst` capacity; a process leases `batch` tokens at a time and forgets unspent ones after `lease_ms`.
     */
    requests: { enabled: boolean; per_second: number; burst: number; batch: number; lease_ms: number };
    /** Per org: jobs waiting (phase ready or backlog), running attempts, webhook subscriptions, environments. */
    org: { queued_jobs: number; running_attempts: number; webhooks: number; environments: number };
  };
  /** The address policy of every connection made for a tenant (core/http/address-guard.ts guardOptions); null: allowed unless env is production. */
  outbound: { allow_loopback: boolean | null; allow_private: boolean | null; allowed_hosts: string[] };
  webhooks: {
    /** Delay before each retry of a failed delivery (one entry per retry). */
    retry_delays_ms: number[];
    timeout_ms: number;
    disable_after_failures: number;
    /** Backstop poll of the outbox and due deliveries when no NOTIFY arrives. */
    poll_ms: number;
    max_in_flight: number;
    /** The older names of outbound.*, for webhook deliveries only: null: outbound's setting decides. */
    allow_loopback: boolean | null;
    allow_private: boolean | null;
    /** Added to outbound.allowed_hosts for deliveries. */
    allowed_hosts: string[];
  };
  inference: InferenceConfig;
  /** Days a routed event and a finished webhook delivery are kept; 0 keeps them for ever (docs/operations.md). */
  retention: { events_days: number; webhook_deliveries_days: number };
  environments: {
    /** How often the orchestrator reads deployed environments' health from the deployer. */
    health_interval_seconds: number;
  };
  /** The work engine (core/work): how long a lease outlives its owner's last beat, and the claimers' backstop poll. */
  work: { lease_seconds: number; poll_ms: number };
  builds: BuildsConfig;
}

export interface BuildsConfig {
  /** The builder new runs use: a key of `builders`. */
  backend: string;
  /** Builder options by backend name. */
  builders: Record<string, Record<string, unknown>>;
  /** SVC_BUILD_REUSE. */
  reuse: boolean;
  timeout_seconds: number;
  poll_ms: number;
  heartbeat_seconds: number;
  log_flush_ms: number;
  /** host[:port] of the registry behind `registry: svc`. */
  native_registry: string | null;
  /** SVC_INTERNAL_API_KEY. */
  internal_api_key: string | null;
  token: { key_file: string | null; service: string; issuer: string; ttl_seconds: number };
}

/** A provider svc talks to, as configured: its wire kind, where it is, and the name of the secret holding its key. */
export interface ProviderSettings {
  kind: 'openai' | 'anthropic';
  base_url: string;
  credential_secret: string | null;
  /** Listed when the provider has no models endpoint or cannot be asked. */
  models: string[];
}

export interface InferenceConfig {
  providers: Record<string, ProviderSettings>;
  models_cache_seconds: number;
  /** Until the upstream's response headers arrive (a target may set its own). */
  request_timeout_ms: number;
  /** Longest silence inside a streamed or read body (a target may set its own). */
  idle_timeout_ms: number;
  max_request_bytes: number;
  /** The proxy's base URL as jobs reach it; null: server.public_url, then worker.api_url, then the listening address. */
  proxy_url: string | null;
  /** The older names of outbound.*, for org targets only: null: outbound's setting decides; allowed_hosts adds to outbound's. */
  allow_loopback: boolean | null;
  allow_private: boolean | null;
  allowed_hosts: string[];
}
