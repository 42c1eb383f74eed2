import { readFileSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import pg from 'pg';
import type { DependencyContainer } from '../core/di.ts';
import type { Role } from '../core/config/schema.ts';
import type { Runtime } from '../core/ports/runtime.ts';
import type { TestServer } from '../test/support/server.ts';

/** Shared by the benchmark groups: knobs, percentiles, units, goals and the printed table. */

/** A numeric knob from the environment (BENCH_…), else `fallback`. */
export const knob = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export function ascending(values: Iterable<number>): Float64Array {
  return Float64Array.from(values).sort();
}

export const fmt = {
  ms: (v: number) => (Number.isFinite(v) ? `${v < 10 ? v.toFixed(2) : v.toFixed(1)} ms` : 'n/a'),
  rate: (v: number, unit = '/s') => `${Math.round(v).toLocaleString('en-US')} ${unit}`,
  int: (v: number) => Math.round(v).toLocaleString('en-US'),
  s: (v: number) => `${v.toFixed(1)} s`,
};

export interface Row {
  scenario: string;
  figure: string;
  value: string;
  goal?: string;
  /** 'ok' / 'missed' for a performance goal, 'PASS' / 'FAIL' for a correctness check. */
  verdict?: string;
}

/** A performance figure beside its goal: `atLeast` for throughput, `atMost` for latency. */
export function goalRow(scenario: string, figure: string, value: number, render: (v: number) => string, goal: { atLeast?: number; atMost?: number }): Row {
  const met = goal.atLeast !== undefined ? value >= goal.atLeast : value <= goal.atMost!;
  const target = goal.atLeast !== undefined ? `≥ ${render(goal.atLeast)}` : `≤ ${render(goal.atMost!)}`;
  return { scenario, figure, value: render(value), goal: target, verdict: Number.isFinite(value) && met ? 'ok' : 'missed' };
}

/** A correctness check: the benchmark fails (non-zero exit) when one does not hold. */
export function checkRow(scenario: string, figure: string, value: string, expected: string, holds: boolean, failures: string[]): Row {
  if (!holds) failures.push(`${scenario}: ${figure}: ${value} (expected ${expected})`);
  return { scenario, figure, value, goal: expected, verdict: holds ? 'PASS' : 'FAIL' };
}

/** One aligned table per scenario (same column widths throughout), then the notes that say what was measured. */
export function printTable(title: string, rows: Row[], notes: string[] = []): void {
  const cols = ['figure', 'value', 'goal', 'verdict'] as const;
  type Cells = Record<(typeof cols)[number], string>;
  const header: Cells = { figure: 'figure', value: 'value', goal: 'goal / expected', verdict: '' };
  const cells = rows.map((r): Cells & { scenario: string } => ({
    scenario: r.scenario,
    figure: r.figure,
    value: r.value,
    goal: r.goal ?? '—',
    verdict: r.verdict ?? '',
  }));
  const width = Object.fromEntries(cols.map((c) => [c, Math.max(header[c].length, ...cells.map((r) => r[c].length))])) as Record<(typeof cols)[number], number>;
  const line = (r: Cells) => `  ${cols.map((c) => (c === 'value' ? r[c].padStart(width[c]) : r[c].padEnd(width[c]))).join('   ')}`.trimEnd();
  const rule = `  ${cols.map((c) => '─'.repeat(width[c])).join('   ')}`;
  console.log(`\n${title}`);
  for (const scenario of [...new Set(cells.map((r) => r.scenario))]) {
    console.log(`\n${scenario}\n${line(header)}\n${rule}`);
    for (const r of cells.filter((c) => c.scenario === scenario)) console.log(line(r));
  }
  if (notes.length) console.log('');
  for (const n of notes) console.log(`  · ${n}`);
}

export async function json(url: string, method: string, body?: unknown, token?: string): Promise<any> {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** The first admin, an org and a project on a fresh bench server, through the API. */
export async function seedProject(url: string): Promise<{ token: string; projectId: string }> {
  const admin = await json(`${url}/auth/bootstrap`, 'POST', { email: 'bench@example.com' });
  const token = admin.access_token;
  const org = await json(`${url}/orgs`, 'POST', { name: 'Bench' }, token);
  const project = await json(`${url}/projects`, 'POST', { org_id: org.id, name: 'Bench', slug: 'bench' }, token);
  return { token, projectId: project.id };
}

/** Wall-clock milliseconds comparable across processes on this machine (sub-millisecond resolution). */
export const clock = (): number => performance.timeOrigin + performance.now();

/**
 * A kernel with `roles` in this process on a fresh database (the test helper), an admin, and one
 * project to put jobs in; `api` calls its routes in-process (server.inject) as the admin. The test
 * helper is imported on first use, so the claimer processes that load this file do not load the kernel.
 */
export async function kernelWithProject(roles: Role[], configure?: (c: DependencyContainer) => void, overrides: Record<string, unknown> = {}) {
  const { as, bootstrapAdmin, startTestServer } = await import('../test/support/server.ts');
  const srv: TestServer = await startTestServer({ overrides: { ...overrides, roles }, configure });
  try {
    const { token, userId } = await bootstrapAdmin(srv.server);
    const api = as(srv.server, token);
    const org = await api.post('/orgs', { name: 'Bench' });
    const project = await api.post('/projects', { org_id: org.body.id, name: 'Bench', slug: 'bench' });
    if (project.statusCode !== 201) throw new Error(`project: ${project.statusCode} ${JSON.stringify(project.body)}`);
    return { srv, api, token, userId, projectId: project.body.id as string, slug: project.body.slug as string };
  } catch (e) {
    await srv.stop();
    throw e;
  }
}

// ─── CPU accounting: what limits a figure on a small machine ────────────────────────────────

const TICK_S = 0.01; // USER_HZ: /proc reports CPU time in 1/100 s on Linux

/** CPU seconds (user + system) `pid` has used so far, or NaN without /proc. */
export function cpuSecondsOf(pid: number): number {
  const s = readProc(`/proc/${pid}/stat`);
  if (!s) return Number.NaN;
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_S;
}

interface CpuSnapshot {
  at: number;
  machineBusy: number;
  mine: Map<number, { ticks: number; postgres: boolean }>;
}

function readProc(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** This process and every descendant (claimer processes, the svc server, an embedded PostgreSQL and its backends). */
function snapshot(): CpuSnapshot | null {
  const stat = readProc('/proc/stat');
  if (!stat) return null; // not Linux: no CPU line in the report
  const [, ...fields] = stat.split('\n')[0].trim().split(/\s+/).map(Number);
  const machineBusy = fields.reduce((a, b) => a + b, 0) - fields[3] - (fields[4] ?? 0); // all but idle and iowait
  const procs = new Map<number, { ppid: number; ticks: number; postgres: boolean }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readProc(`/proc/${name}/stat`);
    if (!s) continue;
    const comm = s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'));
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    procs.set(Number(name), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]), postgres: comm === 'postgres' });
  }
  const mine = new Map<number, { ticks: number; postgres: boolean }>();
  const isMine = (pid: number): boolean => {
    for (let p: number | undefined = pid, hops = 0; p && hops < 20; p = procs.get(p)?.ppid, hops++) if (p === process.pid) return true;
    return false;
  };
  for (const [pid, p] of procs) if (isMine(pid)) mine.set(pid, { ticks: p.ticks, postgres: p.postgres });
  return { at: performance.now(), machineBusy, mine };
}

