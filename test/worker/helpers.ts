import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { merge } from '../../core/config/load.ts';
import { SseParser, type SseEvent } from '../../cli/sse.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer, type TestServerOptions } from '../support/server.ts';
import { tempRepo } from '../manifest/helpers.ts';

/** A server running every role (so the worker runs claimed attempts), an admin, an org, and a project on a file:// bare repository. */
export interface WorkerWorld {
  srv: TestServer;
  api: ReturnType<typeof as>;
  token: string;
  orgId: string;
  projectId: string;
  /** The bare repository the project points at (push target). */
  bare: string;
  /** Scratch space of the test (pid files, markers); removed at stop. */
  scratch: string;
  stop(): Promise<void>;
}

export const ALL_ROLES = ['api', 'orchestrator', 'worker'];

export async function workerWorld(slug: string, opts: TestServerOptions = {}): Promise<WorkerWorld> {
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-worker-test-'));
  const srv = await startTestServer({
    ...opts,
    overrides: merge(
      { roles: ALL_ROLES, worker: { heartbeat_seconds: 1, log_flush_ms: 20, workspace_root: path.join(scratch, 'workspaces') } },
      opts.overrides ?? {},
    ),
  });
  const { token } = await bootstrapAdmin(srv.server);
  const api = as(srv.server, token);
  const source = tempRepo();
  source.commit(null, 'initial');
  const bare = path.join(scratch, 'origin.git');
  execFileSync('git', ['clone', '--quiet', '--bare', source.dir, bare]);
  rmSync(source.dir, { recursive: true, force: true });
  const orgId = (await api.post('/orgs', { name: `Worker ${slug}` })).body.id;
  const project = await api.post('/projects', { org_id: orgId, name: slug, slug, repo_url: `file://${bare}` });
  if (project.statusCode !== 201) throw new Error(`project: ${JSON.stringify(project.body)}`);
  return {
    srv,
    api,
    token,
    orgId,
    projectId: project.body.id,
    bare,
    scratch,
    stop: async () => {
      await srv.stop();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/** Commits `.svc/manifest.yaml` to the project's repository (its main branch) and syncs it at that commit; the SHA and the manifest's hash. */
export async function commitManifest(w: WorkerWorld, yaml: string): Promise<{ sha: string; manifestHash: string }> {
  const clone = mkdtempSync(path.join(w.scratch, 'clone-'));
  execFileSync('git', ['clone', '--quiet', w.bare, clone]);
  mkdirSync(path.join(clone, '.svc'), { recursive: true });
  writeFileSync(path.join(clone, '.svc', 'manifest.yaml'), yaml);
  git(clone, 'add', '-A');
  git(clone, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'manifest');
  git(clone, 'push', '--quiet', 'origin', 'HEAD:main');
  const sha = git(clone, 'rev-parse', 'HEAD');
  const res = await w.api.post(`/projects/${w.projectId}/manifest`, { ref: sha });
  if (res.statusCode !== 200) throw new Error(`manifest at ${sha}: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return { sha, manifestHash: res.body.manifest_hash };
}

export async function syncManifest(w: WorkerWorld, yaml: string): Promise<void> {
  const res = await w.api.post(`/projects/${w.projectId}/manifest`, { yaml });
  if (res.statusCode !== 200) throw new Error(`manifest: ${res.statusCode} ${JSON.stringify(res.body)}`);
}

export async function until<T>(check: () => Promise<T | null | undefined | false>, what: string, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The job once it is done or cancelled. */
export function finished(w: WorkerWorld, jobId: string, ms?: number): Promise<any> {
  return until(
    async () => {
      const job = (await w.api.get(`/jobs/${jobId}`)).body;
      return job.phase === 'done' || job.phase === 'cancelled' ? job : null;
    },
    `job ${jobId} to finish`,
    ms,
  );
}

export async function attemptsOf(w: WorkerWorld, jobId: string, projectId = w.projectId): Promise<any[]> {
  return (await w.api.get(`/projects/${projectId}/jobs/${jobId}/attempts?limit=100`)).body.data;
}

/** Every log line of an attempt, read page by page with the after_seq cursor. */
export async function logLines(w: WorkerWorld, jobId: string, attemptId: string): Promise<any[]> {
  const lines: any[] = [];
  for (;;) {
    const page = await w.api.get(`/jobs/${jobId}/attempts/${attemptId}/logs?limit=50&after_seq=${lines.at(-1)?.seq ?? 0}`);
    if (page.statusCode !== 200) throw new Error(`logs: ${page.statusCode} ${JSON.stringify(page.body)}`);
    lines.push(...page.body.data);
    if (!page.body.pagination.has_more) return lines;
  }
}

/** Reads an event stream over real HTTP to its end (or `ms`), with the CLI's parser. */
export async function readStream(
  w: WorkerWorld,
  streamPath: string,
  headers: Record<string, string> = {},
  ms = 20_000,
): Promise<{ status: number; type: string | null; events: SseEvent[] }> {
  const res = await fetch(`${w.srv.url}${streamPath}`, { headers: { authorization: `Bearer ${w.token}`, ...headers }, signal: AbortSignal.timeout(ms) });
  const parser = new SseParser();
  const events: SseEvent[] = [];
  for await (const chunk of res.body ?? []) events.push(...parser.feed(chunk));
  events.push(...parser.end());
  return { status: res.status, type: res.headers.get('content-type'), events };
}

export const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

/** Creates a job of `w`'s project that runs `run` as a script step, with more `hints`; its id. */
export async function scriptJob(w: WorkerWorld, run: string, hints: Record<string, unknown> = {}): Promise<string> {
  const res = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'script', hints: { step: { kind: 'script', script: { run } }, ...hints } });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

/** Alive unless gone or a zombie (killed orphans wait for init to reap them). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
