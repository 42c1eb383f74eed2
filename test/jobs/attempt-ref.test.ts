import test from 'ava';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

/** The interface's cross-context reference `<project_id>:<job_id>:<attempt_number>` names an attempt wherever its id does. */
let srv: TestServer;
let api: ReturnType<typeof as>;
let projectId: string;
let otherProjectId: string;
let jobId: string;
let otherJobId: string;
let attempt: { id: string; attempt_number: number; lease_token: string };

test.before(async () => {
  srv = await startTestServer({ overrides: { roles: ['api'] } });
  api = as(srv.server, (await bootstrapAdmin(srv.server)).token);
  const org = (await api.post('/orgs', { name: 'Refs' })).body;
  projectId = (await api.post('/projects', { org_id: org.id, name: 'Refs', slug: 'refs' })).body.id;
  otherProjectId = (await api.post('/projects', { org_id: org.id, name: 'Other', slug: 'other' })).body.id;
  jobId = (await api.post(`/projects/${projectId}/jobs`, { description: 'referenced' })).body.id;
  otherJobId = (await api.post(`/projects/${projectId}/jobs`, { description: 'a neighbour' })).body.id;
  const claimed = (await api.post(`/jobs/${jobId}/claim`, { lease_seconds: 600 })).body;
  attempt = { ...claimed.attempt, lease_token: claimed.lease_token ?? claimed.attempt.lease_token };
  await api.post(`/jobs/${otherJobId}/claim`, { lease_seconds: 600 });
});
test.after.always(() => srv?.stop());

test('the composite reference reads the same log and drives the same lease as the id', async (t) => {
  const ref = `${projectId}:${jobId}:${attempt.attempt_number}`;
  const byId = await api.get(`/jobs/${jobId}/attempts/${attempt.id}/logs`);
  const byRef = await api.get(`/jobs/${jobId}/attempts/${encodeURIComponent(ref)}/logs`);
  t.is(byRef.statusCode, 200, JSON.stringify(byRef.body));
  t.deepEqual(byRef.body, byId.body);
  t.deepEqual((await api.get(`/jobs/${jobId}/attempts/${ref}/logs`)).body, byId.body, 'the colons need no encoding');
  const beat = await api.post(`/jobs/${jobId}/attempts/${encodeURIComponent(ref)}/heartbeat`, { lease_token: attempt.lease_token });
  t.is(beat.statusCode, 200, JSON.stringify(beat.body));
  t.is(beat.body.id, attempt.id);
});

test('a reference to another project, another job or a number the job has not reached is 404; a malformed one is 400', async (t) => {
  for (const ref of [`${otherProjectId}:${jobId}:1`, `${projectId}:${otherJobId}:1`, `${projectId}:${jobId}:7`]) {
    const res = await api.get(`/jobs/${jobId}/attempts/${encodeURIComponent(ref)}/logs`);
    t.is(res.statusCode, 404, ref);
    t.regex(res.body.message, /not found/);
  }
  const bad = await api.get(`/jobs/${jobId}/attempts/${encodeURIComponent(`${projectId}:${jobId}:zero`)}/logs`);
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /attempt_id/);
});
