import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { ServerProcess } from './server-process.ts';

/**
 * What the chaos tests (test/chaos/) share: a client of a server process, waiting with a deadline,
 * script jobs that record each execution in a file, and what PostgreSQL says about connections.
 */

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Calls `check` every 100 ms until it answers something truthy; throws after `ms`. */
export async function until<T>(check: () => Promise<T | null | undefined | false>, what: string, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check().catch(() => null);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

export interface Answer {
  status: number;
  body: any;
}

/** JSON over HTTP to whichever server `base()` names now (a restarted server has a new port). */
export class Client {
  constructor(
    private readonly base: () => string,
    public token = '',
  ) {}

  async call(method: string, path: string, body?: unknown, timeoutMs = 15_000): Promise<Answer> {
    const res = await fetch(`${this.base()}${path}`, {
      method,
      headers: { ...(this.token ? { authorization: `Bearer ${this.token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  }

  /** The status only; 0 when the connection failed or timed out. */
  status(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<number> {
    return this.call(method, path, body, timeoutMs).then(
      (a) => a.status,
      () => 0,
    );
  }
}

/** The first administrator with an org and a project, on a fresh server. */
export async function bootstrap(url: string, email = 'chaos@example.com'): Promise<{ client: Client; orgId: string; projectId: string }> {
  const boot = await fetch(`${url}/auth/bootstrap`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) });
  if (boot.status !== 201) throw new Error(`bootstrap: ${boot.status} ${await boot.text()}`);
  const client = new Client(() => url, ((await boot.json()) as any).access_token);
  const org = await client.call('POST', '/orgs', { name: 'Chaos' });
  const project = await client.call('POST', '/projects', { org_id: org.body.id, name: 'chaos', slug: 'chaos' });
  return { client, orgId: org.body.id, projectId: project.body.id };
}

/** Creates `n` script jobs in the project (extra hints merged in), returning their ids. */
export async function scriptJobs(client: Client, projectId: string, n: number, run: string, hints: Record<string, unknown> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await client.call('POST', `/projects/${projectId}/jobs`, {
      description: `chaos ${i}`,
      hints: { ...hints, step: { kind: 'script', script: { run } } },
    });
    if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
    ids.push(res.body.id);
  }
  return ids;
}

/** Waits for every job to end (done or cancelled); their phases and attempt counts. */
export async function settled(client: Client, projectId: string, ids: string[], ms = 90_000): Promise<{ done: number; attempts: Map<string, number> }> {
  const jobs = await until(
    async () => {
      const all = await Promise.all(ids.map(async (id) => (await client.call('GET', `/jobs/${id}`)).body));
      return all.every((j) => j?.phase === 'done' || j?.phase === 'cancelled') ? all : null;
    },
    'every job to finish',
    ms,
  );
  const attempts = new Map<string, number>();
  for (const id of ids) attempts.set(id, (await client.call('GET', `/projects/${projectId}/jobs/${id}/attempts?limit=100`)).body.data.length);
  return { done: jobs.filter((j) => j.phase === 'done').length, attempts };
}

/**
 * A file every execution of a script job writes to: `start`, a `tick` every 200 ms while it runs and
 * `end`, each with the job id, the shell's PID (one per execution) and the time in ms. `run(s)` is a
 * script that runs `s` seconds so.
 */
/**
 * The environment of a server whose scripts write an ExecutionLog: the log is a file on the host,
 * which the attempt sandbox rightly keeps out of reach, so these servers run attempts unsandboxed.
 * Sandboxed attempts under a cancel or a SIGKILLed server: test/security/worker-containment and
 * test/core/interrupt.
 */
export const REPORTS_TO_HOST = { SVC_SANDBOX: 'off' } as const;

export class ExecutionLog {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'svc-chaos-runs-'));
  readonly file = path.join(this.dir, 'executions');

  constructor() {
    appendFileSync(this.file, '');
  }

  run(seconds: number): string {
    const mark = (what: string) => `echo "${what} $SVC_JOB_ID $$ $(date +%s%3N)" >> ${this.file}`;
    return `${mark('start')}; i=0; while [ $i -lt ${seconds * 5} ]; do ${mark('tick')}; sleep 0.2; i=$((i+1)); done; ${mark('end')}`;
  }

  /** Each execution (job, pid) with its first and last record and whether it ended. */
  executions(): { job: string; pid: string; from: number; to: number; ended: boolean }[] {
    const byRun = new Map<string, { job: string; pid: string; from: number; to: number; ended: boolean }>();
    for (const line of readFileSync(this.file, 'utf8').split('\n')) {
      const [what, job, pid, at] = line.split(' ');
      if (!at) continue;
      const key = `${job} ${pid}`;
      const run = byRun.get(key) ?? { job, pid, from: Number(at), to: Number(at), ended: false };
      run.to = Math.max(run.to, Number(at));
      if (what === 'end') run.ended = true;
      byRun.set(key, run);
    }
    return [...byRun.values()];
  }

  /** Executions per job. */
  starts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const run of this.executions()) counts.set(run.job, (counts.get(run.job) ?? 0) + 1);
    return counts;
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Client backends connected to the cluster now (pg_stat_activity), the asking one excluded. */
export async function backends(databaseUrl: string): Promise<number> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const r = await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()");
    return r.rows[0].n as number;
  } finally {
    await c.end();
  }
}

/** The end of a server's output, for failure messages. */
export const tail = (server: ServerProcess) => server.output().slice(-4_000);
