/**
 * A client of a running svc over real HTTP, for the tests that start svc the way a user does
 * (processes, containers): JSON in and out, and the few steps that make a script job run.
 */
export interface HttpReply<T = any> {
  status: number;
  body: T;
}

export function httpApi(base: string, token?: string) {
  const send = async <T = any>(method: string, path: string, body?: unknown): Promise<HttpReply<T>> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000), // a proxy that accepted the connection may never answer
    });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed };
  };
  return {
    get: <T = any>(path: string) => send<T>('GET', path),
    post: <T = any>(path: string, body: unknown = {}) => send<T>('POST', path, body),
  };
}

function expect(reply: HttpReply, status: number, what: string): any {
  if (reply.status !== status) throw new Error(`${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

/** The first administrator's token (`bootstrapToken` when the server requires SVC_BOOTSTRAP_TOKEN). */
export async function bootstrapOver(base: string, bootstrapToken?: string): Promise<string> {
  const body = expect(
    await httpApi(base).post('/auth/bootstrap', { email: 'admin@example.com', ...(bootstrapToken ? { token: bootstrapToken } : {}) }),
    201,
    'bootstrap',
  );
  return body.access_token;
}

/** An org and a project on `repoUrl`; the project's id. */
export async function projectOver(base: string, token: string, repoUrl: string, slug = 'demo'): Promise<string> {
  const api = httpApi(base, token);
  const org = expect(await api.post('/orgs', { name: `Org ${slug}` }), 201, 'org');
  return expect(await api.post('/projects', { org_id: org.id, name: slug, slug, repo_url: repoUrl }), 201, 'project').id;
}

/** Creates a job that runs `run` as a script step and waits until it is done or cancelled; the job and its latest attempt's stdout. */
export async function runScriptOver(base: string, token: string, projectId: string, run: string, ms = 120_000): Promise<{ job: any; stdout: string[] }> {
  const api = httpApi(base, token);
  const created = expect(
    await api.post(`/projects/${projectId}/jobs`, { description: 'script', hints: { step: { kind: 'script', script: { run } } } }),
    201,
    'job',
  );
  const deadline = Date.now() + ms;
  let job = created;
  while (job.phase !== 'done' && job.phase !== 'cancelled') {
    if (Date.now() > deadline) throw new Error(`job ${created.id} still ${job.phase} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
    job = expect(await api.get(`/jobs/${created.id}`), 200, 'job');
  }
  const attempts = expect(await api.get(`/projects/${projectId}/jobs/${created.id}/attempts?limit=100`), 200, 'attempts').data as any[];
  const last = attempts.sort((a, b) => b.attempt_number - a.attempt_number)[0];
  const stdout: string[] = [];
  if (last) {
    const logs = expect(await api.get(`/jobs/${created.id}/attempts/${last.id}/logs?limit=200`), 200, 'logs').data as any[];
    stdout.push(...logs.filter((l) => l.stream === 'stdout').map((l) => l.line));
  }
  return { job, stdout };
}
