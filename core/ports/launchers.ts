import type { InjectionToken } from 'tsyringe';

/** Who started work: a caller, or for work the platform starts itself (a trigger) the event's actor or `system`. Stored as `created_by`. */
export interface Creator {
  id: string;
}

/** The event that made a trigger fire: workflow `if` conditions read its payload as `event`. */
export interface TriggeringEvent {
  id: string;
  type: string;
  payload: Record<string, unknown>;
}

/**
 * Starting manifest work from another domain (the event router's triggers). Registered by the
 * plugins that own the work: jobs (workflows) and pipelines.
 */
export interface WorkflowLauncher {
  /** As `POST …/workflows/{name}/invoke` with `{input}`; `input` lands JSON-encoded in `hints.request_json`. 404 when the workflow is gone. */
  invokeWorkflow(creator: Creator, projectId: string, name: string, input: Record<string, unknown>, event?: TriggeringEvent): Promise<{ job_id: string }>;
}

export interface PipelineLauncher {
  /** As `POST …/pipelines/{name}/run`. 404 when the pipeline is gone; 422 for a bad environment. */
  runPipeline(
    creator: Creator,
    projectId: string,
    name: string,
    request: {
      ref?: string;
      env?: string;
      inputs?: Record<string, unknown>;
      /**
       * The environment's `pipeline_inputs` as the environments domain holds them: given, they are
       * the base of the inputs and `env` need not be an environment of the manifest (one ensured
       * through the API or `env-ensure`); absent, the manifest's environment is looked up as for the route.
       */
      env_inputs?: Record<string, unknown>;
    },
  ): Promise<{ run_id: string }>;
}

export const WorkflowLauncherToken = Symbol('WorkflowLauncher') as InjectionToken<WorkflowLauncher>;
export const PipelineLauncherToken = Symbol('PipelineLauncher') as InjectionToken<PipelineLauncher>;
