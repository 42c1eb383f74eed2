import test from 'ava';
import {
  assertError,
  assertPage,
  ISO,
  memberOf,
  missingOrgId,
  missingProjectId,
  newUser,
  PROJECT_FIELDS,
  PROJECT_ID,
  rows,
  setup,
  unique,
  type Ctx,
  type User,
} from '../orgs/helpers.ts';

let ctx: Ctx;

test.before(async () => {
  ctx = await setup();
});

test.after.always(async () => {
  await ctx?.srv.stop();
});

/** An org owned by a fresh ordinary user. */
async function ownedOrg(name: string): Promise<{ owner: User; orgId: string }> {
  const owner = await newUser(ctx, `${name}-owner`);
  const res = await owner.api.post('/orgs', { name: unique(name) });
  if (res.statusCode !== 201) throw new Error(JSON.stringify(res.body));
  return { owner, orgId: res.body.id };
}

/** A fresh valid project slug (4 to 8 lower-case letters and digits). */
let slugCounter = 0;
const freshSlug = (): string => `zq${(++slugCounter).toString(36).padStart(3, '0')}`;

test('POST /projects creates a project (201, spec shape, branch defaults to main)', async (t) => {
  const { owner, orgId } = await ownedOrg('create');
  const slug = freshSlug();
  const res = await owner.api.post('/projects', { org_id: orgId, name: 'Web App', slug });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), PROJECT_FIELDS);
  t.regex(res.body.id, PROJECT_ID);
  t.like(res.body, { org_id: orgId, name: 'Web App', slug, repo_url: null, branch: 'main', deleted: false });
  t.regex(res.body.created_at, ISO);
  t.regex(res.body.updated_at, ISO);

  const got = await owner.api.get(`/projects/${res.body.id}`);
  t.is(got.statusCode, 200);
  t.deepEqual(got.body, res.body);

  const full = await owner.api.post('/projects', {
    org_id: orgId,
    name: 'Full',
    slug: freshSlug(),
    repo_url: 'https://github.com/acme/full.git',
    branch: 'release/1.x',
  });
  t.is(full.statusCode, 201, JSON.stringify(full.body));
  t.like(full.body, { repo_url: 'https://github.com/acme/full.git', branch: 'release/1.x' });
  t.like(await ctx.srv.kernel.db('projects').where({ id: full.body.id }).first(), { repo_url: 'https://github.com/acme/full.git', branch: 'release/1.x' });
});

test('GET /projects/{project_id}: 404 for unknown ids, 400 for malformed ids', async (t) => {
  const { owner } = await ownedOrg('getone');
  assertError(t, await owner.api.get(`/projects/${missingProjectId}`), 404, `project ${missingProjectId} not found`);
  for (const bad of ['proj_1', missingOrgId, 'PROJ_01H455VB4PEX5VSKNK084SN02Q']) {
    assertError(t, await owner.api.get(`/projects/${bad}`), 400, /"project_id"/);
  }
});

test('project slugs: 4 to 8 letters and digits, stored lower-case; others are 400 naming slug and write nothing', async (t) => {
  const { owner, orgId } = await ownedOrg('slugs');
  for (const slug of ['abc', 'abcdefghi', 'ab-cd', 'ab_cd', 'ab cd', '', 'äbcd']) {
    const name = unique('Bad Slug');
    assertError(t, await owner.api.post('/projects', { org_id: orgId, name, slug }), 400, /"slug"/);
    t.is(await rows(ctx, 'projects', { name }), 0, slug);
  }
  const mixed = `My${freshSlug().slice(2)}`.slice(0, 8);
  const res = await owner.api.post('/projects', { org_id: orgId, name: 'Mixed Case', slug: mixed });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.is(res.body.slug, mixed.toLowerCase());
  t.is((await ctx.srv.kernel.db('projects').where({ id: res.body.id }).first()).slug, mixed.toLowerCase());

  const four = await owner.api.post('/projects', { org_id: orgId, name: 'Four', slug: freshSlug().slice(0, 4).replace(/^./, 'f') });
  t.is(four.statusCode, 201, JSON.stringify(four.body));
});

