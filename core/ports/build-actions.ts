import type { InjectionToken } from 'tsyringe';

/** Where an action step runs: its job, and the pipeline run it belongs to (when it does). */
export interface ActionContext {
  projectId: string;
  jobId: string;
  /** The step's job's creator (the pipeline run's requester); null for system jobs. */
  createdBy: string | null;
  pipelineRunId: string | null;
  stepName: string | null;
  signal: AbortSignal;
  log(line: string): void;
}

export interface BuildActionInput {
  /** Branch, tag or SHA; null: the project's branch. */
  ref: string | null;
  services: string[] | null;
  forceRebuild: boolean;
}

/** What a build step leaves for later steps (its job's result). */
export interface BuildActionOutput {
  build_id: string;
  run_id: string;
  status: 'completed' | 'failed' | 'cancelled';
  git_sha: string;
  manifest_hash: string;
  image_digests: Record<string, string>;
  reused: boolean;
  error_class: string | null;
  error_message: string | null;
}

export interface ReleaseActionInput {
  /** null: the build made by an earlier step of the same pipeline run. */
  buildId: string | null;
  tag: string | null;
  version: string | null;
}

export interface ReleaseActionOutput {
  release_id: string;
  tag: string;
  build_id: string;
  git_sha: string;
  image_digests: Record<string, string>;
}

/**
 * The `build` and `release` pipeline and workflow actions, run by the worker. Registered by the
 * builds plugin; without it those actions fail saying so. A build waits until its run ended.
 */
export interface BuildActions {
  build(ctx: ActionContext, input: BuildActionInput): Promise<BuildActionOutput>;
  release(ctx: ActionContext, input: ReleaseActionInput): Promise<ReleaseActionOutput>;
}

export const BuildActionsToken = Symbol('BuildActions') as InjectionToken<BuildActions>;
