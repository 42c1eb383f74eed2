import type { AttemptWork } from '../../../core/ports/attempts.ts';
import type { Variant } from './race-lanes.ts';

/** The branch a race's attempt commits and pushes to: its own, beside the job's (`svc/<job>-attempt-<n>`). */
export const raceBranch = (jobId: string, attemptNumber: number) => `svc/${jobId}-attempt-${attemptNumber}`;

/**
 * The job as one lane's attempt runs it (docs/worker.md, "Rival attempts"): the lane's variant instead of the job's
 * harness fields, a fresh workspace of its own, and its work committed and pushed on its own
 * branch when it succeeds (from the ref the job names), so rivals never meet.
 */
export function laneWork(work: AttemptWork, variant: Variant): AttemptWork {
  const { branch: _b, create_branch: _c, commit: _m, push: _p, ...git } = work.job.git ?? {};
  return {
    ...work,
    job: {
      ...work.job,
      harness: { ...variant },
      workspace: { mode: 'isolated' },
      git: { ...git, branch: raceBranch(work.job.id, work.attempt.attempt_number), create_branch: 'always', commit: 'auto', push: 'on_success' },
    },
  };
}
