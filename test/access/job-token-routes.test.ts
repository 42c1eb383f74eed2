import test from 'ava';
import type { RequestRoute } from '@hapi/hapi';
import { call, type Reply } from '../support/server.ts';
import { newUser, setup, type Ctx, type User } from '../orgs/helpers.ts';
import { MachineTokens } from '../../core/auth/machine-tokens.ts';
import { AttemptLogs } from '../../plugins/jobs/logs/attempt-logs.ts';
import { JOB_TOKEN_PERMISSIONS } from '../../plugins/worker/env.ts';

/**
 * Every route of the server, walked with the token a worker gives an attempt (its permission list as
 * the worker mints it): nothing answers with another job's data, and nothing that names another job
 * (its id, its attempt, a relation to it, a child under it) succeeds. The same walk with the owner's
 * token finds that data on many routes, so the check can see a leak when there is one.
 */
let ctx: Ctx;
let owner: User;
let orgId = '';
let projectId = '';
const own = { id: '', attemptId: '' };
const other = { id: '', attemptId: '' };
const MARK = 'neighbour-marker-7f3a';

test.before(async () => {
  ctx = await setup();
  owner = await newUser(ctx, 'jt-owner');
  orgId = (await owner.api.post('/orgs', { name: 'Job tokens' })).body.id;
  projectId = (await owner.api.post('/projects', { org_id: orgId, name: 'Walked', slug: 'walked' })).body.id;
  const create = async (description: string) => (await owner.api.post(`/projects/${projectId}/jobs`, { description })).body.id as string;
  own.id = await create('the job holding the token');
  other.id = await create(`the neighbour ${MARK}`);
  const child = await owner.api.post(`/projects/${projectId}/jobs`, { description: `child of the neighbour ${MARK}`, parent_id: other.id });
  if (child.statusCode !== 201) throw new Error(`child: ${JSON.stringify(child.body)}`);
  for (const job of [own, other]) job.attemptId = (await owner.api.post(`/jobs/${job.id}/claim`, {})).body.attempt.id;
  await ctx.srv.kernel.container
    .resolve(AttemptLogs)
    .append(other.id, other.attemptId, [{ seq: 1, stream: 'stdout', line: `log line ${MARK}`, at: new Date() }]);
  const attached = await owner.api.post(`/jobs/${other.id}/attachments`, { name: 'notes.txt', content: `attachment ${MARK}` });
  if (attached.statusCode !== 201) throw new Error(`attachment: ${JSON.stringify(attached.body)}`);
  await owner.api.post(`/projects/${projectId}/events`, { type: 'custom.note', payload: { job: other.id, note: MARK } });
});

test.after.always(async () => {
  await ctx?.srv.stop();
});

async function jobToken(): Promise<string> {
  const { token } = await ctx.srv.kernel.container.resolve(MachineTokens).signJobToken({
    jobId: own.id,
    attemptId: own.attemptId,
    projectId,
    orgId,
    permissions: [...JOB_TOKEN_PERMISSIONS],
    ttlSeconds: 3600,
  });
  return token;
}

/** What path parameters become: the neighbour's ids wherever a job or attempt is named, our project and org. */
function fill(route: RequestRoute, job: string, attempt: string): string {
  const values: Record<string, string> = {
    job_id: job,
    related_job_id: other.id,
    attempt_id: attempt,
    attempt_number: '1',
    project_id: projectId,
    org_id: orgId,
    user_id: owner.id,
    name: 'notes.txt',
  };
  return route.path.replace(/\{(\w+)\*?\}/g, (_, key: string) => values[key] ?? 'x');
}

/** Requests for one route: the neighbour named alone, and (on a route naming a job and an attempt) our job with its attempt. */
function requestsFor(route: RequestRoute): { path: string; namesOther: boolean }[] {
  const paths = [{ path: fill(route, other.id, other.attemptId), namesOther: /\{(job_id|attempt_id|attempt_number|related_job_id)\}/.test(route.path) }];
  if (route.path.includes('{job_id}') && route.path.includes('{attempt_id}')) paths.push({ path: fill(route, own.id, other.attemptId), namesOther: true });
  if (route.path.includes('{related_job_id}') || payloads()[`${route.method.toUpperCase()} ${route.path}`])
    paths.push({ path: fill(route, own.id, own.attemptId), namesOther: true });
  return paths;
}

