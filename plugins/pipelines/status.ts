import type { JobPhase } from '../../core/ports/jobs.ts';

export const RUN_STATUSES = ['pending', 'running', 'awaiting_approval', 'succeeded', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const STEP_STATUSES = ['pending', 'awaiting_approval', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

const TERMINAL: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);
export const isTerminal = (status: RunStatus | StepStatus): boolean => TERMINAL.has(status);

/**
 * What a step's job phase says about the step. A cancelled job is a failed step: the run's own
 * cancels mark their steps cancelled before they touch the jobs, and terminal steps never change.
 */
export function stepStatusFor(phase: JobPhase): StepStatus {
  switch (phase) {
    case 'active':
    case 'review':
      return 'running';
    case 'done':
      return 'succeeded';
    case 'cancelled':
      return 'failed';
    default:
      return 'pending';
  }
}

/**
 * A run's status from its steps (cancelled is set by cancel only): a failed step fails it; all
 * succeeded: succeeded; a step at work: running; a step awaiting approval: awaiting_approval; a
 * run that has started (a step retried is pending again): running; else pending.
 */
export function runStatusFor(steps: { status: StepStatus }[], started: boolean): RunStatus {
  const has = (s: StepStatus) => steps.some((step) => step.status === s);
  if (has('failed')) return 'failed';
  if (steps.every((step) => step.status === 'succeeded')) return 'succeeded';
  if (has('running')) return 'running';
  if (has('awaiting_approval')) return 'awaiting_approval';
  return started || has('succeeded') ? 'running' : 'pending';
}

/** Every step that waits, directly or through others, for one of `names`. */
export function dependentsOf(steps: { name: string; depends_on: string[] }[], names: string[]): Set<string> {
  const found = new Set<string>();
  let frontier = new Set(names);
  while (frontier.size > 0) {
    const next = new Set<string>();
    for (const step of steps) {
      if (!found.has(step.name) && step.depends_on.some((d) => frontier.has(d))) {
        found.add(step.name);
        next.add(step.name);
      }
    }
    frontier = next;
  }
  return found;
}