test("'MyApp1' is accepted and stored as 'myapp1'; slugs are unique across all orgs (409)", async (t) => {
  const a = await ownedOrg('myapp-a');
  const b = await ownedOrg('myapp-b');
  const res = await a.owner.api.post('/projects', { org_id: a.orgId, name: 'My App', slug: 'MyApp1' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.is(res.body.slug, 'myapp1');
  t.is(await rows(ctx, 'projects', { slug: 'myapp1' }), 1);

  assertError(t, await b.owner.api.post('/projects', { org_id: b.orgId, name: 'Also My App', slug: 'myapp1' }), 409, "project slug 'myapp1' is taken");
  assertError(t, await a.owner.api.post('/projects', { org_id: a.orgId, name: 'Again My App', slug: 'MYAPP1' }), 409, "project slug 'myapp1' is taken");
  t.is(await rows(ctx, 'projects', { name: 'Also My App' }), 0);
  t.is(await rows(ctx, 'projects', { name: 'Again My App' }), 0);
});

test('a slug is derived from the name when omitted: letters and digits, padded to 4, varied on collision', async (t) => {
  const { owner, orgId } = await ownedOrg('derive');
  const create = (name: string) => owner.api.post('/projects', { org_id: orgId, name });

  const long = await create('Quokka Tracker Service');
  t.is(long.statusCode, 201, JSON.stringify(long.body));
  t.is(long.body.slug, 'quokkatr');

  const short = await create('Qz');
  t.is(short.statusCode, 201);
  t.regex(short.body.slug, /^qz[a-z0-9]{2}$/);

  const symbols = await create('!!! ???');
  t.is(symbols.statusCode, 201);
  t.regex(symbols.body.slug, /^[a-z0-9]{4}$/);

  const accented = await create('Çrème Brûlée');
  t.is(accented.statusCode, 201);
  t.is(accented.body.slug, 'cremebru');

  const again = await create('Quokka Tracker Service');
  t.is(again.statusCode, 201);
  t.not(again.body.slug, 'quokkatr');
  t.regex(again.body.slug, /^quokka[a-z0-9]{2}$/);

  const third = await create('Quokka Tracker');
  t.is(third.statusCode, 201);
  t.regex(third.body.slug, /^[a-z0-9]{4,8}$/);
  t.is(new Set([long.body.slug, again.body.slug, third.body.slug]).size, 3);
});

test('slugs are immutable: PATCH to another slug is 422, the same slug is 200', async (t) => {
  const { owner, orgId } = await ownedOrg('immutable');
  const slug = freshSlug();
  const p = (await owner.api.post('/projects', { org_id: orgId, name: 'Fixed', slug })).body;

  assertError(t, await owner.api.patch(`/projects/${p.id}`, { slug: freshSlug() }), 422, `"slug" is immutable (it is '${slug}')`);
  assertError(t, await owner.api.patch(`/projects/${p.id}`, { slug: freshSlug(), name: 'Renamed Too' }), 422, `"slug" is immutable (it is '${slug}')`);
  t.like(await ctx.srv.kernel.db('projects').where({ id: p.id }).first(), { slug, name: 'Fixed' });

  const same = await owner.api.patch(`/projects/${p.id}`, { slug });
  t.is(same.statusCode, 200);
  t.deepEqual(same.body, p);
  const sameUpper = await owner.api.patch(`/projects/${p.id}`, { slug: slug.toUpperCase(), name: 'Fixed Renamed' });
  t.is(sameUpper.statusCode, 200);
  t.like(sameUpper.body, { slug, name: 'Fixed Renamed' });
  assertError(t, await owner.api.patch(`/projects/${p.id}`, { slug: 'abc' }), 400, /"slug"/);
});

test('PATCH changes name, repo_url and branch; bad values are 400 and change nothing', async (t) => {
  const { owner, orgId } = await ownedOrg('patch');
  const p = (await owner.api.post('/projects', { org_id: orgId, name: 'Patch Me', slug: freshSlug(), repo_url: 'https://example.com/a/b.git' })).body;
  const res = await owner.api.patch(`/projects/${p.id}`, { name: 'Patched', repo_url: 'git@example.com:a/c.git', branch: 'develop' });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), PROJECT_FIELDS);
  t.like(res.body, {
    id: p.id,
    org_id: orgId,
    slug: p.slug,
    name: 'Patched',
    repo_url: 'git@example.com:a/c.git',
    branch: 'develop',
    created_at: p.created_at,
  });

  const cleared = await owner.api.patch(`/projects/${p.id}`, { repo_url: null });
  t.is(cleared.statusCode, 200);
  t.is(cleared.body.repo_url, null);

  assertError(t, await owner.api.patch(`/projects/${p.id}`, {}), 400, /at least 1 key/);
  assertError(t, await owner.api.patch(`/projects/${p.id}`, { repo_url: 'ftp://x' }), 400, /"repo_url"/);
  assertError(t, await owner.api.patch(`/projects/${p.id}`, { branch: 'bad..branch' }), 400, /"branch"/);
  assertError(t, await owner.api.patch(`/projects/${p.id}`, { org_id: missingOrgId }), 400, '"org_id" is not allowed');
  t.like(await ctx.srv.kernel.db('projects').where({ id: p.id }).first(), { name: 'Patched', repo_url: null, branch: 'develop', org_id: orgId });
});

