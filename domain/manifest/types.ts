/**
 * The parsed form of a project manifest (`.svc/manifest.yaml`), after validation and
 * normalization: a step's `run: "cmd"` shorthand becomes `script: {run: "cmd"}`, so a step carries
 * exactly one of `action`, `script` or `agent`. Keys the manifest holds beyond these are kept as
 * they were written (the spec leaves the rest of the schema open).
 */
import type { PipelineInputDeclarations } from './pipeline-inputs.ts';

export type ResourceRefPolicy = 'inherit' | 'none' | string[];
export type DbAccess = 'read_only' | 'read_write';
export type EnvOverrides = Record<string, string>;

/** Built-in action types a workflow or pipeline step may name. */
export const ACTION_TYPES = ['build', 'release', 'deploy', 'run', 'job', 'create-pr', 'notify', 'env-ensure', 'env-delete'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

export interface ActionSpec {
  type: ActionType;
  /** The action's inputs (build: services, force_rebuild; deploy: env_name; …). */
  with?: Record<string, unknown>;
}

export interface ScriptSpec {
  /** Shell command run in the workspace (`script.command` in the YAML is read as `run`). */
  run: string;
  /** Seconds. */
  timeout?: number;
}

export interface WorkflowAgentSpec {
  name: string;
  harness?: string;
  harness_profile?: string;
  toolchains?: string[];
}

export interface PipelineAgentSpec {
  prompt: string;
}

/** Which of the three execution kinds a step uses. */
export type StepKind = 'action' | 'script' | 'agent';

/** Where a step works: `isolated` a fresh workspace per attempt (no shared run branch), `job` the job's own workspace across its attempts, `session` one workspace per `key` shared one job at a time. */
export const WORKSPACE_MODES = ['job', 'session', 'isolated'] as const;
export type WorkspaceMode = (typeof WORKSPACE_MODES)[number];
export interface WorkspaceSettings {
  mode?: WorkspaceMode;
  /** Names the session workspace (mode session only). */
  key?: string;
  /** A sparse checkout: only these folders (git sparse-checkout, cone mode). */
  sparse?: string[];
}

/** A workflow's or pipeline's git controls for its steps (the job's git controls; `branch` names the run branch, `${run_id}` allowed). */
export interface RunGitSettings {
  ref?: string;
  branch?: string;
  /** A shallow checkout of the last `depth` commits. */
  depth?: number;
  commit?: 'never' | 'manual' | 'auto' | 'required';
  commit_message?: string;
  push?: 'never' | 'on_success' | 'required';
  remote?: string;
}

interface StepBase {
  name: string;
  depends_on: string[];
  workspace?: WorkspaceSettings;
}

export type WorkflowStep = StepBase & {
  with_apis?: string[];
  resource_refs?: ResourceRefPolicy;
  env_overrides?: EnvOverrides;
  /** Condition over inputs, event payload and earlier step results; evaluated at run time. */
  if?: string | boolean;
} & ({ action: ActionSpec } | { script: ScriptSpec } | { agent: WorkflowAgentSpec });

export type PipelineStep = StepBase & {
  /** The run stops before this step until someone approves it. */
  approval?: boolean;
} & ({ action: ActionSpec } | { script: ScriptSpec } | { agent: PipelineAgentSpec });

export interface WorkflowDefinition {
  with_apis?: string[];
  db_access?: DbAccess;
  resource_refs?: ResourceRefPolicy;
  env_overrides?: EnvOverrides;
  hints?: Record<string, unknown>;
  trigger?: Record<string, unknown>;
  git?: RunGitSettings;
  workspace?: WorkspaceSettings;
  steps: WorkflowStep[];
}

export interface PipelineDefinition {
  trigger?: Record<string, unknown>;
  /** The inputs a run may be given, by name (domain/manifest/pipeline-inputs.ts); absent: any, none required. */
  inputs?: PipelineInputDeclarations;
  git?: RunGitSettings;
  workspace?: WorkspaceSettings;
  steps: PipelineStep[];
}

/** One entry of an agent profile: a harness choice, or a reference to another profile. */
export type AgentProfileEntry = { harness: string; model?: string; reasoning_effort?: 'low' | 'medium' | 'high' | 'x-high' } | { profile: string };

export interface AgentsConfig {
  version: 1;
  /** Ordered fallback lists by profile name. */
  profiles?: Record<string, AgentProfileEntry[]>;
  availability?: { drop_unavailable?: boolean };
}

export interface BrandingConfig {
  app_name?: string;
  primary_color?: string;
  support_email?: string;
}

export interface AuthConfig {
  login_method?: 'magic_link' | 'password_or_magic_link';
  self_signup?: boolean;
  invite_requires_password?: boolean;
  org_access?: {
    invite?: { enabled?: boolean; allowed_orgs?: string[]; invited_role?: 'owner' | 'admin' | 'member' };
    domain_signup?: { enabled?: boolean; domains?: { domain: string; target_org: string; role?: 'owner' | 'admin' | 'member' }[] };
  };
  /** Origins (`https://app.example.com`) a sign-in link or app invite may send the user back to. */
  redirect_origins?: string[];
}

export interface SvcExtension {
  /** CreateJobRequest fields (without description) merged under every job's explicit fields. */
  defaults?: Record<string, unknown>;
  agents?: AgentsConfig;
  /** App APIs by name, for `with_apis`. */
  api_spec?: Record<string, unknown>;
  branding?: BrandingConfig;
  auth?: AuthConfig;
}

export type RegistrySetting = 'svc' | 'none' | { host: string; namespace?: string; auth?: { username_secret?: string; token_secret?: string } };

export interface ServiceDefinition {
  image?: string;
  build?: { context?: string; dockerfile?: string };
  /** What a deployer runs (docs/environments.md): the container's command, ports, environment and health check. */
  command?: string | string[];
  ports?: (number | string)[];
  environment?: Record<string, string | number>;
  healthcheck?: { command: string; interval_seconds?: number; timeout_seconds?: number; retries?: number };
  /** How a redeploy swaps its container (core/ports/environments.ts DeployStrategy); absent: the deployer chooses. */
  deploy_strategy?: 'replace' | 'start-first';
  [key: string]: unknown;
}

export interface EnvironmentDefinition {
  type?: 'persistent' | 'temporary';
  namespace?: string;
  db_ref?: string;
  kind?: string;
  /** Pipeline run for this environment; must name a key of `pipelines`. */
  pipeline?: string;
  /** Inputs for that pipeline; run-time inputs override these keys. */
  pipeline_inputs?: Record<string, unknown>;
  /** Who must approve a deploy, what it may deploy, how long it waits (docs/environments.md). */
  protection?: EnvironmentProtection;
  [key: string]: unknown;
}

/** A reviewer of deploys to a protected environment: a user (e-mail or `usr_` id) or an access group (name or `grp_` id). */
export type ProtectionReviewer = { user: string } | { group: string };

export interface EnvironmentProtection {
  required_reviewers?: ProtectionReviewer[];
  /** Approvals a deploy needs when there are reviewers; default 1. */
  required_approvals?: number;
  /** Glob patterns (`*` within a path segment, `**` across) of the branches or tags a deploy's release may come from. */
  allowed_refs?: string[];
  /** Seconds from a deploy's creation before it may run. */
  wait_seconds?: number;
}

export interface Manifest {
  workflows?: Record<string, WorkflowDefinition>;
  pipelines?: Record<string, PipelineDefinition>;
  'x-svc'?: SvcExtension;
  registry?: RegistrySetting;
  services?: Record<string, ServiceDefinition>;
  environments?: Record<string, EnvironmentDefinition>;
}

/** One validation finding: where in the YAML (`workflows.deploy.steps[2].depends_on[0]`) and what. */
export interface ManifestProblem {
  path: string;
  message: string;
}

/** A synced manifest version as stored. */
export interface StoredManifest {
  project_id: string;
  /** `sha256:<64 hex>` over the canonical JSON of `parsed`. */
  manifest_hash: string;
  git_sha: string | null;
  ref: string | null;
  yaml: string;
  parsed: Manifest;
  synced_at: Date;
  synced_by: string | null;
}

/** What runs a step: its kind and that kind's spec (`{kind: 'script', script: {run}}`), as step jobs carry it in `hints.step`. */
export function stepExecution(step: WorkflowStep | PipelineStep): Record<string, unknown> & { kind: StepKind } {
  const kind = stepKind(step);
  return { kind, [kind]: (step as unknown as Record<string, unknown>)[kind] };
}

/** One line saying what a step runs: `action build`, `script: make test`, `agent reviewer`. */
export function describeStep(step: WorkflowStep | PipelineStep): string {
  if ('action' in step) return `action ${step.action.type}`;
  if ('script' in step) return `script: ${step.script.run}`;
  return 'name' in step.agent ? `agent ${step.agent.name}` : `agent: ${step.agent.prompt.split('\n')[0]}`;
}

/** The `git` and `workspace` fields of a step's job: the run's git settings, the step's workspace over the run's. */
export function runWorkspace(
  flow: WorkflowDefinition | PipelineDefinition,
  step: WorkflowStep | PipelineStep,
): { git?: RunGitSettings; workspace?: WorkspaceSettings } {
  const workspace = step.workspace ?? flow.workspace;
  return { ...(flow.git ? { git: { ...flow.git } } : {}), ...(workspace ? { workspace: { ...workspace } } : {}) };
}

/** The step's execution kind. */
export function stepKind(step: WorkflowStep | PipelineStep): StepKind {
  if ('action' in step) return 'action';
  if ('script' in step) return 'script';
  return 'agent';
}
