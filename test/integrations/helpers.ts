import { createHmac } from 'node:crypto';
import type { Server } from '@hapi/hapi';
import { as, bootstrapAdmin, call, startTestServer, type Reply } from '../support/server.ts';
import type { Ctx as OrgsCtx } from '../orgs/helpers.ts';

/** The orgs tests' context (so their member helpers apply), plus an org for this file's projects. */
export interface Ctx extends OrgsCtx {
  orgId: string;
}

export async function setup(overrides?: Record<string, unknown>): Promise<Ctx> {
  const srv = await startTestServer({ overrides });
  const { token: adminToken, userId: adminId } = await bootstrapAdmin(srv.server);
  const api = as(srv.server, adminToken);
  const [lobby, org] = [await api.post('/orgs', { name: 'Lobby' }), await api.post('/orgs', { name: 'Acme' })];
  if (org.statusCode !== 201 || lobby.statusCode !== 201) throw new Error(`orgs: ${JSON.stringify([lobby.body, org.body])}`);
  return { srv, adminToken, adminId, lobbyId: lobby.body.id, orgId: org.body.id };
}

let projects = 0;
export async function newProject(ctx: Ctx, orgId = ctx.orgId): Promise<string> {
  const slug = `p${process.pid % 1000}x${++projects}`.slice(0, 8).padEnd(4, '0');
  const res = await as(ctx.srv.server, ctx.adminToken).post('/projects', { org_id: orgId, name: `Project ${projects}`, slug });
  if (res.statusCode !== 201) throw new Error(`project: ${JSON.stringify(res.body)}`);
  return res.body.id;
}

export async function setSecret(ctx: Ctx, base: string, name: string, value: string): Promise<void> {
  const res = await as(ctx.srv.server, ctx.adminToken).post(`${base}/secrets`, { name, value });
  if (res.statusCode !== 201) throw new Error(`secret ${name}: ${res.statusCode} ${JSON.stringify(res.body)}`);
}

/** POSTs `body` exactly as given (a string is sent byte for byte), as a provider does: no bearer token. */
export async function deliver(server: Server, url: string, body: string | object, headers: Record<string, string>): Promise<Reply> {
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await server.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...headers } });
  let parsed: any = res.payload;
  try {
    parsed = res.payload ? JSON.parse(res.payload) : null;
  } catch {
    /* not JSON */
  }
  return { statusCode: res.statusCode, body: parsed, headers: res.headers };
}

/** What the code host puts in X-Hub-Signature-256, written out here rather than taken from svc. */
export const hubSignature = (secret: string, body: string) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** The chat app's signature headers for a body sent at `at` (Unix seconds). */
export function chatHeaders(secret: string, body: string, at = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = createHmac('sha256', secret).update(`v0:${at}:${body}`).digest('hex');
  return { 'x-slack-signature': `v0=${signature}`, 'x-slack-request-timestamp': String(at) };
}

export const eventsOf = (ctx: Ctx, projectId: string) => ctx.srv.kernel.db('events').where({ project_id: projectId }).orderBy('created_at');

export { as, call };

/**
 * Binds `team` to `orgId` the way a real org does: an org admin (`api`) asks for a code, and the
 * team posts "bind <code>" in a message signed with the chat signing secret (which must be set).
 */
export async function bindTeam(server: Server, api: ReturnType<typeof as>, orgId: string, team: string, signingSecret: string): Promise<void> {
  const issued = await api.post(`/orgs/${orgId}/chat-teams`, { team_id: team });
  if (issued.statusCode !== 201) throw new Error(`binding code: ${issued.statusCode} ${JSON.stringify(issued.body)}`);
  const body = JSON.stringify({
    type: 'event_callback',
    team_id: team,
    event_id: `EvBind${team}${Date.now()}`,
    event: { type: 'message', channel: 'C0BINDING', user: 'U0TEAMADMIN', text: `bind ${issued.body.code}`, ts: '1718000000.000001' },
  });
  const posted = await deliver(server, '/gateway/providers/chatapp/webhook', body, chatHeaders(signingSecret, body));
  if (posted.statusCode !== 200 || posted.body?.bound !== true) throw new Error(`binding ${team}: ${posted.statusCode} ${JSON.stringify(posted.body)}`);
}
