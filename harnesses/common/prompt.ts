/**
 * Linux limits one argument to 128 KiB (MAX_ARG_STRLEN), and every CLI here takes its prompt as an
 * argument. A longer prompt goes into a file in the workspace and the argument points at it.
 */
const MAX_PROMPT_ARG_BYTES = 100_000;
export const PROMPT_FILE = '.svc/prompt.md';

export function promptArgument(prompt: string, files: Record<string, string>): string {
  if (Buffer.byteLength(prompt, 'utf8') <= MAX_PROMPT_ARG_BYTES) return prompt;
  files[PROMPT_FILE] = prompt;
  return `Your task is written in the file ${PROMPT_FILE} (relative to the working directory). Read that whole file first, then carry out the task it describes.`;
}
