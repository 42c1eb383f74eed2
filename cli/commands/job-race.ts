/**
 * Rival attempts from the CLI (docs/worker.md, "Rival attempts"): `svc job race` starts a race of
 * variants on one job (and can wait for its lanes to end), `svc job compare ID` shows its attempts
 * side by side, `svc job choose ID N` makes one the job's result.
 */
import type { Schemas } from '../../client/index.ts';
import { intFlag, parseCommand } from '../args.ts';
import type { Context } from '../config.ts';
import { UsageError } from '../errors.ts';
import { api } from '../http.ts';
import { formatTable, note, printJson, write, type Column } from '../output.ts';

type Variant = Schemas['RaceVariant'];
type Comparison = Schemas['RaceComparison'];
type Entry = Comparison['attempts'][number];

const VARIANT_KEYS = ['harness', 'harness_profile', 'model', 'reasoning_effort'];
const WAIT_POLL_MS = 1000;

/** `harness=harness_a,model=claude-opus-4-1,reasoning_effort=high` (a bare word is the harness). */
export function parseVariant(text: string, usage: string): Variant {
  const variant: Record<string, string> = {};
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const eq = part.indexOf('=');
    const [key, value] = eq < 0 ? ['harness', part] : [part.slice(0, eq).trim(), part.slice(eq + 1).trim()];
    if (!VARIANT_KEYS.includes(key)) throw new UsageError(`--variant: unknown key "${key}" (one of ${VARIANT_KEYS.join(', ')})`, usage);
    if (!value) throw new UsageError(`--variant: "${key}" needs a value`, usage);
    variant[key] = value;
  }
  if (Object.keys(variant).length === 0) throw new UsageError('--variant needs at least a harness or a model', usage);
  return variant as Variant;
}

const variantText = (v: Variant) =>
  [v.harness ?? v.harness_profile, v.model, v.reasoning_effort && `effort ${v.reasoning_effort}`].filter(Boolean).join(' ') || '-';
const duration = (ms: number | null) => (ms === null ? '-' : ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`);

const COLUMNS: Column[] = [
  { key: 'attempt_number', header: '#' },
  { key: 'race_lane', header: 'LANE' },
  { key: 'variant', format: (v) => variantText(v as Variant) },
  { key: 'status', format: (s, row) => `${s}${row.chosen ? ' (chosen)' : ''}` },
  { key: 'check', format: (c) => (c ? ((c as Entry['check'])!.passed ? 'passed' : `failed (${(c as Entry['check'])!.exit_code ?? '-'})`) : '-') },
  {
    key: 'diff',
    header: 'DIFF',
    format: (d) => (d ? `${(d as Entry['diff'])!.files_total} files +${(d as Entry['diff'])!.additions} -${(d as Entry['diff'])!.deletions}` : '-'),
  },
  { key: 'cost_usd', header: 'COST', format: (c) => `$${(c as number).toFixed(4)}` },
  { key: 'duration_ms', header: 'TIME', format: (ms) => duration(ms as number | null) },
  { key: 'tokens', format: (t) => String((t as Entry['tokens']).total_tokens) },
  { key: 'result_summary', header: 'SUMMARY' },
];

/** The comparison as a table, then per attempt its branch, files and the check's last output lines. */
export function formatRace(race: Comparison): string {
  const head = `race of job ${race.job_id} (${race.phase})${race.check_command ? `, check: ${race.check_command}` : ''}`;
  const details = race.attempts.flatMap((a) => [
    '',
    `attempt ${a.attempt_number}: ${a.branch ?? 'no branch'}${a.pushed ? ' (pushed)' : ''}${a.error ? ` — ${a.error}` : ''}`,
    ...(a.diff?.files.map((f) => `  ${f}`) ?? []),
    ...(a.check && !a.check.passed && a.check.output_tail ? a.check.output_tail.split('\n').map((l) => `  | ${l}`) : []),
  ]);
  const lanes = race.lanes.filter((l) => l.status !== 'ended').map((l) => `lane ${l.lane} ${l.status}`);
  const chosen = race.chosen
    ? `attempt ${race.chosen} was chosen`
    : lanes.length
      ? lanes.join(', ')
      : 'every lane ended: choose one with `svc job choose JOB N`';
  return [head, formatTable(race.attempts as unknown as Record<string, unknown>[], COLUMNS), ...details, '', chosen].join('\n');
}

async function waitForLanes(ctx: Context, jobId: string): Promise<Comparison> {
  for (;;) {
    const race = await api(ctx).GET('/jobs/{job_id}/race', { params: { job_id: jobId } });
    if (race.lanes.every((l) => l.status === 'ended')) return race;
    await new Promise((r) => setTimeout(r, WAIT_POLL_MS));
  }
}

/** `svc job race ID (--variant V... | --from-profile NAME) [--check CMD] [--wait]` */
export async function runJobRace(ctx: Context, args: string[], usage: string): Promise<number> {
  const options = {
    variant: { type: 'string', multiple: true },
    'from-profile': { type: 'string' },
    check: { type: 'string' },
    wait: { type: 'boolean' },
  } as const;
  const { values, positionals } = parseCommand(args, options, usage, { min: 1, max: 1 });
  const jobId = positionals[0];
  const variants = ([] as string[]).concat(values.variant ?? []).map((v) => parseVariant(v, usage));
  if (!values['from-profile'] && variants.length < 2) throw new UsageError('a race needs two --variant flags or more, or --from-profile NAME', usage);
  if (values['from-profile'] && variants.length) throw new UsageError('--variant or --from-profile, not both', usage);
  const body = { ...(values['from-profile'] ? { profile: values['from-profile'] } : { variants }), ...(values.check ? { check_command: values.check } : {}) };
  const started = await api(ctx).POST('/jobs/{job_id}/attempts', { params: { job_id: jobId }, body });
  if (!values.wait) {
    if (ctx.json) printJson(started);
    else
      write(
        [`Job ${jobId} is racing ${started.lanes.length} variants:`, ...started.lanes.map((l) => `  lane ${l.lane}: ${variantText(l.variant)}`)].join('\n'),
      );
    return 0;
  }
  note(`svc: job ${jobId} is racing ${started.lanes.length} variants; waiting for every lane to end`);
  const race = await waitForLanes(ctx, jobId);
  if (ctx.json) printJson(race);
  else write(formatRace(race));
  return 0;
}

/** `svc job compare ID`: the race's attempts side by side. */
export async function runRaceCompare(ctx: Context, jobId: string): Promise<number> {
  const race = await api(ctx).GET('/jobs/{job_id}/race', { params: { job_id: jobId } });
  if (ctx.json) printJson(race);
  else write(formatRace(race));
  return 0;
}

/** `svc job choose ID N`: attempt N becomes the job's result; the others' branches are deleted. */
export async function runJobChoose(ctx: Context, args: string[], usage: string): Promise<number> {
  const { positionals } = parseCommand(args, {}, usage, { min: 2, max: 2 });
  const [jobId, n] = positionals;
  const choice = await api(ctx).POST('/jobs/{job_id}/attempts/{attempt_number}/choose', {
    params: { job_id: jobId, attempt_number: intFlag(n, 'attempt number', usage)! },
    body: {},
  });
  if (ctx.json) {
    printJson(choice);
    return 0;
  }
  write(`Attempt ${n} is the result of job ${jobId}, which is ${choice.job.phase}.`);
  const { branches, deleted, error } = choice.cleanup;
  if (branches.length)
    note(deleted ? `svc: deleted the other attempts' branches: ${branches.join(', ')}` : `svc: the other attempts' branches were not deleted: ${error}`);
  return 0;
}