test('repo_url accepts https, ssh://, scp-like and file:///; rejects other forms with 400 naming repo_url', async (t) => {
  const { owner, orgId } = await ownedOrg('repos');
  for (const repo_url of ['https://github.com/acme/app.git', 'ssh://git@github.com/acme/app.git', 'git@github.com:acme/app.git', 'file:///srv/repos/app']) {
    const res = await owner.api.post('/projects', { org_id: orgId, name: `Repo ${repo_url}`, slug: freshSlug(), repo_url });
    t.is(res.statusCode, 201, `${repo_url}: ${JSON.stringify(res.body)}`);
    t.is(res.body.repo_url, repo_url);
  }
  for (const repo_url of [
    'ftp://x',
    'file:///',
    'file://relative',
    'file://relative/path',
    'http://github.com/acme/app',
    'https://',
    'github.com/acme/app',
    'not a url',
  ]) {
    const name = unique('Bad Repo');
    assertError(t, await owner.api.post('/projects', { org_id: orgId, name, repo_url }), 400, /"repo_url"/);
    t.is(await rows(ctx, 'projects', { name }), 0, repo_url);
  }
});

test('POST /projects input errors: 400 with the field named, nothing written', async (t) => {
  const { owner, orgId } = await ownedOrg('badproj');
  const name = unique('Invalid Project');
  assertError(t, await owner.api.post('/projects', { name }), 400, '"org_id" is required');
  assertError(t, await owner.api.post('/projects', { org_id: orgId }), 400, '"name" is required');
  assertError(t, await owner.api.post('/projects', { org_id: 'org_nope', name }), 400, /"org_id"/);
  assertError(t, await owner.api.post('/projects', { org_id: orgId, name, visibility: 'public' }), 400, '"visibility" is not allowed');
  assertError(t, await owner.api.post('/projects', { org_id: orgId, name, branch: '/leading' }), 400, /"branch"/);
  assertError(t, await owner.api.post('/projects', { org_id: orgId, name, deleted: true }), 400, '"deleted" is not allowed');
  const raw = await ctx.srv.server.inject({
    method: 'POST',
    url: '/projects',
    headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
    payload: `{"org_id": "${orgId}", "name": "${name}"`,
  });
  t.is(raw.statusCode, 400);
  t.regex(JSON.parse(raw.payload).message, /JSON/);
  t.is(await rows(ctx, 'projects', { org_id: orgId }), 0);
});

