import { as, call } from '../support/server.ts';
import { memberOf, setup, type Ctx, type User } from '../orgs/helpers.ts';
import { startFakeLlm, type FakeLlm } from '../fixtures/fake-llm.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import type { Permission } from '../../core/auth/permissions.ts';

/** A server, a fake upstream, an org with a project, an org admin and a member, and the upstream key as a system secret. */
export interface World {
  ctx: Ctx;
  fake: FakeLlm;
  admin: ReturnType<typeof as>;
  org: string;
  project: string;
  otherProject: string;
  orgAdmin: User;
  member: User;
}

export async function world(
  opts: { slowChunkMs?: number; idleTimeoutMs?: number; requestTimeoutMs?: number; overrides?: Record<string, unknown> } = {},
): Promise<World> {
  const fake = await startFakeLlm({ slowChunkMs: opts.slowChunkMs });
  const ctx = await setup({
    overrides: {
      ...opts.overrides,
      inference: {
        providers: {
          fakeai: { kind: 'openai', base_url: `${fake.url}/v1`, credential_secret: 'FAKE_KEY', models: ['configured-1'] },
          fakeclaude: { kind: 'anthropic', base_url: fake.url, credential_secret: 'FAKE_KEY', models: [] },
        },
        ...(opts.idleTimeoutMs ? { idle_timeout_ms: opts.idleTimeoutMs } : {}),
        ...(opts.requestTimeoutMs ? { request_timeout_ms: opts.requestTimeoutMs } : {}),
      },
    },
  });
  const admin = as(ctx.srv.server, ctx.adminToken);
  const secret = await admin.post('/system/secrets', { name: 'FAKE_KEY', value: fake.apiKey });
  if (secret.statusCode !== 201) throw new Error(`secret: ${JSON.stringify(secret.body)}`);
  const org = (await admin.post('/orgs', { name: 'Inference Org' })).body.id;
  const project = (await admin.post('/projects', { org_id: org, name: 'P', slug: 'infp' })).body.id;
  const otherProject = (await admin.post('/projects', { org_id: org, name: 'Q', slug: 'infq' })).body.id;
  const orgAdmin = await memberOf(ctx, org, 'inf-admin', 'admin');
  const member = await memberOf(ctx, org, 'inf-member', 'member');
  return { ctx, fake, admin, org, project, otherProject, orgAdmin, member };
}

export async function teardown(w: World | undefined): Promise<void> {
  await w?.ctx.srv.stop();
  await w?.fake.stop();
}

/** A running attempt of a new job in `project`, and a job token for it with `inference:use`. */
export async function jobToken(w: World, project = w.project, permissions: Permission[] = ['inference:use', 'jobs:read']) {
  const job = await w.admin.post(`/projects/${project}/jobs`, { title: 'uses a model', description: 'calls the proxy' });
  if (job.statusCode !== 201) throw new Error(`job: ${JSON.stringify(job.body)}`);
  const claimed = await w.admin.post(`/jobs/${job.body.id}/claim`, {});
  if (claimed.statusCode !== 200 && claimed.statusCode !== 201) throw new Error(`claim: ${JSON.stringify(claimed.body)}`);
  const { token } = await w.ctx.srv.kernel.container.resolve(MachineTokens).signJobToken({
    jobId: job.body.id,
    attemptId: claimed.body.attempt.id,
    projectId: project,
    orgId: w.org,
    permissions,
    ttlSeconds: 3600,
  });
  return { token, jobId: job.body.id as string, attemptId: claimed.body.attempt.id as string, leaseToken: claimed.body.lease_token as string };
}

/** Creates a target and returns it. */
export async function target(w: World, body: Record<string, unknown>, api = w.admin) {
  const res = await api.post('/inference/targets', body);
  if (res.statusCode !== 201) throw new Error(`target: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function managed(w: World, body: Record<string, unknown>, api = w.admin) {
  const res = await api.post('/inference/managed-models', body);
  if (res.statusCode !== 201) throw new Error(`managed model: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** `POST /inference/v1/chat/completions` through server.inject, with extra headers. */
export async function chat(w: World, token: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await w.ctx.srv.server.inject({
    method: 'POST',
    url: '/inference/v1/chat/completions',
    payload: body as object,
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
  let parsed: any = res.payload;
  try {
    parsed = JSON.parse(res.payload);
  } catch {
    /* a stream */
  }
  return { statusCode: res.statusCode, body: parsed, headers: res.headers, raw: res.payload };
}

export { call };

/** Any gateway route through server.inject: the parsed JSON body, or the raw text of a stream. */
export async function post(w: World, url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await w.ctx.srv.server.inject({ method: 'POST', url, payload: body as object, headers });
  let parsed: any = res.payload;
  try {
    parsed = JSON.parse(res.payload);
  } catch {
    /* a stream */
  }
  return { statusCode: res.statusCode, body: parsed, headers: res.headers, raw: res.payload };
}

/** The events of a server-sent stream: `event:` name (or null) and parsed `data:` (or the raw text when it is not JSON). */
export function sseEvents(raw: string): { event: string | null; data: any }[] {
  return raw
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let event: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      const text = data.join('\n');
      try {
        return { event, data: JSON.parse(text) };
      } catch {
        return { event, data: text };
      }
    });
}

/** A job with hints (a budget), claimed, and a job token for its running attempt. */
export async function budgetedJob(w: World, hints: Record<string, unknown>) {
  const job = await w.admin.post(`/projects/${w.project}/jobs`, { description: 'a budgeted job', hints });
  if (job.statusCode !== 201) throw new Error(`job: ${JSON.stringify(job.body)}`);
  const claimed = await w.admin.post(`/jobs/${job.body.id}/claim`, {});
  const { token } = await w.ctx.srv.kernel.container.resolve(MachineTokens).signJobToken({
    jobId: job.body.id,
    attemptId: claimed.body.attempt.id,
    projectId: w.project,
    orgId: w.org,
    permissions: ['inference:use'],
    ttlSeconds: 600,
  });
  return { token, jobId: job.body.id as string, attemptId: claimed.body.attempt.id as string };
}

/** The attempt's usage rows (what its receipt's llm section sums). */
export const attemptUsage = (w: World, attemptId: string) => w.ctx.srv.kernel.db('attempt_usage').where({ attempt_id: attemptId }).orderBy('id');
