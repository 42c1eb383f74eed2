import test from 'ava';
import { createHash } from 'node:crypto';
import { as, call } from '../support/server.ts';
import { ISO, assertError, assertPage, memberOf, missingOrgId, newUser, rows, setup, type Ctx, type User } from '../orgs/helpers.ts';

/** Org documents through the REST API: versions, paths, conflicts, access, and the system.doc.* events. */
let ctx: Ctx;
let admin: ReturnType<typeof as>;
let orgA = '';
let orgB = '';
let projA1 = '';
let projA2 = '';
let projB = '';
let member: User;
let orgAdmin: User;
let outsider: User;

const DOC_ID = /^doc_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const VERSION_ID = /^docv_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const MISSING_DOC = 'doc_01h455vb4pex5vsknk084sn02q';
const DOC_FIELDS = [
  'content',
  'content_hash',
  'created_at',
  'created_by',
  'current_version',
  'deleted',
  'deleted_at',
  'id',
  'metadata',
  'org_id',
  'path',
  'project_id',
  'size_bytes',
  'updated_at',
  'version',
  'version_created_at',
  'version_created_by',
  'version_id',
];
const sha = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}`;

test.before(async () => {
  ctx = await setup();
  admin = as(ctx.srv.server, ctx.adminToken);
  orgA = (await admin.post('/orgs', { name: 'Docs A' })).body.id;
  orgB = (await admin.post('/orgs', { name: 'Docs B' })).body.id;
  projA1 = (await admin.post('/projects', { org_id: orgA, name: 'A1', slug: 'docsa1' })).body.id;
  projA2 = (await admin.post('/projects', { org_id: orgA, name: 'A2', slug: 'docsa2' })).body.id;
  projB = (await admin.post('/projects', { org_id: orgB, name: 'B', slug: 'docsb' })).body.id;
  member = await memberOf(ctx, orgA, 'docs-member', 'member');
  orgAdmin = await memberOf(ctx, orgA, 'docs-admin', 'admin');
  outsider = await memberOf(ctx, orgB, 'docs-outsider', 'admin');
});
test.after.always(async () => {
  await ctx?.srv.stop();
});

const docs = (org: string, rest = '') => `/orgs/${org}/docs${rest}`;
const put = (url: string, body: unknown, token = ctx.adminToken) => call(ctx.srv.server, 'PUT', url, body, token);
const docEvents = (docId: string) =>
  ctx.srv.kernel
    .db('events')
    .whereRaw("payload_json->>'doc_id' = ?", [docId])
    .orderBy([{ column: 'created_at' }, { column: 'project_id' }])
    .select('project_id', 'type', 'source', 'actor_type', 'actor_id', 'mutation_id', 'request_id', 'payload_json');

test.serial('create, read, update with versions, read an older version, list versions, delete: each write emits its event', async (t) => {
  const created = await orgAdmin.api.post(docs(orgA), { path: 'guides/style.md', content: '# Style\nv1\n', metadata: { owner: 'docs' }, mutation_id: 'mut-1' });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.deepEqual(Object.keys(created.body).sort(), DOC_FIELDS);
  t.regex(created.body.id, DOC_ID);
  t.regex(created.body.version_id, VERSION_ID);
  t.like(created.body, {
    org_id: orgA,
    project_id: null,
    path: '/guides/style.md',
    version: 1,
    current_version: 1,
    content: '# Style\nv1\n',
    content_hash: sha('# Style\nv1\n'),
    size_bytes: 11,
    metadata: { owner: 'docs' },
    deleted: false,
    deleted_at: null,
    created_by: orgAdmin.id,
  });
  t.regex(created.body.created_at, ISO);
  const id = created.body.id;

  const updated = await put(docs(orgA, `/${id}`), { content: '# Style\nv2 ✓\n', expected_version: 1, mutation_id: 'mut-2' }, orgAdmin.token);
  t.is(updated.statusCode, 200, JSON.stringify(updated.body));
  t.like(updated.body, {
    version: 2,
    current_version: 2,
    content: '# Style\nv2 ✓\n',
    metadata: { owner: 'docs' },
    size_bytes: Buffer.byteLength('# Style\nv2 ✓\n'),
  });
  const third = await put(docs(orgA, `/${id}`), { content: 'v3', metadata: { owner: 'ops' } }, orgAdmin.token);
  t.like(third.body, { version: 3, metadata: { owner: 'ops' } });

  const current = await member.api.get(docs(orgA, `/${id}`));
  t.like(current.body, { version: 3, current_version: 3, content: 'v3' });
  const old = await member.api.get(docs(orgA, `/${id}?version=1`));
  t.like(old.body, { version: 1, current_version: 3, content: '# Style\nv1\n', version_id: created.body.version_id, metadata: { owner: 'docs' } });
  const byPath = await member.api.get(docs(orgA, `/by-path?path=${encodeURIComponent('/guides/style.md')}&version=2`));
  t.like(byPath.body, { id, version: 2, content: '# Style\nv2 ✓\n' });

  const versions = await member.api.get(docs(orgA, `/${id}/versions`));
  assertPage(t, versions, { limit: 10, offset: 0, count: 3, total: 3, has_more: false });
  t.deepEqual(
    versions.body.data.map((v: any) => v.version),
    [3, 2, 1],
  );
  t.false('content' in versions.body.data[0]);

  const removed = await call(ctx.srv.server, 'DELETE', docs(orgA, `/${id}?expected_version=3&mutation_id=mut-4`), undefined, orgAdmin.token);
  t.is(removed.statusCode, 204);
  t.like((await member.api.get(docs(orgA, `/${id}`))).body, { deleted: true, version: 3 });
  t.is(
    (await member.api.get(docs(orgA))).body.data.some((d: any) => d.id === id),
    false,
  );
  t.is(
    (await member.api.get(docs(orgA, '?include_deleted=true'))).body.data.some((d: any) => d.id === id),
    true,
  );

  // An org-wide document records each event on every live project of the org, with the spec's payload exactly.
  const events = await docEvents(id);
  t.is(events.length, 8);
  t.deepEqual(new Set(events.map((e: any) => e.project_id)), new Set([projA1, projA2]));
  const onA1 = events.filter((e: any) => e.project_id === projA1);
  t.deepEqual(
    onA1.map((e: any) => e.type),
    ['system.doc.created', 'system.doc.updated', 'system.doc.updated', 'system.doc.deleted'],
  );
  for (const e of onA1) t.like(e, { source: 'system', actor_type: 'user', actor_id: orgAdmin.id });
  const [c, u] = onA1;
  t.deepEqual(Object.keys(c.payload_json).sort(), [
    'content_hash',
    'doc_id',
    'doc_version_id',
    'metadata',
    'mutation_id',
    'org_id',
    'path',
    'project_id',
    'request_id',
    'version',
  ]);
  t.like(c.payload_json, {
    org_id: orgA,
    project_id: null,
    doc_id: id,
    doc_version_id: created.body.version_id,
    path: '/guides/style.md',
    version: 1,
    content_hash: sha('# Style\nv1\n'),
    mutation_id: 'mut-1',
    metadata: { owner: 'docs' },
  });
  t.is(typeof c.payload_json.request_id, 'string');
  t.is(c.request_id, c.payload_json.request_id);
  t.is(c.mutation_id, 'mut-1');
  t.like(u.payload_json, { version: 2, doc_version_id: updated.body.version_id, mutation_id: 'mut-2' });
  t.is(onA1[2].payload_json.mutation_id, null);
  const d = onA1[3].payload_json;
  t.deepEqual(Object.keys(d).sort(), ['content_hash', 'doc_id', 'metadata', 'mutation_id', 'org_id', 'path', 'project_id', 'request_id', 'version']);
  t.like(d, { doc_id: id, path: '/guides/style.md', version: 3, content_hash: sha('v3'), mutation_id: 'mut-4', metadata: { owner: 'ops' } });
});

test.serial('a project document records its events on its project only; its path is free again after delete', async (t) => {
  const created = await admin.post(docs(orgA), { path: '/runbooks/deploy.md', content: 'deploy', project_id: projA2 });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  t.is(created.body.project_id, projA2);
  const events = await docEvents(created.body.id);
  t.deepEqual(
    events.map((e: any) => [e.project_id, e.type, e.payload_json.project_id]),
    [[projA2, 'system.doc.created', projA2]],
  );

  t.is((await call(ctx.srv.server, 'DELETE', docs(orgA, `/${created.body.id}`), undefined, ctx.adminToken)).statusCode, 204);
  const again = await admin.post(docs(orgA), { path: '/runbooks/deploy.md', content: 'deploy again' });
  t.is(again.statusCode, 201);
  t.not(again.body.id, created.body.id);
});

test.serial('list: newest first, filtered by path prefix and project, paginated, without content', async (t) => {
  for (const p of ['/kb/a.md', '/kb/b.md', '/kb/sub/c.md', '/other.md']) t.is((await admin.post(docs(orgA), { path: p, content: p })).statusCode, 201);
  const kb = await member.api.get(docs(orgA, '?path=/kb/&limit=2'));
  assertPage(t, kb, { limit: 2, offset: 0, count: 2, total: 3, has_more: true });
  t.deepEqual(
    kb.body.data.map((d: any) => d.path),
    ['/kb/sub/c.md', '/kb/b.md'],
  );
  t.false('content' in kb.body.data[0]);
  const next = await member.api.get(docs(orgA, '?path=kb/&limit=2&offset=2'));
  t.deepEqual(
    next.body.data.map((d: any) => d.path),
    ['/kb/a.md'],
  );
  const ofProject = await member.api.get(docs(orgA, `?project_id=${projA2}&include_deleted=true`));
  t.deepEqual(
    ofProject.body.data.map((d: any) => d.path),
    ['/runbooks/deploy.md'],
  );
  // Org B sees none of org A's documents.
  assertPage(t, await outsider.api.get(docs(orgB)), { limit: 10, offset: 0, count: 0, total: 0, has_more: false });
});

test.serial('bad input is 400 naming the field, and writes nothing', async (t) => {
  const before = await rows(ctx, 'org_docs', { org_id: orgA });
  const cases: [unknown, RegExp][] = [
    [{ content: 'x' }, /"path" is required/],
    [{ path: '/a/../b.md', content: 'x' }, /"path" must not have "\." or "\.\." segments/],
    [{ path: '/a//b.md', content: 'x' }, /"path" must not have empty segments/],
    [{ path: '/a/', content: 'x' }, /"path" must not have empty segments/],
    [{ path: '/a.md@v2', content: 'x' }, /"path" must not end with "@v<N>"/],
    [{ path: '/a\u0001.md', content: 'x' }, /"path" must not contain control characters/],
    [{ path: '/a.md' }, /"content" is required/],
    [{ path: '/a.md', content: 'x', metadata: 'no' }, /"metadata" must be of type object/],
    [{ path: '/a.md', content: 'x', project_id: 'nope' }, /"project_id" with value "nope" fails to match/],
    [{ path: '/a.md', content: 'x', extra: 1 }, /"extra" is not allowed/],
  ];
  for (const [body, message] of cases) assertError(t, await admin.post(docs(orgA), body), 400, message);
  const id = (await admin.get(docs(orgA, '?path=/kb/a.md'))).body.data[0].id;
  assertError(t, await put(docs(orgA, `/${id}`), { content: 'x', expected_version: 0 }), 400, /"expected_version" must be greater than or equal to 1/);
  assertError(t, await admin.get(docs(orgA, `/${id}?version=zero`)), 400, /"version" must be a number/);
  assertError(t, await admin.get(docs(orgA, '/by-path')), 400, /"path" is required/);
  assertError(t, await admin.get(docs(orgA, '/not-a-doc-id')), 400, /"doc_id" with value "not-a-doc-id" fails to match/);
  t.is(await rows(ctx, 'org_docs', { org_id: orgA }), before);
});

test.serial('409 for a taken path, a stale expected_version, and writes to a deleted document; 422 for a project of another org', async (t) => {
  const taken = await admin.post(docs(orgA), { path: '/kb/a.md', content: 'dup' });
  assertError(t, taken, 409, `org ${orgA} already has a document at /kb/a.md`);
  const id = (await admin.get(docs(orgA, '?path=/kb/a.md'))).body.data[0].id;
  assertError(t, await put(docs(orgA, `/${id}`), { content: 'x', expected_version: 7 }), 409, `document ${id} is at version 1, not the expected_version 7`);
  assertError(
    t,
    await call(ctx.srv.server, 'DELETE', docs(orgA, `/${id}?expected_version=2`), undefined, ctx.adminToken),
    409,
    /is at version 1, not the expected_version 2/,
  );
  t.is((await admin.get(docs(orgA, `/${id}`))).body.current_version, 1);
  t.is((await call(ctx.srv.server, 'DELETE', docs(orgA, `/${id}`), undefined, ctx.adminToken)).statusCode, 204);
  assertError(t, await put(docs(orgA, `/${id}`), { content: 'x' }), 409, `document ${id} is deleted`);
  assertError(t, await call(ctx.srv.server, 'DELETE', docs(orgA, `/${id}`), undefined, ctx.adminToken), 409, `document ${id} is deleted`);
  assertError(
    t,
    await admin.post(docs(orgA), { path: '/x.md', content: 'x', project_id: projB }),
    422,
    `project_id ${projB} is not a live project of org ${orgA}`,
  );
  t.is(await rows(ctx, 'org_docs', { org_id: orgA, path: '/x.md' }), 0);
});

test.serial('404 for unknown documents, versions and paths; other orgs and strangers see nothing; members read but do not write', async (t) => {
  const id = (await admin.get(docs(orgA, '?path=/kb/b.md'))).body.data[0].id;
  assertError(t, await admin.get(docs(orgA, `/${MISSING_DOC}`)), 404, `document ${MISSING_DOC} not found`);
  assertError(t, await admin.get(docs(orgA, `/${id}?version=9`)), 404, `document ${id} has no version 9 (current: 1)`);
  assertError(t, await admin.get(docs(orgA, '/by-path?path=/nothing.md')), 404, `no document at /nothing.md in org ${orgA}`);
  assertError(t, await admin.get(docs(missingOrgId)), 404, `org ${missingOrgId} not found`);
  // The document id of org A under org B's path is unknown there, even to org B's admin.
  assertError(t, await outsider.api.get(docs(orgB, `/${id}`)), 404, `document ${id} not found`);
  assertError(t, await put(docs(orgB, `/${id}`), { content: 'hijack' }, outsider.token), 404, `document ${id} not found`);
  assertError(t, await outsider.api.get(docs(orgA)), 404, `org ${orgA} not found`);
  assertError(t, await outsider.api.get(docs(orgA, `/${id}`)), 404, `org ${orgA} not found`);
  const stranger = await newUser(ctx, 'docs-stranger');
  assertError(t, await stranger.api.post(docs(orgA), { path: '/s.md', content: 's' }), 404, `org ${orgA} not found`);
  // A member reads (orgdocs:read) but cannot write (orgdocs:write is admin's).
  t.is((await member.api.get(docs(orgA, `/${id}`))).statusCode, 200);
  assertError(t, await member.api.post(docs(orgA), { path: '/m.md', content: 'm' }), 403, 'missing permission orgdocs:write');
  assertError(t, await put(docs(orgA, `/${id}`), { content: 'm' }, member.token), 403, 'missing permission orgdocs:write');
  t.is((await admin.get(docs(orgA, `/${id}`))).body.content, '/kb/b.md');
});

test.serial('content over 1 MiB is 413 and nothing is written', async (t) => {
  const big = 'x'.repeat(1024 * 1024 + 1);
  assertError(
    t,
    await admin.post(docs(orgA), { path: '/big.md', content: big }),
    413,
    `document content is ${big.length} bytes; the limit is 1048576 bytes (1 MiB) of UTF-8`,
  );
  assertError(t, await admin.post(docs(orgA), { path: '/huge.md', content: 'y'.repeat(5 * 1024 * 1024) }), 413, /^request body is larger than 4194304 bytes/);
  t.is(await rows(ctx, 'org_docs', { org_id: orgA, path: '/big.md' }), 0);
  const exact = await admin.post(docs(orgA), { path: '/exact.md', content: 'z'.repeat(1024 * 1024) });
  t.is(exact.statusCode, 201);
});
