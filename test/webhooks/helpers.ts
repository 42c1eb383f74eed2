import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { merge } from '../../core/config/load.ts';
import { emitEvent, type NewEvent } from '../../core/events/emit.ts';
import type { Db } from '../../core/db/knex.ts';
import { call, bootstrapAdmin, startTestServer, type TestServer, type TestServerOptions } from '../support/server.ts';
import { newUser, type Ctx, type User, unique } from '../orgs/helpers.ts';
import { until } from '../worker/helpers.ts';

export { until };

/** What the receiver saw of one request. */
export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Reply {
  status: number;
  body?: string;
  delayMs?: number;
}

/** A real HTTP server on 127.0.0.1 that records every request and answers as `reply` says (200 "ok" by default). */
export interface Receiver {
  url: string;
  received: Received[];
  reply: (r: Received, index: number) => Reply;
  close(): Promise<void>;
}

export async function receiver(): Promise<Receiver> {
  const state: Receiver = { url: '', received: [], reply: () => ({ status: 200, body: 'ok' }), close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      state.received.push(r);
      const reply = state.reply(r, state.received.length - 1);
      setTimeout(() => {
        res.writeHead(reply.status, { 'content-type': 'text/plain' });
        res.end(reply.body ?? '');
      }, reply.delayMs ?? 0);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  state.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** X-Svc-Signature-256, checked from scratch: `sha256=` hex HMAC-SHA256 of the raw body with the secret. */
export function svcSignatureValid(r: Received, secret: string): boolean {
  const expected = `sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`;
  return same(String(r.headers['x-svc-signature-256'] ?? ''), expected);
}

/**
 * Standard Webhooks, as a receiver's library checks it: the key is the base64 part of a `whsec_`
 * secret, else the secret's UTF-8 bytes; any `v1,` entry of webhook-signature must equal the
 * base64 HMAC-SHA256 of `id.timestamp.body`; the timestamp within 5 minutes.
 */
export function standardSignatureValid(r: Received, secret: string): boolean {
  const id = String(r.headers['webhook-id'] ?? '');
  const ts = String(r.headers['webhook-timestamp'] ?? '');
  if (!id || !/^\d+$/.test(ts) || Math.abs(Date.now() / 1000 - Number(ts)) > 300) return false;
  const key = secret.startsWith('whsec_') ? Buffer.from(secret.slice(6), 'base64') : Buffer.from(secret, 'utf8');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${r.body}`).digest('base64');
  return String(r.headers['webhook-signature'] ?? '')
    .split(' ')
    .some((s) => s.startsWith('v1,') && same(s.slice(3), expected));
}

/** Fast retries, a short poll and a fast Agenda, so the tests observe the whole schedule. */
export const SCALED = {
  roles: ['api', 'orchestrator'],
  webhooks: { retry_delays_ms: [150, 300, 450, 600, 750], poll_ms: 100, timeout_ms: 2_000 },
  adapters: { scheduler: { use: 'agenda', options: { process_every_ms: 50 } } },
};

/** One server per file: an owner with org A (projects A, A2), an outsider with org B (project B). */
export interface WebhookWorld {
  srv: TestServer;
  db: Db;
  ctx: Ctx;
  owner: User;
  outsider: User;
  orgA: string;
  orgB: string;
  projectA: string;
  projectA2: string;
  projectB: string;
}

export async function webhookWorld(name: string, opts: TestServerOptions = {}): Promise<WebhookWorld> {
  const srv = await startTestServer({ ...opts, overrides: merge(SCALED, opts.overrides ?? {}) });
  const { token: adminToken, userId: adminId } = await bootstrapAdmin(srv.server);
  const lobby = await call(srv.server, 'POST', '/orgs', { name: 'Lobby', slug: 'lobby' }, adminToken);
  const ctx: Ctx = { srv, adminToken, adminId, lobbyId: lobby.body.id };
  const owner = await newUser(ctx, `${name}-owner`);
  const outsider = await newUser(ctx, `${name}-outsider`);
  const orgA = (await owner.api.post('/orgs', { name: unique(`${name} A`) })).body.id;
  const orgB = (await outsider.api.post('/orgs', { name: unique(`${name} B`) })).body.id;
  const slug = name.slice(0, 5);
  const project = async (user: User, org: string, suffix: string) =>
    (await user.api.post('/projects', { org_id: org, name: suffix, slug: `${slug}${suffix}` })).body.id;
  return {
    srv,
    db: srv.kernel.db,
    ctx,
    owner,
    outsider,
    orgA,
    orgB,
    projectA: await project(owner, orgA, 'a'),
    projectA2: await project(owner, orgA, 'b'),
    projectB: await project(outsider, orgB, 'c'),
  };
}

export const SECRET = 'a-subscription-secret-0123456789';

/** Creates an org-wide subscription (or with `project`, a project-scoped one) and insists on 201. */
export async function subscribe(w: WebhookWorld, body: Record<string, unknown>, project?: string): Promise<any> {
  const path = project ? `/projects/${project}/webhooks` : `/orgs/${w.orgA}/webhooks`;
  const res = await w.owner.api.post(path, { secret: SECRET, events: ['*'], ...body });
  if (res.statusCode !== 201) throw new Error(`subscribe: ${res.statusCode} ${JSON.stringify(res.body)}`);
  return res.body;
}

export function emit(w: WebhookWorld, event: Partial<NewEvent> & { type: string }): Promise<{ id: string; created: boolean }> {
  return emitEvent(w.db, { project_id: w.projectA, source: 'manual', payload: {}, ...event } as NewEvent);
}

export const deliveriesOf = async (w: WebhookWorld, whId: string, query = 'limit=100'): Promise<any[]> =>
  (await w.owner.api.get(`/orgs/${w.orgA}/webhooks/${whId}/deliveries?${query}`)).body.data;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
