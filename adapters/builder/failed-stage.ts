/**
 * The Dockerfile stage a BuildKit build failed in, from its plain progress output: the summary
 * block names the failing step as ` > [stage n/m] INSTRUCTION:`; without one, the last step that
 * logged an ERROR. Null when the failure was not in a step (a parse error, a missing Dockerfile).
 */
export function failedStage(lines: string[]): string | null {
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^\s*>\s*(\[[^\]]+\][^:]*):?\s*$/.exec(lines[i]);
    if (m) return m[1].trim();
  }
  const steps = new Map<string, string>();
  let failed: string | null = null;
  for (const line of lines) {
    const step = /^#(\d+) (\[[^\]]+\].*)$/.exec(line);
    if (step) steps.set(step[1], step[2].trim());
    const error = /^#(\d+) ERROR:/.exec(line);
    if (error && steps.has(error[1])) failed = steps.get(error[1])!;
  }
  return failed;
}
