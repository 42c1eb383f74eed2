/**
 * svc end to end for the CLI conformance suite: a server with every role whose worker runs attempts
 * as uid 1000 (as production does; Claude Code refuses bypassPermissions as root), a project on a
 * file:// bare repository, and helpers to run one harness job and read what it left: the job, its
 * attempt, the whole log, the receipt and the files of the commit it pushed.
 */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { attemptsOf, finished, git, logLines, until, workerWorld, type WorkerWorld } from '../../worker/helpers.ts';

export interface JobWorld extends WorkerWorld {
  /** Every job's branch is `conf/<n>`. */
  nextBranch(): string;
  /** Where the workspaces are made (each job's under it). */
  workspaceRoot: string;
}

/** `more`: other config keys over the defaults (e.g. `adapters` for another runtime). */
export async function jobWorld(
  slug: string,
  harnesses: Record<string, unknown>,
  secrets: Record<string, string>,
  more: Record<string, unknown> = {},
): Promise<JobWorld> {
  // The workspaces must be reachable by uid 1000: the default scratch directory is private.
  const open = mkdtempSync(path.join(tmpdir(), 'svc-clis-'));
  chmodSync(open, 0o755);
  const w = await workerWorld(slug, { overrides: { ...more, worker: { run_as_uid: 1000, workspace_root: path.join(open, 'workspaces') }, harnesses } });
  for (const [name, value] of Object.entries(secrets)) {
    const res = await w.api.post('/system/secrets', { name, value, shared_with_jobs: true });
    if (res.statusCode !== 201) throw new Error(`secret ${name}: ${res.statusCode} ${JSON.stringify(res.body)}`);
  }
  let n = 0;
  return {
    ...w,
    nextBranch: () => `conf/${++n}`,
    workspaceRoot: path.join(open, 'workspaces'),
    stop: async () => {
      await w.stop();
      rmSync(open, { recursive: true, force: true });
    },
  };
}

/** A rate card that prices `model` (USD per million tokens), compute free. */
export async function priceModel(w: WorkerWorld, model: string, price: { input: number; output: number; cache_read: number; cache_write: number }) {
  const res = await w.api.post('/admin/pricing/rate-cards', {
    name: `card ${model}`,
    provenance: 'test prices',
    models: { [model]: price },
    compute: { default: 0 },
  });
  if (res.statusCode !== 201) throw new Error(`card: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

export interface Ended {
  job: any;
  attempt: any;
  logs: string;
  receipt: any;
  /** The workspace the attempt ran in (from its log). */
  workspace: string;
  /** The job's branch on the remote. */
  branch: string;
  /** The files of the commit pushed to the job's branch, or null when nothing was pushed. */
  committed: string[] | null;
}

export async function createJob(w: JobWorld, body: Record<string, unknown>): Promise<{ id: string; branch: string }> {
  const branch = w.nextBranch();
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, {
    git: { branch, commit: 'auto', push: 'on_success' },
    ...body,
    hints: { max_attempts: 1, ...(body.hints as object) },
  });
  if (res.statusCode !== 201) throw new Error(`job: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return { id: res.body.id, branch };
}

export async function ended(w: JobWorld, job: { id: string; branch: string }, ms = 150_000): Promise<Ended> {
  const done = await finished(w, job.id, ms);
  const [attempt] = await attemptsOf(w, job.id);
  const logs = (await logLines(w, job.id, attempt.id)).map((l) => l.line).join('\n');
  const receipt = (await w.api.get(`/jobs/${job.id}/receipt`)).body;
  const workspace = /^workspace (\S+)/m.exec(logs)?.[1] ?? '';
  const pushed = git(w.bare, 'branch', '--list', job.branch) !== '';
  const committed = pushed ? git(w.bare, 'diff-tree', '--no-commit-id', '--name-only', '-r', job.branch).split('\n').filter(Boolean) : null;
  return { job: done, attempt, logs, receipt, workspace, branch: job.branch, committed };
}

/** Usage summed per model, as the receipt lists it. */
export function usageByModel(calls: { model: string; input: number; output: number; cacheRead: number; cacheWrite: number }[]) {
  const out: Record<string, { input_tokens: number; output_tokens: number; cache_read_tokens: number; cache_write_tokens: number }> = {};
  for (const c of calls) {
    const m = (out[c.model] ??= { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 });
    m.input_tokens += c.input;
    m.output_tokens += c.output;
    m.cache_read_tokens += c.cacheRead;
    m.cache_write_tokens += c.cacheWrite;
  }
  return out;
}

/** Pids of live processes whose command line holds `marker`, with their process groups. */
export function processesWith(marker: string): { pid: number; pgid: number; args: string }[] {
  const found: { pid: number; pgid: number; args: string }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (!args.includes(marker)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') continue;
      found.push({ pid: Number(entry), pgid: Number(fields[2]), args });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Live processes in any of these process groups. */
export function inGroups(groups: number[]): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && groups.includes(Number(fields[2]))) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export { until };
