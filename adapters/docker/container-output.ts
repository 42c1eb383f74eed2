import type Docker from 'dockerode';
import { demultiplexedText } from './demux.ts';
import { engineMessage } from './engine.ts';

/** How many of its last output lines a container that failed a deploy shows. */
export const OUTPUT_TAIL_LINES = 20;
/** Longer output lines are cut, so twenty of them stay readable in one error message. */
const OUTPUT_LINE_CHARS = 500;

/** The last `lines` lines a container wrote (stdout and stderr as they interleaved), each cut at OUTPUT_LINE_CHARS. */
export async function lastOutput(container: Docker.Container, lines = OUTPUT_TAIL_LINES): Promise<string[]> {
  const answer = (await container.logs({ stdout: true, stderr: true, follow: false, tail: lines })) as Buffer | string;
  const text = typeof answer === 'string' ? answer : demultiplexedText(answer);
  const all = text.split('\n').map((l) => l.replace(/\r$/, ''));
  if (all.at(-1) === '') all.pop();
  return all.slice(-lines).map((l) => (l.length > OUTPUT_LINE_CHARS ? `${l.slice(0, OUTPUT_LINE_CHARS)} … (cut)` : l));
}

/** A container that did not become healthy, with what it said before it failed. */
export interface FailedContainer {
  service: string;
  /** Why: `exited with code 3`, `health check failing: …`, `not healthy after … ms`. */
  detail: string;
  container: Docker.Container;
}

/**
 * What a failed container leaves in the deploy: log lines (why, then its last output lines, each
 * its own line) and one phrase for the error (`web (exited with code 3; last output: a | b)`).
 * Secret values are masked by the environments domain, which writes both.
 */
export async function describeFailure(failed: FailedContainer): Promise<{ lines: string[]; phrase: string }> {
  const { service, detail } = failed;
  let output: string[];
  try {
    output = await lastOutput(failed.container);
  } catch (err) {
    const why = `its output could not be read: ${engineMessage(err)}`;
    return { lines: [`${service}: ${why}`], phrase: `${service} (${detail}; ${why})` };
  }
  if (output.length === 0) return { lines: [`${service}: it wrote no output`], phrase: `${service} (${detail}; no output)` };
  return {
    lines: [`${service}: its last ${output.length} line(s) of output:`, ...output.map((l) => `${service} | ${l}`)],
    phrase: `${service} (${detail}; last output: ${output.join(' | ')})`,
  };
}
