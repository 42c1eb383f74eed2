import type { InjectionToken } from 'tsyringe';
import type { AgentsConfig } from '../../domain/manifest/types.ts';
import type { AgentChoice, AgentRequest } from '../../domain/manifest/profiles.ts';
import type { SecretContext } from './secrets.ts';
import type { GatewayProtocol } from './inference.ts';

/** A harness id or alias: lower-case letters, digits, _ or -. */
export const HARNESS_NAME = /^[a-z][a-z0-9_-]*$/;

export const REASONING_EFFORTS = ['low', 'medium', 'high', 'x-high'] as const;
export type ReasoningEffort = (typeof REASONING_EFFORTS)[number];
export const PERMISSION_POLICIES = ['default', 'auto_edit', 'never', 'yolo'] as const;
export type PermissionPolicy = (typeof PERMISSION_POLICIES)[number];

/** A coding CLI: how to invoke it, and how to read what it prints. It never spawns anything itself. */
export interface HarnessInput {
  prompt: string;
  workspace: string;
  model?: string;
  reasoningEffort?: ReasoningEffort;
  variant?: string;
  permissionPolicy: PermissionPolicy;
  /** The job's environment (and the harness credentials the registry found): passed through to the CLI. */
  env: Record<string, string>;
  /**
   * The model is reached through svc's model gateway (a `managed/<name>` model): `env` already holds
   * the one endpoint and key the CLI gets, so the registry adds none of the server's own credentials.
   */
  gateway?: boolean;
}

export interface HarnessInvocation {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Files to write before starting, relative to the workspace. */
  files: Record<string, string>;
  /**
   * Host paths the CLI reads beside its command (a script `command` runs, say), bound read-only in
   * the attempt sandbox. The command itself, its real file and its node_modules tree are bound
   * already; nothing named in `args` is, since a prompt is an argument too.
   */
  readPaths?: string[];
  /** The model the CLI will run when the input named none and the harness can tell (its inline config names one): the receipt's model. */
  model?: string;
}

/**
 * Usage events are deltas: the sum of all of them is the attempt's usage. `model` is set when the
 * CLI reports it on that line; `costUsd` when the CLI computes a cost itself; `durationMs` when the
 * CLI says how long the provider calls behind this usage took. Cache reads and cache writes are
 * priced differently, so they are counted apart.
 */
export type HarnessEvent =
  /** `delta`: a fragment that continues the previous message (streaming CLIs); join fragments before looking for the json-result block. */
  | { type: 'message'; text: string; delta?: boolean }
  | { type: 'tool'; name: string; input?: unknown }
  /** The agent's own plan moved on (a todo list it keeps): `percentage` of its items done, when it has a list. */
  | { type: 'progress'; message: string; percentage?: number }
  | {
      type: 'usage';
      model?: string;
      inputTokens: number;
      outputTokens: number;
      cacheReadTokens?: number;
      cacheWriteTokens?: number;
      reasoningTokens?: number;
      costUsd?: number;
      durationMs?: number;
    }
  | { type: 'error'; message: string }
  | { type: 'raw'; text: string };

export interface HarnessVariant {
  name: string;
  description: string;
}

export interface HarnessCapabilities {
  supportsModel: boolean;
  modelExamples: string[];
  /** `mode` says how an effort reaches the CLI (a flag, a config key, a thinking budget), null when unsupported. */
  reasoning: { supported: boolean; levels: ReasoningEffort[]; mode: string | null };
}

/** What counts as being logged in to the CLI's provider. */
export interface HarnessCredentials {
  /** Alternatives: the harness is authenticated when every variable of one group is set (environment or system secret). */
  env: string[][];
  /** Login files under the home directory (OAuth tokens a CLI stores after an interactive login). */
  files?: string[];
  /**
   * Variables that say where the provider is (a gateway, a self-hosted endpoint): no credential by
   * themselves, but looked up like the credentials (environment, then secrets) and passed along when set.
   */
  endpoints?: string[];
  /** Shown when no credentials are found. */
  instructions: string[];
  /** A login whose access token svc refreshes itself from a stored refresh token (docs/harnesses.md). */
  oauth?: HarnessOAuth;
}

/**
 * An OAuth login svc keeps fresh: when `refresh` (a variable, found like the credentials) is set, the
 * CLI gets `token` set to an access token svc obtained from `tokenUrl` with it, renewed once fewer
 * than `harness_oauth.refresh_before_seconds` remain. The refresh token never reaches the CLI.
 */
export interface HarnessOAuth {
  /** Harnesses of one family share their tokens (and `harness_oauth.token_urls.<family>` overrides the URL). */
  family: string;
  tokenUrl: string;
  clientId: string;
  token: string;
  refresh: string;
}

/** How a CLI reports its version, and the range svc's invocation and parser were tested with. */
export interface HarnessVersions {
  /** Arguments that print the version (`['--version']`). */
  args: string[];
  oldest: string;
  newest: string;
}

