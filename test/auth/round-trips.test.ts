import test from 'ava';
import type { Server } from '@hapi/hapi';
import { Tokens } from '../../core/tokens.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import { createTestDatabase } from '../support/database.ts';
import { as, bootstrapAdmin, startTestServer, userInOrg, type TestServer } from '../support/server.ts';

/** The statements `server` sends to PostgreSQL (both pools) while `fn` runs. */
async function statementsOf(server: Server, fn: () => Promise<unknown>): Promise<string[]> {
  const pools = [server.app.container.resolve(Tokens.Db), server.app.container.resolve(Tokens.ControlDb)];
  const seen: string[] = [];
  const hear = (q: { sql: string }) => seen.push(q.sql);
  for (const pool of pools) pool.on('query', hear);
  try {
    await fn();
  } finally {
    for (const pool of pools) pool.off('query', hear);
  }
  return seen;
}

let s: TestServer;
let adminToken = '';
let orgId = '';
let projectId = '';
let jobId = '';
let memberToken = '';

test.before(async () => {
  s = await startTestServer();
  adminToken = (await bootstrapAdmin(s.server)).token;
  const admin = as(s.server, adminToken);
  orgId = (await admin.post('/orgs', { name: 'Trips' })).body.id;
  projectId = (await admin.post('/projects', { org_id: orgId, name: 'Trips', slug: 'trips' })).body.id;
  memberToken = await userInOrg(s.server, adminToken, orgId, 'member@example.com', 'member');
  jobId = (await admin.post(`/projects/${projectId}/jobs`, { description: 'read me' })).body.id;
});
test.after.always(async () => {
  await s?.stop();
});

/** What authentication and the access check read when nothing is remembered: users, tokens, memberships, bindings, a job's project. */
const AUTH_READ = /\b(users|service_account_tokens|org_members|project_members|access_bindings|access_group_members)\b|^select "project_id" from "jobs"/;

/**
 * Once the project's manifest defaults, its liveness and slug, and its org's budget settings are
 * remembered (core/db/shared-memos.ts): the INSERT, which also wakes the claimers.
 */
const CREATE_STATEMENTS = 1;
const JOB_TOKEN_READ_STATEMENTS = 1;

// The job context is one statement (its row, the rest as JSON beside it): a snapshot without a transaction.
for (const [route, path, expected] of [
  ['GET /jobs/{id}', () => `/jobs/${jobId}`, 1],
  ['GET /projects/{id}', () => `/projects/${projectId}`, 1],
  ['GET /projects/{id}/jobs', () => `/projects/${projectId}/jobs`, 1],
  ['GET /jobs/{id}/context', () => `/jobs/${jobId}/context`, 1],
] as const) {
  test.serial(`${route} by an org member, once the caller is known: ${expected} statement${expected === 1 ? '' : 's'}, none for access`, async (t) => {
    const member = as(s.server, memberToken);
    t.is((await member.get(path())).statusCode, 200); // the first request learns who the caller is and what they hold
    let res: Awaited<ReturnType<typeof member.get>> | undefined;
    const statements = await statementsOf(s.server, async () => (res = await member.get(path())));
    t.is(res!.statusCode, 200);
    t.deepEqual(
      statements.filter((q) => AUTH_READ.test(q)),
      [],
    );
    t.is(statements.length, expected, statements.join('\n'));
  });
}

test.serial('POST /projects/{id}/jobs by an org member, once the caller is known: none for access', async (t) => {
  const member = as(s.server, memberToken);
  t.is((await member.post(`/projects/${projectId}/jobs`, { description: 'warm up' })).statusCode, 201);
  let res: Awaited<ReturnType<typeof member.post>> | undefined;
  const statements = await statementsOf(s.server, async () => (res = await member.post(`/projects/${projectId}/jobs`, { description: 'count me' })));
  t.is(res!.statusCode, 201);
  t.deepEqual(
    statements.filter((q) => AUTH_READ.test(q)),
    [],
  );
  t.is(statements.length, CREATE_STATEMENTS, statements.join('\n'));
});

test.serial('a job token reads its job in one statement once its attempt is known to run, and stops at once when the attempt ends', async (t) => {
  const admin = as(s.server, adminToken);
  const job = (await admin.post(`/projects/${projectId}/jobs`, { description: 'tokened' })).body;
  const claimed = (await admin.post(`/jobs/${job.id}/claim`, {})).body;
  const { token } = await s.server.app.container.resolve(MachineTokens).signJobToken({
    jobId: job.id,
    attemptId: claimed.attempt.id,
    projectId,
    orgId,
    permissions: ['jobs:read'],
    ttlSeconds: 3600,
  });
  const api = as(s.server, token);
  t.is((await api.get(`/jobs/${job.id}`)).statusCode, 200);
  let res: Awaited<ReturnType<typeof api.get>> | undefined;
  const statements = await statementsOf(s.server, async () => (res = await api.get(`/jobs/${job.id}`)));
  t.is(res!.statusCode, 200);
  t.is(statements.length, JOB_TOKEN_READ_STATEMENTS, statements.join('\n'));
  const released = await admin.post(`/jobs/${job.id}/release`, { attempt_id: claimed.attempt.id, lease_token: claimed.attempt.lease_token });
  t.is(released.statusCode, 200);
  const after = await api.get(`/jobs/${job.id}`);
  t.is(after.statusCode, 401);
  t.is(after.body.message, 'the attempt of this job token has ended');
});

