import type { ExecutionContext } from 'ava';
import { as, bootstrapAdmin, call, startTestServer, userInOrg, type Reply, type TestServer, type TestServerOptions } from '../support/server.ts';

/** One server (fresh database) per test file, its system administrator, and a lobby org used to create users. */
export interface Ctx {
  srv: TestServer;
  adminToken: string;
  adminId: string;
  lobbyId: string;
}

export async function setup(opts: TestServerOptions = {}): Promise<Ctx> {
  const srv = await startTestServer(opts);
  const { token: adminToken, userId: adminId } = await bootstrapAdmin(srv.server);
  const lobby = await call(srv.server, 'POST', '/orgs', { name: 'Lobby', slug: 'lobby' }, adminToken);
  if (lobby.statusCode !== 201) throw new Error(`lobby: ${lobby.statusCode} ${JSON.stringify(lobby.body)}`);
  return { srv, adminToken, adminId, lobbyId: lobby.body.id };
}

let counter = 0;
/** A name no other test in the process uses. */
export const unique = (prefix: string): string => `${prefix}-${process.pid}-${++counter}`;

export interface User {
  id: string;
  email: string;
  token: string;
  api: ReturnType<typeof as>;
}

/**
 * An ordinary user with an unscoped token and no membership: created through the lobby org
 * (admin adds by e-mail) and then removed from it again, so they start out seeing nothing.
 */
export async function newUser(ctx: Ctx, name: string): Promise<User> {
  const email = `${unique(name)}@example.com`.toLowerCase();
  const token = await userInOrg(ctx.srv.server, ctx.adminToken, ctx.lobbyId, email);
  const row = await ctx.srv.kernel.db('users').where({ email }).first('id');
  const removed = await call(ctx.srv.server, 'DELETE', `/orgs/${ctx.lobbyId}/members/${row.id}`, undefined, ctx.adminToken);
  if (removed.statusCode !== 204) throw new Error(`lobby removal: ${removed.statusCode} ${JSON.stringify(removed.body)}`);
  return { id: row.id, email, token, api: as(ctx.srv.server, token) };
}

/** An ordinary user who is a member of `orgId` with `role`. */
export async function memberOf(ctx: Ctx, orgId: string, name: string, role = 'member'): Promise<User> {
  const email = `${unique(name)}@example.com`.toLowerCase();
  const token = await userInOrg(ctx.srv.server, ctx.adminToken, orgId, email, role);
  const row = await ctx.srv.kernel.db('users').where({ email }).first('id');
  return { id: row.id, email, token, api: as(ctx.srv.server, token) };
}

/** Asserts the status, the Boom error body shape and (a pattern of) the message. */
export function assertError(t: ExecutionContext, res: Reply, status: number, message: string | RegExp): void {
  t.is(res.statusCode, status, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body ?? {}).sort(), ['error', 'message', 'statusCode']);
  t.is(res.body.statusCode, status);
  if (typeof message === 'string') t.is(res.body.message, message);
  else t.regex(res.body.message, message);
}

/** Rows in `table` matching `where`. */
export async function rows(ctx: Ctx, table: string, where: Record<string, unknown>): Promise<number> {
  const r = await ctx.srv.kernel.db(table).where(where).count({ n: '*' }).first();
  return Number((r as { n: unknown }).n);
}

export const ORG_FIELDS = ['created_at', 'deleted', 'id', 'name', 'slug', 'updated_at'];
export const PROJECT_FIELDS = ['branch', 'created_at', 'deleted', 'id', 'name', 'org_id', 'repo_url', 'slug', 'updated_at'];
export const MEMBER_FIELDS = ['created_at', 'display_name', 'email', 'role', 'updated_at', 'user_id'];
export const PAGINATION_FIELDS = ['count', 'has_more', 'limit', 'offset', 'total'];

export const ORG_ID = /^org_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
export const PROJECT_ID = /^proj_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A well-formed id that names nothing. */
export const missingOrgId = 'org_01h455vb4pex5vsknk084sn02q';
export const missingProjectId = 'proj_01h455vb4pex5vsknk084sn02q';
export const missingUserId = 'usr_01h455vb4pex5vsknk084sn02q';

/** Checks a list page's pagination block exactly and returns the ids in page order. */
export function assertPage(
  t: ExecutionContext,
  res: Reply,
  pagination: { limit: number; offset: number; count: number; total: number; has_more: boolean },
  key = 'id',
): string[] {
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), ['data', 'pagination']);
  t.deepEqual(Object.keys(res.body.pagination).sort(), PAGINATION_FIELDS);
  t.deepEqual(res.body.pagination, pagination);
  t.is(res.body.data.length, pagination.count);
  return res.body.data.map((x: Record<string, string>) => x[key]);
}