test('who may create: a member gets 403 projects:create, an outsider 404, an admin 201', async (t) => {
  const { orgId } = await ownedOrg('perm');
  const member = await memberOf(ctx, orgId, 'perm-member', 'member');
  const admin = await memberOf(ctx, orgId, 'perm-admin', 'admin');
  const outsider = await newUser(ctx, 'perm-outsider');
  const name = unique('Perm Project');

  assertError(t, await member.api.post('/projects', { org_id: orgId, name }), 403, 'missing permission projects:create');
  assertError(t, await member.api.post('/projects/ensure', { org_id: orgId, name }), 403, 'missing permission projects:create');
  assertError(t, await outsider.api.post('/projects', { org_id: orgId, name }), 404, `org ${orgId} not found`);
  assertError(t, await outsider.api.post('/projects/ensure', { org_id: orgId, name }), 404, `org ${orgId} not found`);
  assertError(t, await outsider.api.post('/projects', { org_id: missingOrgId, name }), 404, `org ${missingOrgId} not found`);
  t.is(await rows(ctx, 'projects', { name }), 0);

  const created = await admin.api.post('/projects', { org_id: orgId, name });
  t.is(created.statusCode, 201);

  const p = created.body;
  assertError(t, await member.api.patch(`/projects/${p.id}`, { name: 'member rename' }), 403, 'missing permission projects:write');
  assertError(t, await member.api.delete(`/projects/${p.id}`), 403, 'missing permission projects:delete');
  assertError(t, await member.api.patch(`/projects/${p.id}`, { deleted: true }), 403, 'missing permission projects:write');
  t.like(await ctx.srv.kernel.db('projects').where({ id: p.id }).first(), { name, deleted: false });
  t.is((await member.api.get(`/projects/${p.id}`)).statusCode, 200);
});

