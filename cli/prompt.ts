import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/** Questions asked on a terminal, one answer a line. */
export interface Prompter {
  /** Writes the question and reads one line; null once the input has ended (Ctrl-D). */
  ask(question: string): Promise<string | null>;
  close(): void;
}

/** Whether the CLI may ask: its input and its prompts' output (stderr, beside notes) are both a terminal. */
export const canPrompt = (): boolean => process.stdin.isTTY === true && process.stderr.isTTY === true;

/**
 * A prompter over `input` (default stdin) writing to `output` (default stderr: stdout holds the
 * command's result). Lines are read through readline's iterator, which keeps a line that arrives
 * before its question is asked.
 */
export function createPrompter(input: Readable = process.stdin, output: Writable = process.stderr): Prompter {
  const rl = createInterface({ input, crlfDelay: Infinity, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  return {
    async ask(question) {
      output.write(question);
      const next = await lines.next();
      return next.done ? null : String(next.value);
    },
    close: () => rl.close(),
  };
}
