import Boom from '@hapi/boom';
import { inject, injectable } from '../../core/di.ts';
import { ManifestReaderToken, type ManifestReader } from '../../core/ports/manifest.ts';
import { PipelineLauncherToken, WorkflowLauncherToken, type Creator, type PipelineLauncher, type WorkflowLauncher } from '../../core/ports/launchers.ts';
import type { StoredManifest } from '../../domain/manifest/types.ts';
import { decideAll, type Decision } from './matcher.ts';
import type { EventRow, Routing } from './repository.ts';

export interface RoutingOutcome {
  status: 'completed' | 'failed';
  routing: Routing;
  error: string | null;
}

const messageOf = (err: unknown): string => (Boom.isBoom(err) ? err.message : err instanceof Error ? err.message : String(err));

/**
 * Routes one claimed event: decides every trigger of the project's current manifest, starts a
 * pipeline run or workflow job for each match (the payload as its input), and says how it went.
 * A match that fails to start fails the event, with the reason, after the others have started.
 */
@injectable()
export class EventRouting {
  constructor(
    @inject(ManifestReaderToken) private readonly manifests: ManifestReader,
    @inject(WorkflowLauncherToken) private readonly workflows: WorkflowLauncher,
    @inject(PipelineLauncherToken) private readonly pipelines: PipelineLauncher,
  ) {}

  async route(event: EventRow, manifest: StoredManifest | null): Promise<RoutingOutcome> {
    const decisions: Decision[] = manifest ? decideAll(manifest.parsed, toRoutable(event)) : [];
    const routing: Routing = { manifest_hash: manifest?.manifest_hash ?? null, routed_at: new Date().toISOString(), matched: [], not_matched: [] };
    const errors: string[] = [];
    for (const decision of decisions) {
      if (!decision.matched) {
        routing.not_matched.push(decision);
        continue;
      }
      try {
        routing.matched.push({ ...decision, ...(await this.start(decision, event)) });
      } catch (err) {
        const error = messageOf(err);
        routing.matched.push({ ...decision, error });
        errors.push(`${decision.kind} ${decision.name}: ${error}`);
      }
    }
    return { status: errors.length ? 'failed' : 'completed', routing, error: errors.length ? errors.join('; ') : null };
  }

  private async start(decision: Decision, event: EventRow): Promise<{ run_id: string } | { job_id: string }> {
    const creator: Creator = { id: event.actor_id ?? 'system' };
    const input = event.payload_json;
    if (decision.kind === 'workflow') {
      return this.workflows.invokeWorkflow(creator, event.project_id, decision.name, input, { id: event.id, type: event.type, payload: input });
    }
    const ref = event.ref_sha ?? event.ref_branch ?? undefined;
    return this.pipelines.runPipeline(creator, event.project_id, decision.name, { ref, env: event.env_name ?? undefined, inputs: input });
  }

  /** The project's current manifest (null when none was synced). */
  manifestOf(projectId: string): Promise<StoredManifest | null> {
    return this.manifests.current(projectId);
  }
}

export function toRoutable(event: EventRow) {
  return { type: event.type, source: event.source, ref_branch: event.ref_branch, payload: event.payload_json };
}
