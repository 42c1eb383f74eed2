import type { InjectionToken } from 'tsyringe';
import type { Db } from '../db/knex.ts';

/**
 * The environments domain's seam for automatic suspension (an org's balance fell below its
 * threshold): the environments plugin fills it; without that plugin billing only emits its event.
 */
export interface EnvironmentSuspension {
  /** Suspends the org's active environments in `trx` (their services stop once it commits); how many it suspended. */
  suspendOrg(orgId: string, reason: string, trx: Db): Promise<number>;
}

export const EnvironmentSuspensionToken = Symbol('EnvironmentSuspension') as InjectionToken<EnvironmentSuspension>;

export type EnvironmentHealth = 'healthy' | 'degraded' | 'unknown';

export interface EnvironmentStatus {
  name: string;
  project_id: string;
  status: EnvironmentHealth;
}

/** What a pipeline run takes from the environment it names. */
export interface RunEnvironment {
  pipeline: string | null;
  pipeline_inputs: Record<string, unknown>;
}

/** The environments domain's records, for other domains (filled by the environments plugin; without it, none). */
export interface EnvironmentDirectory {
  /** The environments of a set of projects with their health, for analytics. */
  ofProjects(projectIds: string[]): Promise<EnvironmentStatus[]>;
  /**
   * The environment a pipeline run names (`env`, an event's `env_name`), wherever it came from: the
   * manifest, the API or `env-ensure`; null when the project has none of that name. A suspended one
   * is refused (Conflict, 409 with the reason): a run would create jobs naming it.
   */
  forRun(projectId: string, name: string): Promise<RunEnvironment | null>;
}

export const EnvironmentDirectoryToken = Symbol('EnvironmentDirectory') as InjectionToken<EnvironmentDirectory>;
/**
 * The directory for plugins that register before the environments plugin (analytics, pipelines):
 * each registers `lookupLater(container, EnvironmentDirectoryToken)` under it unless it is already.
 */
export const EnvironmentDirectoryLookup = Symbol('EnvironmentDirectoryLookup') as InjectionToken<() => EnvironmentDirectory | null>;

/**
 * What an environment runs: a release's git SHA and one image digest per service (a release of the
 * builds domain, read through core/ports/releases.ts, or digests a deploy request names).
 */
export interface ReleaseRef {
  /** `rel_…`, or null for a deploy of image digests that no release names. */
  id: string | null;
  tag: string | null;
  git_sha: string | null;
  manifest_hash: string | null;
  image_digests: Record<string, string>;
  /** service → the pushed image reference (`host/ns/service@sha256:…`) a release's build recorded; where a deployer finds the image. */
  images?: Record<string, string>;
  /** The tag a direct deploy named (`image_tag`): its images are in `images` (`image:tag`), never in `image_digests`. */
  image_tag?: string;
}

/** service → what a deployer runs: the image digest, else the reference `images` records (a tag deploy's `image:tag`). */
export const releaseImages = (r: ReleaseRef): Record<string, string> => ({ ...r.images, ...r.image_digests });

/** How a release is named in messages and logs: its tag, else its id, else its git SHA. */
export const releaseName = (r: ReleaseRef): string => r.tag ?? r.id ?? r.git_sha ?? 'image digests';

/** An image pull credential for a registry (the spec's own-registry mode); native and none have none. */
export interface PullSecret {
  host: string;
  username: string;
  password: string;
}

/** A port a service listens on, and the host port it is published on (Docker) or the Service port (Kubernetes). */
export interface ServicePort {
  container: number;
  host: number | null;
  /** The host address a published port binds (`"127.0.0.1:18080:8080"`); null: every address. Docker only. */
  host_ip: string | null;
}

/**
 * How a redeploy swaps a service's container (`services.<name>.deploy_strategy`): `replace` stops
 * the old one before the new one starts (a fixed host port, host networking); `start-first` starts
 * the new one beside the old one. The Docker deployer's; Kubernetes rolls its Deployments.
 */
export const DEPLOY_STRATEGIES = ['replace', 'start-first'] as const;
export type DeployStrategy = (typeof DEPLOY_STRATEGIES)[number];

/** How the runtime tells a service is healthy: a command run inside it (exit 0), repeated. */
export interface HealthCheck {
  command: string;
  interval_seconds: number;
  timeout_seconds: number;
  retries: number;
}

/** One service as the deployer runs it, from the manifest's `services.<name>` with secrets already expanded. */
export interface DeployService {
  /** The image name without tag or digest (`services.<name>.image`), if the manifest gives one. */
  image: string | null;
  command: string[] | null;
  ports: ServicePort[];
  /** Values with `${secret.NAME}` expanded: never logged, stored by Kubernetes in a Secret. */
  environment: Record<string, string>;
  healthcheck: HealthCheck | null;
  /** The manifest's choice; null: the deployer chooses. */
  deploy_strategy: DeployStrategy | null;
}