test.serial('a cached grant goes at once when the membership goes, and comes back with it', async (t) => {
  const admin = as(s.server, adminToken);
  const member = as(s.server, memberToken);
  t.is((await member.get(`/jobs/${jobId}`)).statusCode, 200);
  const { body: me } = await member.get('/auth/me');
  t.is((await admin.delete(`/orgs/${orgId}/members/${me.user.id}`)).statusCode, 204);
  t.is((await member.get(`/jobs/${jobId}`)).statusCode, 404);
  t.is((await admin.post(`/orgs/${orgId}/members`, { email: 'member@example.com', role: 'member' })).statusCode, 201);
  t.is((await member.get(`/jobs/${jobId}`)).statusCode, 200);
});

test('a membership removed through one replica stops the member on the other (NOTIFY svc_auth)', async (t) => {
  const database = await createTestDatabase();
  const a = await startTestServer({ database });
  const b = await startTestServer({ database });
  t.teardown(async () => {
    await b.stop();
    await a.stop();
    await database.drop();
  });
  const token = (await bootstrapAdmin(a.server)).token;
  const adminA = as(a.server, token);
  const org = (await adminA.post('/orgs', { name: 'Replicas' })).body.id;
  const project = (await adminA.post('/projects', { org_id: org, name: 'Replicas', slug: 'replicas' })).body.id;
  const member = as(b.server, await userInOrg(a.server, token, org, 'm@example.com', 'member'));
  t.is((await member.get(`/projects/${project}`)).statusCode, 200); // b now remembers the grant
  const { body: me } = await member.get('/auth/me');
  t.is((await adminA.delete(`/orgs/${org}/members/${me.user.id}`)).statusCode, 204);
  const until = Date.now() + 2_000;
  let status = 200;
  while (status === 200 && Date.now() < until) {
    status = (await member.get(`/projects/${project}`)).statusCode;
    if (status === 200) await new Promise((r) => setTimeout(r, 10));
  }
  t.is(status, 404);
});

test('a job token stops on the other replica once its attempt ends on one (NOTIFY svc_auth)', async (t) => {
  const database = await createTestDatabase();
  const a = await startTestServer({ database });
  const b = await startTestServer({ database });
  t.teardown(async () => {
    await b.stop();
    await a.stop();
    await database.drop();
  });
  const token = (await bootstrapAdmin(a.server)).token;
  const adminA = as(a.server, token);
  const org = (await adminA.post('/orgs', { name: 'Replicas' })).body.id;
  const project = (await adminA.post('/projects', { org_id: org, name: 'Replicas', slug: 'replicas' })).body.id;
  const job = (await adminA.post(`/projects/${project}/jobs`, { description: 'tokened' })).body;
  const claimed = (await adminA.post(`/jobs/${job.id}/claim`, {})).body;
  const jobToken = await a.server.app.container.resolve(MachineTokens).signJobToken({
    jobId: job.id,
    attemptId: claimed.attempt.id,
    projectId: project,
    orgId: org,
    permissions: ['jobs:read'],
    ttlSeconds: 3600,
  });
  const onB = as(b.server, jobToken.token);
  t.is((await onB.get(`/jobs/${job.id}`)).statusCode, 200); // b now remembers the attempt as running
  t.is((await adminA.post(`/jobs/${job.id}/release`, { attempt_id: claimed.attempt.id, lease_token: claimed.attempt.lease_token })).statusCode, 200);
  const until = Date.now() + 2_000;
  let status = 200;
  while (status === 200 && Date.now() < until) {
    status = (await onB.get(`/jobs/${job.id}`)).statusCode;
    if (status === 200) await new Promise((r) => setTimeout(r, 10));
  }
  t.is(status, 401);
});

test.serial('a job token stops at once when its attempt is ended by a statement outside the jobs domain (a script, a test)', async (t) => {
  const admin = as(s.server, adminToken);
  const job = (await admin.post(`/projects/${projectId}/jobs`, { description: 'scripted' })).body;
  const claimed = (await admin.post(`/jobs/${job.id}/claim`, {})).body;
  const { token } = await s.server.app.container.resolve(MachineTokens).signJobToken({
    jobId: job.id,
    attemptId: claimed.attempt.id,
    projectId,
    orgId,
    permissions: ['jobs:read'],
    ttlSeconds: 3600,
  });
  const api = as(s.server, token);
  t.is((await api.get(`/jobs/${job.id}`)).statusCode, 200);
  await s.server.app.container.resolve(Tokens.Db)('job_attempts').where({ id: claimed.attempt.id }).update({ status: 'cancelled', ended_at: new Date() });
  t.is((await api.get(`/jobs/${job.id}`)).statusCode, 401);
});