test('soft delete via PATCH {deleted: true} and DELETE; include_deleted=true shows them', async (t) => {
  const { owner, orgId } = await ownedOrg('softdel');
  const admin = await memberOf(ctx, orgId, 'softdel-admin', 'admin');
  const keep = (await owner.api.post('/projects', { org_id: orgId, name: 'Keep', slug: freshSlug() })).body;
  const viaPatch = (await owner.api.post('/projects', { org_id: orgId, name: 'Via Patch', slug: freshSlug() })).body;
  const viaDelete = (await owner.api.post('/projects', { org_id: orgId, name: 'Via Delete', slug: freshSlug() })).body;

  const patched = await admin.api.patch(`/projects/${viaPatch.id}`, { deleted: true });
  t.is(patched.statusCode, 200);
  t.like(patched.body, { id: viaPatch.id, deleted: true });
  const del = await admin.api.delete(`/projects/${viaDelete.id}`);
  t.is(del.statusCode, 204);
  t.is(del.body, null);
  for (const id of [viaPatch.id, viaDelete.id]) {
    const row = await ctx.srv.kernel.db('projects').where({ id }).first();
    t.true(row.deleted);
    t.not(row.deleted_at, null);
  }

  t.deepEqual(assertPage(t, await owner.api.get(`/projects?org_id=${orgId}`), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [keep.id]);
  const all = await owner.api.get(`/projects?org_id=${orgId}&include_deleted=true`);
  t.deepEqual(assertPage(t, all, { limit: 10, offset: 0, count: 3, total: 3, has_more: false }), [viaDelete.id, viaPatch.id, keep.id]);
  t.deepEqual(
    all.body.data.map((p: { deleted: boolean }) => p.deleted),
    [true, true, false],
  );

  const restored = await owner.api.patch(`/projects/${viaPatch.id}`, { deleted: false });
  t.is(restored.body.deleted, false);
  t.is((await ctx.srv.kernel.db('projects').where({ id: viaPatch.id }).first()).deleted_at, null);
});

test('GET /projects?org_id= filters by org', async (t) => {
  const { owner, orgId } = await ownedOrg('filter-a');
  const second = (await owner.api.post('/orgs', { name: unique('filter-b') })).body.id;
  const a1 = (await owner.api.post('/projects', { org_id: orgId, name: 'A1', slug: freshSlug() })).body;
  const b1 = (await owner.api.post('/projects', { org_id: second, name: 'B1', slug: freshSlug() })).body;
  const a2 = (await owner.api.post('/projects', { org_id: orgId, name: 'A2', slug: freshSlug() })).body;

  t.deepEqual(assertPage(t, await owner.api.get('/projects'), { limit: 10, offset: 0, count: 3, total: 3, has_more: false }), [a2.id, b1.id, a1.id]);
  t.deepEqual(assertPage(t, await owner.api.get(`/projects?org_id=${orgId}`), { limit: 10, offset: 0, count: 2, total: 2, has_more: false }), [a2.id, a1.id]);
  t.deepEqual(assertPage(t, await owner.api.get(`/projects?org_id=${second}`), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [b1.id]);
  t.deepEqual(assertPage(t, await owner.api.get(`/projects?org_id=${missingOrgId}`), { limit: 10, offset: 0, count: 0, total: 0, has_more: false }), []);
  assertError(t, await owner.api.get('/projects?org_id=acme'), 400, /"org_id"/);
});

test('GET /projects paginates newest first with exact pagination values', async (t) => {
  const { owner, orgId } = await ownedOrg('pages');
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const res = await owner.api.post('/projects', { org_id: orgId, name: `Paged ${i}`, slug: freshSlug() });
    t.is(res.statusCode, 201, JSON.stringify(res.body));
    ids.push(res.body.id);
  }
  const newestFirst = [...ids].reverse();
  const first = await owner.api.get('/projects');
  t.deepEqual(assertPage(t, first, { limit: 10, offset: 0, count: 10, total: 12, has_more: true }), newestFirst.slice(0, 10));
  const times = first.body.data.map((p: { created_at: string }) => Date.parse(p.created_at));
  t.deepEqual(
    times,
    [...times].sort((x: number, y: number) => y - x),
  );
  t.deepEqual(
    assertPage(t, await owner.api.get('/projects?offset=10'), { limit: 10, offset: 10, count: 2, total: 12, has_more: false }),
    newestFirst.slice(10),
  );
  t.deepEqual(assertPage(t, await owner.api.get('/projects?limit=5'), { limit: 5, offset: 0, count: 5, total: 12, has_more: true }), newestFirst.slice(0, 5));
  t.deepEqual(
    assertPage(t, await owner.api.get('/projects?limit=5&offset=5'), { limit: 5, offset: 5, count: 5, total: 12, has_more: true }),
    newestFirst.slice(5, 10),
  );
  t.deepEqual(
    assertPage(t, await owner.api.get('/projects?limit=5&offset=10'), { limit: 5, offset: 10, count: 2, total: 12, has_more: false }),
    newestFirst.slice(10),
  );
  t.deepEqual(
    assertPage(t, await owner.api.get(`/projects?limit=5&offset=15&org_id=${orgId}`), { limit: 5, offset: 15, count: 0, total: 12, has_more: false }),
    [],
  );
  assertError(t, await owner.api.get('/projects?limit=0'), 400, '"limit" must be greater than or equal to 1');
  assertError(t, await owner.api.get('/projects?limit=101'), 400, '"limit" must be less than or equal to 100');
  assertError(t, await owner.api.get('/projects?offset=-1'), 400, '"offset" must be greater than or equal to 0');
});

test('POST /projects/ensure by slug: creates (200), identical is 200, conflicting is 409 naming the field', async (t) => {
  const { owner, orgId } = await ownedOrg('ensure-slug');
  const slug = freshSlug();
  const input = { org_id: orgId, name: 'Ensured', slug, repo_url: 'https://example.com/e.git' };
  const created = await owner.api.post('/projects/ensure', input);
  t.is(created.statusCode, 200, JSON.stringify(created.body));
  t.deepEqual(Object.keys(created.body).sort(), PROJECT_FIELDS);
  t.like(created.body, { org_id: orgId, name: 'Ensured', slug, branch: 'main', repo_url: 'https://example.com/e.git' });

  const same = await owner.api.post('/projects/ensure', input);
  t.is(same.statusCode, 200);
  t.deepEqual(same.body, created.body);
  const subset = await owner.api.post('/projects/ensure', { org_id: orgId, name: 'Ensured', slug: slug.toUpperCase() });
  t.is(subset.statusCode, 200);
  t.is(subset.body.id, created.body.id);

  assertError(t, await owner.api.post('/projects/ensure', { ...input, name: 'Other' }), 409, `project ${created.body.id} exists with different name`);
  assertError(t, await owner.api.post('/projects/ensure', { ...input, branch: 'dev' }), 409, `project ${created.body.id} exists with different branch`);
  assertError(t, await owner.api.post('/projects/ensure', { ...input, repo_url: null }), 409, `project ${created.body.id} exists with different repo_url`);
  const otherOrg = (await owner.api.post('/orgs', { name: unique('ensure-other') })).body.id;
  assertError(t, await owner.api.post('/projects/ensure', { ...input, org_id: otherOrg }), 409, `project ${created.body.id} exists with different org_id`);
  t.is(await rows(ctx, 'projects', { slug }), 1);
  t.is(await rows(ctx, 'projects', { org_id: otherOrg }), 0);
});

test('POST /projects/ensure by name within the org and by id', async (t) => {
  const { owner, orgId } = await ownedOrg('ensure-name');
  const name = unique('Named Project');
  const created = await owner.api.post('/projects/ensure', { org_id: orgId, name });
  t.is(created.statusCode, 200, JSON.stringify(created.body));
  t.regex(created.body.slug, /^[a-z0-9]{4,8}$/);
  const same = await owner.api.post('/projects/ensure', { org_id: orgId, name });
  t.is(same.statusCode, 200);
  t.deepEqual(same.body, created.body);
  assertError(
    t,
    await owner.api.post('/projects/ensure', { org_id: orgId, name, branch: 'dev' }),
    409,
    `project ${created.body.id} exists with different branch`,
  );
  t.is(await rows(ctx, 'projects', { name }), 1);

  // The same name in another org is another project.
  const otherOrg = (await owner.api.post('/orgs', { name: unique('ensure-name-2') })).body.id;
  const other = await owner.api.post('/projects/ensure', { org_id: otherOrg, name });
  t.is(other.statusCode, 200);
  t.not(other.body.id, created.body.id);

  const id = 'proj_01jz0000000000000000000001';
  const byId = await owner.api.post('/projects/ensure', { id, org_id: orgId, name: 'By Id', slug: freshSlug() });
  t.is(byId.statusCode, 200, JSON.stringify(byId.body));
  t.is(byId.body.id, id);
  const again = await owner.api.post('/projects/ensure', { id, org_id: orgId, name: 'By Id' });
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, byId.body);
  assertError(t, await owner.api.post('/projects/ensure', { id, org_id: orgId, name: 'Not By Id' }), 409, `project ${id} exists with different name`);
  assertError(t, await owner.api.post('/projects/ensure', { id: 'proj_x', org_id: orgId, name: 'x' }), 400, /"id"/);
  t.is(await rows(ctx, 'projects', { id }), 1);
});

