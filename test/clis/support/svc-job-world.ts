/**
 * svc end to end for the conformance suite: a server with every role (test/worker/helpers.ts), the
 * harness's command set to the real CLI, the provider's variables as system secrets shared with
 * jobs, a rate card pricing the model the tests name, and readers for what a job left behind (its
 * attempt, whole log, receipt, pushed commit, and processes still running with its id).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { attemptsOf, finished, git, logLines, until, workerWorld, type WorkerWorld } from '../../worker/helpers.ts';

export { until };

/** USD per million tokens of the priced model. */
export const PRICE = { input: 1000, output: 3000, cache_read: 100, reasoning: 5000 };

export interface CliWorld extends WorkerWorld {
  cardId: string;
}

export async function cliWorld(slug: string, harness: string, command: string, secrets: Record<string, string>, pricedModel: string): Promise<CliWorld> {
  const w = await workerWorld(slug, { overrides: { harnesses: { [harness]: { command } } } });
  for (const [name, value] of Object.entries(secrets)) {
    const res = await w.api.post('/system/secrets', { name, value, shared_with_jobs: true });
    if (res.statusCode !== 201) throw new Error(`secret ${name}: ${res.statusCode} ${JSON.stringify(res.body)}`);
  }
  const card = await w.api.post('/admin/pricing/rate-cards', {
    name: `${slug} card`,
    provenance: 'test prices',
    models: { [pricedModel]: PRICE },
    compute: { default: 0 },
  });
  if (card.statusCode !== 201) throw new Error(`card: ${card.statusCode} ${JSON.stringify(card.body)}`);
  return { ...w, cardId: card.body.id };
}

export interface Ended {
  job: any;
  attempt: any;
  logs: string;
  receipt: any;
}

export async function startJob(w: CliWorld, body: Record<string, unknown>): Promise<string> {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, body);
  if (res.statusCode !== 201) throw new Error(`job: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

/** The job once ended, with its first attempt, whole log and receipt. */
export async function ended(w: CliWorld, jobId: string): Promise<Ended> {
  const job = await finished(w, jobId, Number(process.env.CLI_JOB_MS ?? 150_000)).catch(async (err: Error) => {
    const [running] = await attemptsOf(w, jobId);
    const lines = running ? (await logLines(w, jobId, running.id)).map((l) => l.line).join('\n') : '(no attempt)';
    throw new Error(`${err.message}; job ${JSON.stringify((await w.api.get(`/jobs/${jobId}`)).body)}; its log so far:\n${lines}`);
  });
  const [attempt] = await attemptsOf(w, jobId);
  const logs = (await logLines(w, jobId, attempt.id)).map((l) => l.line).join('\n');
  const receipt = (await w.api.get(`/jobs/${jobId}/receipt`)).body;
  return { job, attempt, logs, receipt };
}

/** The paths the tip commit of `branch` on the project's remote changed. */
export function committedPaths(w: CliWorld, branch: string): string[] {
  return git(w.bare, 'show', '--name-only', '--format=', branch).split('\n').filter(Boolean).sort();
}

export const fileAt = (w: CliWorld, branch: string, file: string) => git(w.bare, 'show', `${branch}:${file}`);

/** Processes (pid, process group) whose environment names the job: the CLI and everything it started. */
export function jobProcesses(jobId: string): { pid: number; pgid: number; cmd: string }[] {
  const out: { pid: number; pgid: number; cmd: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`, 'utf8').split('\0');
      if (!environ.includes(`SVC_JOB_ID=${jobId}`)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue;
      out.push({ pid: Number(name), pgid: Number(pgrp), cmd: readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').slice(0, 200) });
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  return out;
}

/** Whether any process of these process groups is still running (zombies aside). */
export function groupsAlive(pgids: number[]): boolean {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state !== 'Z' && pgids.includes(Number(pgrp))) return true;
    } catch {
      /* gone */
    }
  }
  return false;
}
