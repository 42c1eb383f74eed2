import type { V1Pod } from '@kubernetes/client-node';
import type { KubeApi } from './kube-api.ts';

/** Waiting reasons that will not resolve by waiting. */
const CANNOT_START = ['ImagePullBackOff', 'ErrImageNeverPull', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError'];

/** Why a pod did not start: `unschedulable`, `image` (it cannot be pulled), `pending` (still waiting at the deadline), or `other`. */
export class PodStartError extends Error {
  constructor(
    message: string,
    readonly reason: 'unschedulable' | 'image' | 'pending' | 'other',
  ) {
    super(message);
  }
}

export interface StartWait {
  container: string;
  pendingTimeoutMs: number;
  /** fail: an unschedulable pod fails at once; wait: keep waiting (cluster autoscaler) up to pendingTimeoutMs. */
  unschedulable: 'fail' | 'wait';
  signal?: AbortSignal;
}

/** Resolves once the pod's container runs (or already ended); rejects with a PodStartError on what will not start. */
export async function podStarted(api: KubeApi, name: string, wait: StartWait): Promise<void> {
  let last = 'no status yet';
  const decide = (pod: V1Pod | null, gone: boolean): PodStartError | true | undefined => {
    if (gone) return new PodStartError(`pod ${name} was deleted before it started`, 'other');
    const phase = pod?.status?.phase;
    if (phase === 'Running' || phase === 'Succeeded' || phase === 'Failed') return true;
    const waiting = pod?.status?.containerStatuses?.find((c) => c.name === wait.container)?.state?.waiting;
    if (waiting?.reason) last = `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
    if (waiting?.reason && CANNOT_START.includes(waiting.reason))
      return new PodStartError(`pod ${name} cannot start: ${last}`, /Image/.test(waiting.reason) ? 'image' : 'other');
    const scheduled = pod?.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
      last = `Unschedulable: ${scheduled.message ?? ''}`;
      if (wait.unschedulable === 'fail') return new PodStartError(`pod ${name} is unschedulable: ${scheduled.message ?? 'no reason given'}`, 'unschedulable');
    }
    return undefined;
  };
  const deadline = AbortSignal.timeout(wait.pendingTimeoutMs);
  const signal = wait.signal ? AbortSignal.any([deadline, wait.signal]) : deadline;
  let outcome: PodStartError | true;
  try {
    outcome = await api.watchPod(name, decide, signal);
  } catch (err) {
    if (!deadline.aborted) throw err;
    outcome = new PodStartError(`pod ${name} still Pending after ${Math.round(wait.pendingTimeoutMs / 1000)} s (pending_timeout_ms); last: ${last}`, 'pending');
  }
  if (outcome !== true) throw outcome;
}
