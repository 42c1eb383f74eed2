import type { ProcessExit } from '../../core/ports/runtime.ts';
import type { AttemptCompletion } from '../../core/ports/attempts.ts';
import { isObject } from '../../core/is-object.ts';
import { findUnstorable } from '../../core/db/storable.ts';

/** A block body beyond this is not kept (it could not be a sensible control block). */
const MAX_BLOCK_CHARS = 1024 * 1024;
const OPEN = /^\s*(`{3,}|~{3,})\s*json-result\s*$/;
const STATUSES = ['success', 'waiting', 'failed'] as const;
type Status = (typeof STATUSES)[number];

/**
 * Finds the last fenced block labelled `json-result` whose body is a JSON object, line by line as
 * output arrives (nothing else of the output is kept). A fence closes with the same character,
 * at least as long, alone on its line; a block whose body is not a JSON object, or holds what the
 * database cannot store (core/db/storable.ts), does not count.
 */
export class JsonResultScanner {
  private fence: string | null = null;
  private body: string[] = [];
  private size = 0;
  private found: Record<string, unknown> | null = null;

  push(line: string): void {
    if (this.fence === null) {
      const open = OPEN.exec(line);
      if (open) {
        this.fence = open[1];
        this.body = [];
        this.size = 0;
      }
      return;
    }
    const trimmed = line.trim();
    if (trimmed.length >= this.fence.length && trimmed === trimmed[0].repeat(trimmed.length) && trimmed[0] === this.fence[0]) {
      this.fence = null;
      if (this.size > MAX_BLOCK_CHARS) return;
      try {
        const value = JSON.parse(this.body.join('\n'));
        // A block the database could not store (NUL, lone surrogates, deep nesting) counts as no block.
        if (isObject(value) && !findUnstorable(value)) this.found = value;
      } catch {
        // not JSON: an earlier block (if any) stays the result
      }
      return;
    }
    this.size += line.length + 1;
    if (this.size <= MAX_BLOCK_CHARS) this.body.push(line);
  }

  /** Every line of a text (a message that spans lines). */
  pushText(text: string): void {
    for (const line of text.split('\n')) this.push(line);
  }

  result(): Record<string, unknown> | null {
    return this.found;
  }
}

export type RunKind = 'script' | 'agent';

function exitText(exit: ProcessExit, timeoutSeconds: number | null): string | null {
  if (exit.timedOut) return `timed out after ${timeoutSeconds} s (hints.timeout_seconds); the process tree was killed`;
  if (exit.signal) return `killed by ${exit.signal}`;
  if (exit.exitCode !== 0) return `exited with code ${exit.exitCode}`;
  return null;
}

/**
 * The attempt's outcome from how the process ended and its last json-result block:
 * - timeout, a signal or a nonzero exit: failed (the block's `svc.reason` first, when it gives one);
 * - a block with `svc.status` success, waiting or failed: that status, `svc.summary`, `svc.reason`;
 * - a script that exits 0 without one (a block without `svc` included): success, `exit_code` 0;
 * - an agent without a valid block: failed, saying so.
 */
export function outcomeOf(kind: RunKind, exit: ProcessExit, block: Record<string, unknown> | null, timeoutSeconds: number | null): AttemptCompletion {
  const svc = block && isObject(block.svc) ? block.svc : null;
  const status = svc && (STATUSES as readonly unknown[]).includes(svc.status) ? (svc.status as Status) : null;
  const summary = typeof svc?.summary === 'string' && svc.summary.trim() ? svc.summary : undefined;
  const reason = typeof svc?.reason === 'string' && svc.reason.trim() ? svc.reason : undefined;
  const exitCode = { exit_code: exit.exitCode, ...(exit.signal ? { signal: exit.signal } : {}) };
  const failedExit = exitText(exit, timeoutSeconds);
  if (failedExit) {
    const why = exit.timedOut ? failedExit : (reason ?? failedExit);
    return {
      result: { status: 'failed', reason: why, ...(summary ? { summary } : {}) },
      result_json: block ?? { svc: { status: 'failed', reason: why }, ...exitCode },
      error: why,
    };
  }
  if (status) {
    const result = { status, ...(summary ? { summary } : {}), ...(reason ? { reason } : {}) };
    return { result, result_json: block!, ...(status === 'failed' ? { error: reason ?? 'the json-result block says failed' } : {}) };
  }
  if (kind === 'script') {
    const result = { status: 'success' as const, summary: 'exit code 0' };
    return { result, result_json: block ?? { svc: result, ...exitCode } };
  }
  const why = block
    ? 'the last json-result block has no svc.status (success, waiting or failed)'
    : 'no json-result block in the output: the agent must end with a fenced json-result block whose svc.status is success, waiting or failed';
  return { result: { status: 'failed', reason: why }, result_json: block ?? { svc: { status: 'failed', reason: why } }, error: why };
}
