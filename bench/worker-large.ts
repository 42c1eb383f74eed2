import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RuntimeToken } from '../core/ports/runtime.ts';
import { createAdapter } from '../core/adapters.ts';
import { ascending, fmt, goalRow, kernelWithProject, knob, percentile, timingRuntime, type Row } from './lib.ts';

/**
 * The large-repository scenario of the worker bench (issue 35): a generated repository of
 * BENCH_LARGE_FILES files (~BENCH_LARGE_MB of working tree, one commit) served over file://, and a
 * stand-in agent (a script job that prints a line). One job at a time: create → the attempt's
 * process wrote its first line, for the first job (cold cache) and the next BENCH_LARGE_WARM, with
 * worker.repo_cache on and off, each in a kernel of its own. BENCH_LARGE_PHASES=1 prints each
 * attempt's phases (where the time goes).
 */
const FILES = knob('BENCH_LARGE_FILES', 20_000);
const MEGABYTES = knob('BENCH_LARGE_MB', 300);
const WARM = knob('BENCH_LARGE_WARM', 10);
const WARM_GOAL_MS = 500;

/** Files of distinct, compressible text (as source is): one random line per file repeated to its size. */
export function generateLargeRepo(dir: string, files = FILES, megabytes = MEGABYTES): { files: number; bytes: number } {
  const size = Math.ceil((megabytes * 1024 * 1024) / files);
  execFileSync('git', ['init', '--quiet', '-b', 'main', dir]);
  let bytes = 0;
  for (let i = 0; i < files; i++) {
    const folder = path.join(dir, 'src', `m${Math.floor(i / 200)}`);
    if (i % 200 === 0) mkdirSync(folder, { recursive: true });
    const line = `// ${i} ${randomBytes(48).toString('base64')}\n`;
    const text = line.repeat(Math.ceil(size / line.length)).slice(0, size);
    writeFileSync(path.join(folder, `f${i}.ts`), text);
    bytes += text.length;
  }
  const git = (args: string[]) => execFileSync('git', ['-c', 'core.fsync=none', '-c', 'user.name=b', '-c', 'user.email=b@b', ...args], { cwd: dir });
  git(['add', '-A']);
  // Packed, as a code host keeps it (and so that no background gc races the measured clones).
  git(['-c', 'gc.auto=0', 'commit', '--quiet', '-m', 'large']);
  git(['repack', '-a', '-d', '-q']);
  git(['prune']);
  return { files, bytes };
}

/** create → first line of each job, one job at a time: [cold, ...warm] in ms; and create → done of each. */
/** How the worker makes the workspace: through the cache as an overlay (the default), through the cache checked out in full, or without the cache. */
type Mode = 'cow' | 'full' | 'off';
const MODES = (process.env.BENCH_LARGE_MODES ?? 'cow,off').split(',') as Mode[];
const MODE_NAMES: Record<Mode, string> = {
  cow: 'worker.repo_cache on (copy-on-write workspace)',
  full: 'worker.repo_cache on, copy_on_write false (full checkout)',
  off: 'worker.repo_cache off',
};