test('POST /projects/ensure conflicts: a slug or id in an org the caller cannot see (nothing revealed), a deleted project', async (t) => {
  const a = await ownedOrg('ensure-hidden-a');
  const b = await ownedOrg('ensure-hidden-b');
  const slug = freshSlug();
  const hidden = (await a.owner.api.post('/projects', { org_id: a.orgId, name: 'Hidden', slug })).body;
  const res = await b.owner.api.post('/projects/ensure', { org_id: b.orgId, name: 'Hidden', slug });
  assertError(t, res, 409, `a project with slug '${slug}' already exists`);
  t.false(res.body.message.includes(hidden.id));
  t.false(res.body.message.includes(a.orgId));
  t.is(await rows(ctx, 'projects', { org_id: b.orgId }), 0);

  // By id: the message names only the id the caller sent.
  const byId = await b.owner.api.post('/projects/ensure', { id: hidden.id, org_id: b.orgId, name: 'Hidden' });
  assertError(t, byId, 409, `project ${hidden.id} already exists`);
  t.false(byId.body.message.includes(slug));
  t.is(await rows(ctx, 'projects', { org_id: b.orgId }), 0);

  const goneSlug = freshSlug();
  const gone = (await a.owner.api.post('/projects', { org_id: a.orgId, name: 'Gone', slug: goneSlug })).body;
  t.is((await a.owner.api.delete(`/projects/${gone.id}`)).statusCode, 204);
  assertError(
    t,
    await a.owner.api.post('/projects/ensure', { org_id: a.orgId, name: 'Gone', slug: goneSlug }),
    409,
    `project ${gone.id} exists with different deleted`,
  );
});