/** Everything a deployer needs to put one environment's release in place. */
export interface DeployTarget {
  project: { id: string; org_id: string; slug: string };
  environment: { id: string; name: string; namespace: string | null };
  services: Record<string, DeployService>;
  /** The image pull credential per the manifest's registry mode: own registry only. */
  pullSecret: PullSecret | null;
}

export interface ServiceHealth {
  service: string;
  health: EnvironmentHealth;
  detail: string;
}

export interface DeployOutcome {
  health: EnvironmentHealth;
  services: ServiceHealth[];
}

/**
 * A deploy the runtime refused or that never became healthy: the previous release keeps serving,
 * unless `previousServes` is false (it was stopped for the deploy and did not come back healthy).
 */
export class DeployFailed extends Error {
  constructor(
    message: string,
    readonly services: ServiceHealth[] = [],
    readonly previousServes = true,
  ) {
    super(message);
    this.name = 'DeployFailed';
  }
}

/** What a deploy is told besides the target and the release. */
export interface DeployOptions {
  /**
   * One line for the deploy's log (`GET …/deploys/{id}/logs`): what the deployer does as it does it
   * (per service: the image, the deploy strategy, the container or Deployment, the wait for health, healthy or why not;
   * what it removes or puts back) and why it fails. Never a secret value (the environments domain
   * masks those it knows of anyway). Not awaited: it never slows the deploy down.
   */
  progress?(line: string): void;
}

/**
 * Where environments run (config `adapters.deployer`): Docker containers on the local engine, or
 * Kubernetes objects. Each call acts on exactly what svc created for the environment.
 */
export interface Deployer {
  readonly name: string;
  /**
   * Runs the release's services; returns once every one is healthy. A release that does not come up
   * throws DeployFailed and leaves what ran before in place.
   */
  deploy(target: DeployTarget, release: ReleaseRef, options?: DeployOptions): Promise<DeployOutcome>;
  /** Health as the runtime reports it now. */
  health(target: DeployTarget): Promise<DeployOutcome>;
  /** Stops the environment's services (kept, so resume restarts them). */
  suspend(target: DeployTarget): Promise<void>;
  resume(target: DeployTarget): Promise<DeployOutcome>;
  /** Removes everything svc created for the environment. */
  remove(target: DeployTarget): Promise<void>;
  /**
   * Runs one service of `release` once, to its end, with the environment the service gets (the
   * `job` action); the container is removed afterwards. A deployer without it refuses `job` steps.
   */
  runOnce?(target: DeployTarget, release: ReleaseRef, run: OneOffRun): Promise<OneOffExit>;
}

/** A one-off container of one service's image (the `job` action), with the service's environment. */
export interface OneOffRun {
  service: string;
  /** The command; null: the service's own (the manifest's `command`), else the image's. */
  command: string[] | null;
  /** Each output line, as it comes (awaited: a slow log slows the container's output). */
  log(line: string): Promise<void> | void;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface OneOffExit {
  /** null when it ended by a signal or timed out. */
  exit_code: number | null;
  timed_out: boolean;
}

/** Thrown by a deployer that cannot run one-off jobs (a clear refusal, never a crash). */
export class OneOffUnsupported extends Error {
  constructor(deployer: string) {
    super(`adapters.deployer ${deployer} cannot run one-off jobs of a service (configure the docker or kubernetes deployer)`);
    this.name = 'OneOffUnsupported';
  }
}

export const DeployerToken = Symbol('Deployer') as InjectionToken<Deployer>;

/** What a built-in action step's job did: outputs later steps and `if` conditions read as `steps.<name>.result`. */
export type ActionOutputs = Record<string, unknown>;

/** Who runs an action step: the job's project and creator. */
export interface ActionContext {
  projectId: string;
  jobId: string;
  createdBy: string | null;
  /** The pipeline run the step belongs to, if any. */
  runId: string | null;
  /** Pipeline inputs of the step's run (`release_id`, `release_tag`, `image_digests`, `git_sha`, …). */
  inputs: Record<string, unknown>;
  log(line: string): Promise<void>;
}

/**
 * The environments domain's side of the worker: the current release SHA (`git.ref_policy` auto and
 * env) and the environment actions (deploy, env-ensure, env-delete). Registered by the environments
 * plugin.
 */
export interface EnvironmentActions {
  /** The current release's git SHA; null when the environment has none (or does not exist). */
  releaseSha(projectId: string, envName: string): Promise<string | null>;
  deploy(ctx: ActionContext, envName: string): Promise<ActionOutputs>;
  ensure(ctx: ActionContext, envName: string, kind: string | null): Promise<ActionOutputs>;
  remove(ctx: ActionContext, envName: string): Promise<ActionOutputs>;
  /** Runs `service` of the environment's current release (or the run's release) once; fails the step on a non-zero exit. */
  job(ctx: ActionContext & { signal?: AbortSignal }, request: { envName: string; service: string; command: string[] | null }): Promise<ActionOutputs>;
}

export const EnvironmentActionsToken = Symbol('EnvironmentActions') as InjectionToken<EnvironmentActions>;