/** Bodies that try to reach the neighbour through a payload (a relation, a child). */
const payloads = (): Record<string, unknown> => ({
  'POST /jobs/{job_id}/dependencies': { related_job_id: other.id, relation_type: 'blocks' },
  'POST /projects/{project_id}/jobs': { description: 'a child slipped under the neighbour', parent_id: other.id },
});

/** The neighbour's ids or text in an answer; a refusal may echo the ids the request named ("job … not found"), never its text. */
const reveals = (reply: Reply): boolean => {
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? '');
  return (reply.statusCode < 400 ? [other.id, other.attemptId, MARK] : [MARK]).some((s) => text.includes(s));
};

interface Finding {
  route: string;
  status: number;
  why: string;
}

async function walk(token: string, methods: string[], streams: boolean): Promise<{ findings: Finding[]; seen: number; revealing: string[] }> {
  const findings: Finding[] = [];
  const revealing: string[] = [];
  let seen = 0;
  for (const route of ctx.srv.server.table()) {
    const method = route.method.toUpperCase();
    if (!methods.includes(method) || (route.settings.auth as unknown) === false) continue;
    // A stream that opens never ends: the owner's would; the job token's must not open (if one did, the hang fails the test).
    if (!streams && route.path.endsWith('/stream')) continue;
    const key = `${method} ${route.path}`;
    for (const { path, namesOther } of requestsFor(route)) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : (payloads()[key] ?? {});
      const reply = await call(ctx.srv.server, method, path, body, token);
      seen++;
      const label = `${method} ${path.replaceAll(other.id, '{other}').replaceAll(own.id, '{own}').replaceAll(other.attemptId, '{other attempt}')}`;
      if (reply.statusCode >= 500) findings.push({ route: label, status: reply.statusCode, why: 'server error' });
      if (reveals(reply)) {
        revealing.push(label);
        findings.push({ route: label, status: reply.statusCode, why: "the answer holds the neighbour's data" });
      } else if (namesOther && reply.statusCode < 300)
        findings.push({ route: label, status: reply.statusCode, why: 'a request naming the neighbour succeeded' });
      else if (payloads()[key] && reply.statusCode < 300)
        findings.push({ route: label, status: reply.statusCode, why: 'a payload naming the neighbour was accepted' });
    }
  }
  return { findings, seen, revealing };
}

test.serial("the owner's walk finds the neighbour's data (the check can see a leak)", async (t) => {
  const { revealing } = await walk(owner.token, ['GET'], false);
  for (const route of [
    'GET /jobs/{other}',
    'GET /projects/{p}/jobs',
    'GET /jobs/{other}/attempts/{other attempt}/logs',
    'GET /jobs/{other}/attachments/notes.txt/content',
    'GET /projects/{p}/events',
  ])
    t.true(revealing.includes(route.replace('{p}', projectId)), `${route} among ${revealing.join(', ')}`);
});

test.serial("a job token's walk of every route: none reveals another job, none acts on another job", async (t) => {
  const { findings, seen } = await walk(await jobToken(), ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'], true);
  t.log(`${seen} requests over ${ctx.srv.server.table().length} routes`);
  t.deepEqual(findings, []);
  // Nothing reached the neighbour: no relation, no new child, its attachment and attempt as they were.
  const around = await owner.api.get(`/jobs/${other.id}/dependencies`);
  t.deepEqual([...around.body.dependencies, ...around.body.dependents], []);
  t.is((await owner.api.get(`/projects/${projectId}/jobs?parent_id=${other.id}`)).body.data.length, 1, 'only the child the owner made');
  t.is((await owner.api.get(`/jobs/${other.id}/attachments`)).body.data.length, 1);
  t.is((await owner.api.get(`/jobs/${other.id}`)).body.phase, 'active');
});

test.serial('a job token still reaches its own job: reads it, and places children under it', async (t) => {
  const token = await jobToken();
  t.is((await call(ctx.srv.server, 'GET', `/jobs/${own.id}/context`, undefined, token)).statusCode, 200);
  t.is((await call(ctx.srv.server, 'GET', `/jobs/${own.id}/attempts/${own.attemptId}/logs`, undefined, token)).statusCode, 200);
  const child = await call(ctx.srv.server, 'POST', `/projects/${projectId}/jobs`, { description: 'a step of my own', parent_id: own.id }, token);
  t.is(child.statusCode, 201, JSON.stringify(child.body));
  t.is(child.body.parent_id, own.id);
});
