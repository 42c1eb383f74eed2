import test from 'ava';
import Boom from '@hapi/boom';
import { ROLE_PERMISSIONS } from '../../core/auth/permissions.ts';
import type { Grant, Principal } from '../../core/auth/principal.ts';
import { JobCreation } from '../../plugins/jobs/job/create.ts';
import { as, bootstrapAdmin, startTestServer, type TestServer } from '../support/server.ts';

/**
 * Root-job creates of concurrent callers share one batched INSERT. One tenant's row the database
 * would refuse must fail that tenant's create alone (422 naming the field), never the other
 * tenants' creates in the same batch. Called on the service, under the HTTP edge's own checks.
 */
let s: TestServer;
let userId = '';
const projects: { orgId: string; projectId: string }[] = [];

test.before(async () => {
  s = await startTestServer();
  const boot = await bootstrapAdmin(s.server);
  userId = boot.userId;
  const admin = as(s.server, boot.token);
  for (const name of ['Hostile', 'Bystand']) {
    const orgId = (await admin.post('/orgs', { name })).body.id;
    const res = await admin.post('/projects', { org_id: orgId, name, slug: name.toLowerCase() });
    if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
    const projectId = res.body.id;
    projects.push({ orgId, projectId });
  }
});
test.after.always(async () => {
  await s?.stop();
});

const principal = (): Principal =>
  ({
    kind: 'user',
    id: userId,
    email: 'admin@example.com',
    isAdmin: true,
    scope: null,
    roleCap: null,
    expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
  }) as Principal;
const grant = (p: { orgId: string; projectId: string }): Grant => ({
  orgId: p.orgId,
  projectId: p.projectId,
  role: 'owner',
  permissions: ROLE_PERMISSIONS.owner,
});

function nested(depth: number): Record<string, unknown> {
  let v: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

const HOSTILE: [string, Record<string, unknown>, RegExp][] = [
  ['a NUL in the description', { description: 'fix\u0000it' }, /description contains a NUL character/],
  ['a lone surrogate in the description', { description: 'fix \ud800 it' }, /description contains a lone UTF-16 surrogate/],
  ['a NUL in a hint', { description: 'x', hints: { note: 'a\u0000b' } }, /hints\.note contains a NUL character/],
  ['a NUL in a hint key', { description: 'x', hints: { 'k\u0000': 1 } }, /hints\.k\\u0000 has a key that contains a NUL character/],
  ['hints nested 10,000 deep', { description: 'x', hints: nested(10_000) }, /hints\.a\.a.*is nested more than 64 levels deep/],
];

test("a row the database would refuse fails its own create (422 naming the field) and no other tenant's create in the batch", async (t) => {
  const creation = s.kernel.container.resolve(JobCreation);
  const [hostile, bystander] = projects;
  const before = Number((await s.kernel.db('jobs').count({ n: '*' }).first())!.n);
  // The first call goes out alone; everything made while it is in flight shares the next batch.
  const first = creation.create(principal(), grant(bystander), { description: 'first' });
  const calls = [
    ...HOSTILE.map(([, input]) => creation.create(principal(), grant(hostile), input as never)),
    ...Array.from({ length: 20 }, (_, i) => creation.create(principal(), grant(bystander), { description: `bystander ${i}` })),
  ];
  const results = await Promise.allSettled([first, ...calls]);
  const bystanders = [results[0], ...results.slice(1 + HOSTILE.length)];
  t.is(
    bystanders.filter((r) => r.status === 'fulfilled').length,
    21,
    String((bystanders.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined)?.reason),
  );
  HOSTILE.forEach(([what, , message], i) => {
    const r = results[1 + i];
    t.is(r.status, 'rejected', what);
    if (r.status !== 'rejected') return;
    t.true(Boom.isBoom(r.reason) && r.reason.output.statusCode === 422, `${what}: ${r.reason}`);
    t.regex(String(r.reason.message), message, what);
  });
  const after = Number((await s.kernel.db('jobs').count({ n: '*' }).first())!.n);
  t.is(after - before, 21, "the bystanders' jobs, and nothing of the hostile ones");
});
