/**
 * `svc job diff JOB_ID [--attempt N] [--stat]`: what an attempt changed (GET
 * /jobs/{id}/attempts/{n}/diff). The patch goes to stdout exactly as recorded, so it can be piped
 * to a file or `git apply`; the summary and any note about what was left out go to stderr. On a
 * terminal (and without NO_COLOR) additions are green, deletions red, hunk headers cyan, and
 * control characters from the changed files are shown escaped instead of reaching the terminal.
 */
import type { Schemas } from '../../client/index.ts';
import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { CliError } from '../errors.ts';
import { api } from '../http.ts';
import { note, printJson, write } from '../output.ts';

export type Diff = Schemas['AttemptDiff'];
type DiffFile = Diff['files'][number];

const ESC = '\u001b[';
const paint = (code: string) => (text: string) => `${ESC}${code}m${text}${ESC}0m`;
export const COLORS = { green: paint('32'), red: paint('31'), cyan: paint('36'), bold: paint('1'), dim: paint('2') };
type Painter = (text: string) => string;
const plain: Record<keyof typeof COLORS, Painter> = { green: (t) => t, red: (t) => t, cyan: (t) => t, bold: (t) => t, dim: (t) => t };

/** Whether stdout is a terminal that may be coloured (NO_COLOR, https://no-color.org, turns it off). */
export const colorWanted = (stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean =>
  stream.isTTY === true && !env.NO_COLOR;

/**
 * Control characters (but tab) as visible escapes (`\x1b`), so a changed file cannot move the
 * cursor, retitle the window or anything else a terminal does on an escape sequence.
 */
export const visible = (text: string): string =>
  text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);

/** The patch for a terminal: escaped, and coloured when `color`; elsewhere exactly as recorded. */
export function formatPatch(patch: string, opts: { tty: boolean; color: boolean }): string {
  if (!opts.tty) return patch;
  const c = opts.color ? COLORS : plain;
  let header = false;
  return patch
    .split('\n')
    .map((raw) => {
      const line = visible(raw);
      if (line.startsWith('diff --git ')) header = true;
      else if (line.startsWith('@@')) header = false;
      if (header) return c.bold(line);
      if (line.startsWith('@@')) {
        const end = line.indexOf('@@', 2);
        return end > 0 ? `${c.cyan(line.slice(0, end + 2))}${line.slice(end + 2)}` : c.cyan(line);
      }
      if (line.startsWith('+')) return c.green(line);
      if (line.startsWith('-')) return c.red(line);
      return line;
    })
    .join('\n');
}

const LETTER = { added: 'A', modified: 'M', deleted: 'D', renamed: 'R' } as const;

/** The summary line, then `M app.txt  | +2 -1` per file (git's --stat, with counts instead of bars). */
export function formatStat(diff: Diff, opts: { tty: boolean; color: boolean }): string {
  const c = opts.color ? COLORS : plain;
  const name = (f: DiffFile) => {
    const text = f.old_path ? `${f.old_path} → ${f.path}` : f.path;
    return opts.tty ? visible(text) : text;
  };
  const names = diff.files.map(name);
  const width = Math.max(0, ...names.map((n) => n.length));
  const lines = diff.files.map((f, i) => {
    const counts = f.binary
      ? c.dim('binary')
      : [f.additions ? c.green(`+${f.additions}`) : '', f.deletions ? c.red(`-${f.deletions}`) : ''].filter(Boolean).join(' ');
    return ` ${LETTER[f.status] ?? '?'} ${names[i].padEnd(width)} | ${counts}`.trimEnd();
  });
  return [summaryLine(diff), ...lines].join('\n');
}

/** `attempt 2 of job X: 3 files changed, +10 -2 against 1a2b3c4d5e6f (uncommitted work included)`. */
export function summaryLine(diff: Diff): string {
  const { files, additions, deletions } = diff.stats;
  const what = files === 0 ? 'nothing changed' : `${files} file${files === 1 ? '' : 's'} changed, +${additions} -${deletions}`;
  const head = diff.head_sha && diff.head_sha !== diff.base_sha ? ` to ${diff.head_sha.slice(0, 12)}` : '';
  return `attempt ${diff.attempt_number} of job ${diff.job_id}: ${what} from ${diff.base_sha.slice(0, 12)}${head}${diff.uncommitted ? ' (uncommitted work included)' : ''}`;
}

/** The number of the job's latest attempt. */
async function latestAttempt(ctx: Context, jobId: string): Promise<number> {
  const job = await api(ctx).GET('/jobs/{job_id}', { params: { job_id: jobId } });
  const page = await api(ctx).GET('/projects/{project_id}/jobs/{job_id}/attempts', {
    params: { project_id: job.project_id, job_id: jobId },
    query: { limit: 1 },
  });
  if (!page.data[0]) throw new CliError(`job ${jobId} has no attempts yet`, 'its diff is recorded when an attempt ends');
  return page.data[0].attempt_number;
}

export async function runJobDiff(ctx: Context, args: string[], usage: string): Promise<number> {
  const { values, positionals } = parseCommand(args, { attempt: { type: 'string' }, stat: { type: 'boolean' } }, usage, { min: 1, max: 1 });
  const jobId = positionals[0];
  const n = intFlag(values.attempt, 'attempt', usage) ?? (await latestAttempt(ctx, jobId));
  const format = values.stat ? 'stat' : 'patch';
  const diff = await api(ctx).GET('/jobs/{job_id}/attempts/{attempt_number}/diff', { params: { job_id: jobId, attempt_number: n }, query: { format } });
  if (ctx.json) {
    printJson(diff);
    return 0;
  }
  const tty = process.stdout.isTTY === true;
  const opts = { tty, color: colorWanted() };
  if (values.stat) write(formatStat(diff, opts));
  else {
    note(`svc: ${summaryLine(diff)}`);
    if (diff.patch) process.stdout.write(formatPatch(diff.patch, opts));
  }
  if (diff.note) note(`svc: ${diff.note}`);
  return 0;
}
