import path from 'node:path';
import type { AttemptWork, RunStep } from '../../core/ports/attempts.ts';
import { WorkerFailure } from './failure.ts';
import { directoryIn, writeFresh } from '../../core/contained-fs.ts';

/** Where earlier steps' outputs land in the workspace (never committed, see git.ts). */
export const STEPS_PATH = ['.svc', 'steps'] as const;
/** A step name as one path segment (names are free text in the manifest). */
export const stepSegment = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^\.+$/, '_');

const names = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** The finished steps `work` depends on, directly or through others. */
function upstream(work: AttemptWork): RunStep[] {
  const steps = new Map((work.run?.steps ?? []).map((s) => [s.name, s]));
  const seen = new Set<string>();
  const pending = names(work.job.hints.depends_on);
  while (pending.length) {
    const name = pending.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    pending.push(...(steps.get(name)?.depends_on ?? []));
  }
  return [...seen].flatMap((name) => (steps.has(name) ? [steps.get(name)!] : []));
}

const statusOf = (step: RunStep) => (step.phase === 'done' ? 'succeeded' : step.attempt ? 'failed' : 'skipped');
/** `SVC_STEP_<NAME>_<WHAT>`: the step name upper-cased, other characters `_`. */
export const stepVariable = (step: string, what: string) => `SVC_STEP_${step.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_${what}`;

/**
 * Writes what the steps this one depends on left (directly or through others) under
 * `.svc/steps/<name>/`: `result.json` (their result_json), `summary.txt`, `changed-files.txt` (one
 * path a line) and `status` (succeeded, failed or skipped); and returns their variables
 * (`SVC_STEP_<NAME>_STATUS`, `_SUMMARY`, `_RESULT` and `_CHANGED_FILES`, the last two file paths).
 */
export async function writeStepOutputs(workspace: string, work: AttemptWork): Promise<{ env: Record<string, string>; steps: string[] }> {
  const env: Record<string, string> = {};
  const steps = upstream(work);
  for (const step of steps) {
    const dir = await directoryIn(workspace, [...STEPS_PATH, stepSegment(step.name)]).catch((err: Error) => {
      throw new WorkerFailure(`cannot prepare ${STEPS_PATH.join('/')}: ${err.message}`);
    });
    const attempt = step.attempt;
    const workspaceReport = attempt?.git?.workspace as { changed_files?: string[] } | undefined;
    const changed = names(workspaceReport?.changed_files);
    await writeFresh(path.join(dir, 'result.json'), `${JSON.stringify(attempt?.result_json ?? null, null, 2)}\n`);
    await writeFresh(path.join(dir, 'summary.txt'), attempt?.result_summary ?? '');
    await writeFresh(path.join(dir, 'changed-files.txt'), changed.map((f) => `${f}\n`).join(''));
    await writeFresh(path.join(dir, 'status'), statusOf(step));
    env[stepVariable(step.name, 'STATUS')] = statusOf(step);
    env[stepVariable(step.name, 'SUMMARY')] = attempt?.result_summary ?? '';
    env[stepVariable(step.name, 'RESULT')] = path.join(dir, 'result.json');
    env[stepVariable(step.name, 'CHANGED_FILES')] = path.join(dir, 'changed-files.txt');
  }
  return { env, steps: steps.map((s) => s.name) };
}