async function runJobs(repo: string, mode: Mode): Promise<{ started: number[]; done: number[] }> {
  const cache = mode !== 'off';
  const spawned = new Map<string, number>();
  const timed = timingRuntime(spawned);
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-bench-large-'));
  const { srv, api, projectId } = await kernelWithProject(['api', 'orchestrator', 'worker'], (c) => c.registerInstance(RuntimeToken, timed.runtime), {
    worker: { concurrency: 1, workspace_root: path.join(scratch, 'workspaces'), repo_cache: { enabled: cache, copy_on_write: mode === 'cow' } },
  });
  const started: number[] = [];
  const done: number[] = [];
  try {
    const { config, db, databaseUrl, logger } = srv.kernel;
    timed.use(await createAdapter('runtime', config.adapters.runtime, { config, db, databaseUrl, logger }));
    await api.patch(`/projects/${projectId}`, { repo_url: `file://${repo}` });
    for (let i = 0; i <= WARM; i++) {
      const created = Date.now();
      const res = await api.post(`/projects/${projectId}/jobs`, { description: 'bench', hints: { step: { kind: 'script', script: { run: 'echo started' } } } });
      const id = res.body.id as string;
      const deadline = created + 300_000;
      let job: { phase: string; updated_at: Date } | undefined;
      while (Date.now() < deadline) {
        job = await db('jobs').where({ id }).first('phase', 'updated_at');
        if (job && ['done', 'cancelled'].includes(job.phase)) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const attempt = await db('job_attempts').where({ job_id: id }).first('id', 'status');
      if (attempt?.status !== 'succeeded' || !spawned.has(attempt.id)) throw new Error(`large repository, ${mode}: job ${id} did not succeed`);
      started.push(spawned.get(attempt.id)! - created);
      if (process.env.BENCH_LARGE_PHASES) {
        const phases = await db('attempt_phases').where({ attempt_id: attempt.id }).orderBy('started_at').select('name', 'started_at', 'ended_at');
        console.log(
          `${mode} job ${i}: first phase at +${new Date(phases[0].started_at).getTime() - created}ms, process at +${spawned.get(attempt.id)! - created}ms: ${phases.map((p) => `${p.name} ${new Date(p.ended_at).getTime() - new Date(p.started_at).getTime()}ms`).join(', ')}`,
        );
      }
      done.push(Date.now() - created);
    }
    return { started, done };
  } finally {
    await srv.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The scenario's rows, and the notes of its table. */
export const LARGE_NOTES = [
  'large repository: one job at a time (worker.concurrency 1), a script job standing in for the agent; create = just before POST /projects/{id}/jobs, started = its process wrote its first line',
  'cold = the first job of the kernel (the cache is empty: it clones the remote once); warm = the next ones (the cache fetches, finds nothing new, and the attempt clones from it locally)',
  'without the cache every job clones the remote in full (over file://, git builds a pack of the whole history each time); with it or without, the checkout writes the whole working tree, which on a busy disk or CPU is most of the figure (BENCH_LARGE_PHASES=1 shows the clone phase)',
  "BENCH_LARGE_FILES, BENCH_LARGE_MB and BENCH_LARGE_WARM set the size; BENCH_LARGE_PHASES=1 prints each attempt's phases",
];

export async function largeRepoRows(rows: Row[]): Promise<void> {
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-bench-large-repo-'));
  try {
    const t0 = Date.now();
    const made = generateLargeRepo(path.join(scratch, 'repo'));
    const name = (mode: Mode) =>
      `Large repository (${made.files} files, ${fmt.int(made.bytes / 1024 / 1024)} MB working tree, file://), ${MODE_NAMES[mode]}: create → harness process started, one job at a time`;
    rows.push({ scenario: 'Large repository', figure: 'generated in', value: fmt.ms(Date.now() - t0) });
    for (const mode of MODES) {
      const { started, done } = await runJobs(path.join(scratch, 'repo'), mode);
      const warm = ascending(started.slice(1));
      rows.push({ scenario: name(mode), figure: 'first job (cold)', value: fmt.ms(started[0]) });
      const p50 = percentile(warm, 50);
      rows.push(
        mode === 'cow'
          ? goalRow(name(mode), `next ${WARM} (warm) p50`, p50, fmt.ms, { atMost: WARM_GOAL_MS })
          : { scenario: name(mode), figure: `next ${WARM} (warm) p50`, value: fmt.ms(p50) },
      );
      rows.push({ scenario: name(mode), figure: `next ${WARM} (warm) p95`, value: fmt.ms(percentile(warm, 95)) });
      rows.push({ scenario: name(mode), figure: 'create → done, p50 of all', value: fmt.ms(percentile(ascending(done), 50)) });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
