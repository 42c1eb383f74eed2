import type { CheckResult } from '../../core/ports/attempts.ts';
import type { ProcessSpec, Runtime } from '../../core/ports/runtime.ts';
import type { LogSink } from './log-sink.ts';

/** How long a race's check command may run before it is killed (and fails). */
export const CHECK_TIMEOUT_MS = 10 * 60_000;
/** Lines of its output the comparison keeps. */
const TAIL_LINES = 40;
/** The only variables of the agent's environment the check gets: never the harness's credentials. */
const KEPT_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'USER'];

/**
 * Runs a race's check command (docs/worker.md, "Rival attempts") with /bin/sh in the attempt's workspace after its
 * agent ended, as the agent ran (same user and sandbox: the workspace is the agent's work, so it
 * is hostile) but without the agent's credentials. Its output goes to the attempt's log, masked;
 * exit code 0 passes. A check that cannot start fails with the reason as its output.
 */
export async function runCheck(runtime: Runtime, agent: ProcessSpec, command: string, log: LogSink): Promise<CheckResult> {
  const env = Object.fromEntries(KEPT_ENV.filter((k) => agent.env[k] !== undefined).map((k) => [k, agent.env[k]]));
  const { files: _files, ...spec } = agent;
  const started = Date.now();
  const tail: string[] = [];
  await log.system(`check: /bin/sh -c ${JSON.stringify(command)}`);
  try {
    const proc = await runtime.start({ ...spec, command: '/bin/sh', args: ['-c', command], env, timeoutMs: CHECK_TIMEOUT_MS });
    for await (const out of proc.lines()) {
      await log.add(out.stream, out.line);
      tail.push(log.mask(out.line));
      if (tail.length > TAIL_LINES) tail.shift();
    }
    const exit = await proc.exited;
    const passed = exit.exitCode === 0 && !exit.timedOut;
    await log.system(
      `check ${passed ? 'passed' : 'failed'} (${exit.timedOut ? 'timed out' : exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.exitCode}`})`,
    );
    return { command, exit_code: exit.exitCode, passed, duration_ms: Date.now() - started, output_tail: tail.join('\n') };
  } catch (err) {
    const reason = `the check could not start: ${(err as Error).message}`;
    await log.system(reason);
    return { command, exit_code: null, passed: false, duration_ms: Date.now() - started, output_tail: reason };
  }
}