/**
 * Starts counting CPU: `stop()` tells how many cores the machine was busy on average, how much of
 * that was this benchmark (its Node processes, its PostgreSQL when embedded) and how much others.
 * Processes that end before `stop()` are not counted, so call it while the measured ones still run.
 */
export function cpuMeter(): { stop(): string } {
  const before = snapshot();
  return {
    stop() {
      const after = snapshot();
      if (!before || !after) return 'n/a (no /proc)';
      const seconds = (after.at - before.at) / 1000;
      const cores = (ticks: number) => (ticks * TICK_S) / seconds;
      let node = 0;
      let postgres = 0;
      for (const [pid, p] of after.mine) {
        const delta = p.ticks - (before.mine.get(pid)?.ticks ?? 0);
        if (p.postgres) postgres += delta;
        else node += delta;
      }
      const machine = cores(after.machineBusy - before.machineBusy);
      const others = Math.max(0, machine - cores(node + postgres));
      return `${machine.toFixed(2)} = ${cores(node).toFixed(2)} + ${cores(postgres).toFixed(2)} + ${others.toFixed(2)} of ${availableParallelism()}`;
    },
  };
}

// ─── PostgreSQL wait sampling: what the database's busy backends wait on ────────────────────

/**
 * Samples pg_stat_activity of `url`'s database every 25 ms over its own connection: for each
 * active client backend, its wait event, or CPU when it waits on nothing. `stop()` gives the
 * top events as shares of all samples.
 */
export async function pgWaits(url: string): Promise<{ stop(): Promise<string> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const counts = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const { rows } = await client.query(
        `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS w, count(*)::int AS n FROM pg_stat_activity
         WHERE state = 'active' AND backend_type = 'client backend' AND datname = current_database() AND pid <> pg_backend_pid() GROUP BY 1`,
      );
      for (const r of rows) counts.set(r.w, (counts.get(r.w) ?? 0) + r.n);
      await new Promise((r) => setTimeout(r, 25));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop.catch(() => undefined);
      await client.end().catch(() => undefined);
      const total = [...counts.values()].reduce((a, b) => a + b, 0);
      if (!total) return 'no active backend seen';
      const top = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3);
      return top.map(([w, n]) => `${w.slice(w.indexOf(':') + 1)} ${Math.round((n / total) * 100)}%`).join(' · ');
    },
  };
}

/** The local runtime, wrapped to note when each attempt's process wrote its first line (keyed by SVC_ATTEMPT_ID). */
export function timingRuntime(spawned: Map<string, number>): { runtime: Runtime; use(inner: Runtime): void } {
  let inner: Runtime;
  return {
    use: (r) => (inner = r),
    runtime: {
      name: 'local (timed)',
      start: async (spec) => {
        const proc = await inner.start(spec);
        return {
          exited: proc.exited,
          kill: () => proc.kill(),
          lines: async function* () {
            for await (const line of proc.lines()) {
              if (!spawned.has(spec.env.SVC_ATTEMPT_ID)) spawned.set(spec.env.SVC_ATTEMPT_ID, Date.now());
              yield line;
            }
          },
        };
      },
    },
  };
}