test('concurrent identical ensures answer 200 with one id and create one row (by slug, by name, by id)', async (t) => {
  const { owner, orgId } = await ownedOrg('ensure-race');
  for (let round = 0; round < 4; round++) {
    const slug = freshSlug();
    const bySlug = await Promise.all([0, 1, 2].map(() => owner.api.post('/projects/ensure', { org_id: orgId, name: `Race ${round}`, slug })));
    for (const r of bySlug) t.is(r.statusCode, 200, JSON.stringify(r.body));
    t.is(new Set(bySlug.map((r) => r.body.id)).size, 1);
    t.is(await rows(ctx, 'projects', { slug }), 1);

    for (const name of [unique('Race By Name'), `R${round}`]) {
      const byName = await Promise.all([0, 1, 2].map(() => owner.api.post('/projects/ensure', { org_id: orgId, name })));
      for (const r of byName) t.is(r.statusCode, 200, JSON.stringify(r.body));
      t.is(new Set(byName.map((r) => r.body.id)).size, 1, name);
      t.is(await rows(ctx, 'projects', { org_id: orgId, name }), 1, name);
    }

    const id = `proj_01jy${String(round).padStart(22, '0')}`;
    const byId = await Promise.all([0, 1].map(() => owner.api.post('/projects/ensure', { id, org_id: orgId, name: `Race Id ${round}` })));
    for (const r of byId) t.is(r.statusCode, 200, JSON.stringify(r.body));
    t.is(await rows(ctx, 'projects', { id }), 1);
  }
});

test('a deleted org takes no new projects (422), and its projects leave the lists until include_deleted=true', async (t) => {
  const { owner, orgId } = await ownedOrg('deleted-org');
  const project = await owner.api.post('/projects', { org_id: orgId, name: 'Before', slug: freshSlug() });
  t.is(project.statusCode, 201);
  t.is((await owner.api.delete(`/orgs/${orgId}`)).statusCode, 204);
  const before = await rows(ctx, 'projects', { org_id: orgId });
  assertError(
    t,
    await owner.api.post('/projects', { org_id: orgId, name: 'After', slug: freshSlug() }),
    422,
    `org ${orgId} is deleted; restore it before adding projects`,
  );
  t.is(await rows(ctx, 'projects', { org_id: orgId }), before);
  const listed = await owner.api.get(`/projects?org_id=${orgId}`);
  t.deepEqual(listed.body.data, []);
  const all = await owner.api.get(`/projects?org_id=${orgId}&include_deleted=true`);
  t.deepEqual(
    all.body.data.map((p: { id: string }) => p.id),
    [project.body.id],
  );
});