export interface HarnessDefinition {
  id: string;
  aliases?: string[];
  description: string;
  /** Binary name or path when config names none. */
  command?: string;
  variants?: HarnessVariant[];
  capabilities?: HarnessCapabilities;
  credentials?: HarnessCredentials;
  /** When set, the auth status says when the installed CLI is older or newer than the versions tested. */
  versions?: HarnessVersions;
  /**
   * The model protocol the CLI speaks, so a `managed/<name>` model hands it svc's gateway for that
   * protocol (docs/inference.md). Unset: guessed from the credential names (all ANTHROPIC_* →
   * anthropic, all GEMINI_* / GOOGLE_* → gemini, else chat completions).
   */
  speaks?: GatewayProtocol;
  /**
   * The model the CLI runs when nothing names one, for a CLI whose output never says which model
   * ran (Codex): when the job names no model the registry passes this one explicitly, so the request
   * and the receipt name the same model. Config `harnesses.<id>.default_model` replaces it (false: none).
   */
  defaultModel?: string;
  build(input: HarnessInput): HarnessInvocation;
  /** One line of the CLI's output (stdout or stderr) into zero or more events; never throws. */
  parseLine(line: string): HarnessEvent[];
}

/** Where a harness's binary is looked for: on this machine (the default), or nowhere here because the runtime runs it elsewhere (`Runtime.commandsIn`). */
export interface AuthWhere {
  commandsIn?: string;
}

/** Whether a harness can run here: its binary is found and its credentials are present. */
export interface HarnessAuthStatus {
  available: boolean;
  reason: string;
  instructions: string[];
  /** What is missing when it is not available: the CLI itself, or only its credentials (which a managed model supplies). */
  missing?: 'binary' | 'credentials';
  /** When only credentials are missing: the credential variables the server's environment does hold (names, never values). */
  present?: string[];
}

/** The harnesses this server knows (built-in and from plugins), by id or alias. Registered by the harnesses plugin. */
export interface HarnessRegistry {
  /** The definition with the configured binary applied (`harnesses.<id>.command`). */
  get(idOrAlias: string): HarnessDefinition | undefined;
  list(): HarnessDefinition[];
  auth(idOrAlias: string, ctx?: SecretContext, where?: AuthWhere): Promise<HarnessAuthStatus>;
  /** Credential variables this server holds for the harness (its own environment, then secrets): merge them into `HarnessInput.env`. */
  credentials(idOrAlias: string, ctx?: SecretContext): Promise<Record<string, string>>;
  /** Profiles and job fields → what runs (see domain/manifest/profiles.ts); availability is checked only when a profile drops unavailable entries. */
  resolve(request: AgentRequest, agents: AgentsConfig | undefined, ctx?: SecretContext, where?: AuthWhere): Promise<AgentChoice>;
}

/** Every id and alias a registry answers to, for error messages. */
export const harnessNames = (registry: HarnessRegistry): string[] => registry.list().flatMap((h) => [h.id, ...(h.aliases ?? [])]);

export const HarnessRegistryToken = Symbol('HarnessRegistry') as InjectionToken<HarnessRegistry>;

/** One harness as a worker found it (its own availability check, system scope): what it can run, and what it lacks when not. */
export interface HarnessReport {
  available: boolean;
  /** When not available: the CLI itself, or only its credentials (which a managed model or the job's secrets may supply). */
  missing?: 'binary' | 'credentials';
  /** The binary the worker looked for (the configured path, or the name on its PATH). */
  command: string;
  /** The check's own words (`binary 'claude' not found on PATH`, `… found; credentials from the environment (…)`). */
  reason: string;
  /** When only credentials are missing: the credential variables the worker's environment holds (names only). */
  present?: string[];
}

/** A worker process's report: every harness it knows, by id. */
export interface WorkerHarnessReport {
  /** The reporting process (`<host>:<pid>:<random>`), unique per start. */
  workerId: string;
  harnesses: Record<string, HarnessReport>;
  /** How long the report counts without a newer one (a few report intervals): a worker that died stops counting. */
  freshSeconds: number;
}

/**
 * Which harnesses the workers can run. Workers report what they have (at start and every
 * `worker.harness_report_seconds`); job creation asks before it accepts a job. Registered by the
 * harnesses plugin, which keeps the reports (harness_reports).
 */
export interface HarnessAvailability {
  report(report: WorkerHarnessReport): Promise<void>;
  /** The worker is stopping: its report no longer counts. */
  withdraw(workerId: string): Promise<void>;
  /**
   * Throws HarnessUnavailable (core/errors.ts, a 422) when at least one worker reported recently and
   * none of those can run any harness the request may run (its harness fields over the project's
   * `x-svc.agents`), naming each harness and what it lacks. Without any recent report nothing is known,
   * and nothing is refused. Credentials a worker lacks may still come from the job's secrets (`ctx`).
   */
  requireRunnable(request: AgentRequest, agents: AgentsConfig | undefined, ctx: SecretContext): Promise<void>;
}

export const HarnessAvailabilityToken = Symbol('HarnessAvailability') as InjectionToken<HarnessAvailability>;
