import type { AttemptCompletion, AttemptWork } from '../../core/ports/attempts.ts';
import type { BuildActions } from '../../core/ports/build-actions.ts';
import { isObject } from '../../core/is-object.ts';
import { WorkerFailure } from './failure.ts';

/** The built-in actions the worker runs through a port instead of a process. */
const PORTED = ['build', 'release'] as const;
export interface ActionPlan {
  type: (typeof PORTED)[number];
  with: Record<string, unknown>;
}

/** The step's action when it is one the worker runs through a port (build, release); null otherwise. */
export function portedAction(work: AttemptWork): ActionPlan | null {
  const step = isObject(work.job.hints.step) ? work.job.hints.step : null;
  if (step?.kind !== 'action' || !isObject(step.action)) return null;
  const type = String(step.action.type);
  if (!(PORTED as readonly string[]).includes(type)) return null;
  return { type: type as ActionPlan['type'], with: isObject(step.action.with) ? step.action.with : {} };
}

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() ? v.trim() : null);

/**
 * Runs a build or release step through the builds domain and makes its outputs the step's result
 * (`result_json`: build_id, digests, release tag…), which later steps and the run's receipts read.
 */
export async function runPortedAction(
  plan: ActionPlan,
  work: AttemptWork,
  actions: BuildActions | null,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<AttemptCompletion> {
  if (!actions) throw new WorkerFailure(`action ${plan.type} needs the builds plugin, which this server does not load`);
  const ctx = {
    projectId: work.project.id,
    jobId: work.job.id,
    createdBy: work.job.created_by,
    pipelineRunId: text(work.job.hints.pipeline_run_id),
    stepName: text(work.job.hints.step_name),
    signal,
    log,
  };
  const ref = text((work.job.git ?? {}).ref);
  try {
    if (plan.type === 'build') {
      const services = Array.isArray(plan.with.services) ? plan.with.services.map(String) : null;
      const out = await actions.build(ctx, { ref, services, forceRebuild: plan.with.force_rebuild === true });
      if (out.status !== 'completed') {
        const reason = `build ${out.build_id} ${out.status}${out.error_class ? ` (${out.error_class})` : ''}: ${out.error_message ?? 'no message'}`;
        return { result: { status: 'failed', reason }, result_json: { svc: { status: 'failed', reason }, ...out }, error: reason };
      }
      const summary = `build ${out.build_id}${out.reused ? ' (reused)' : ''}: ${Object.keys(out.image_digests).join(', ')}`;
      return { result: { status: 'success', summary }, result_json: { svc: { status: 'success', summary }, ...out } };
    }
    const out = await actions.release(ctx, { buildId: text(plan.with.build_id), tag: text(plan.with.tag), version: text(plan.with.version) });
    const summary = `release ${out.tag} of build ${out.build_id}`;
    return { result: { status: 'success', summary }, result_json: { svc: { status: 'success', summary }, ...out } };
  } catch (err) {
    if (signal.aborted) throw err;
    throw new WorkerFailure(`action ${plan.type}: ${(err as Error).message}`);
  }
}
