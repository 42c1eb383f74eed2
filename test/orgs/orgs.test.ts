import test from 'ava';
import { as } from '../support/server.ts';
import { assertError, assertPage, ISO, memberOf, missingOrgId, newUser, ORG_FIELDS, ORG_ID, rows, setup, unique, type Ctx } from './helpers.ts';

let ctx: Ctx;

test.before(async () => {
  ctx = await setup();
});

test.after.always(async () => {
  await ctx?.srv.stop();
});

test('POST /orgs creates the org (201, spec shape) and the creator is its owner', async (t) => {
  const u = await newUser(ctx, 'creator');
  const res = await u.api.post('/orgs', { name: 'Acme Widgets, Inc.' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), ORG_FIELDS);
  t.regex(res.body.id, ORG_ID);
  t.is(res.body.name, 'Acme Widgets, Inc.');
  t.is(res.body.slug, 'acme-widgets-inc');
  t.false(res.body.deleted);
  t.regex(res.body.created_at, ISO);
  t.regex(res.body.updated_at, ISO);

  const members = await u.api.get(`/orgs/${res.body.id}/members`);
  t.is(members.statusCode, 200, JSON.stringify(members.body));
  t.is(members.body.data.length, 1);
  t.like(members.body.data[0], { user_id: u.id, email: u.email, role: 'owner' });
  t.like(members.body.pagination, { count: 1, total: 1, has_more: false });

  const got = await u.api.get(`/orgs/${res.body.id}`);
  t.is(got.statusCode, 200);
  t.deepEqual(got.body, res.body);
});

test('POST /orgs takes an explicit slug (lower-cased) and refuses a taken one with 409, writing nothing', async (t) => {
  const u = await newUser(ctx, 'slugger');
  const slug = unique('chosen').toLowerCase();
  const first = await u.api.post('/orgs', { name: 'Chosen One', slug: slug.toUpperCase() });
  t.is(first.statusCode, 201, JSON.stringify(first.body));
  t.is(first.body.slug, slug);

  const dup = await u.api.post('/orgs', { name: 'Chosen Two', slug });
  assertError(t, dup, 409, `org slug '${slug}' is taken`);
  t.is(await rows(ctx, 'orgs', { name: 'Chosen Two' }), 0);
  t.is(await rows(ctx, 'orgs', { slug }), 1);
});

test('POST /orgs varies a derived slug that is taken', async (t) => {
  const u = await newUser(ctx, 'twins');
  const name = `Twin ${unique('org')}`;
  const a = await u.api.post('/orgs', { name });
  const b = await u.api.post('/orgs', { name });
  t.is(a.statusCode, 201);
  t.is(b.statusCode, 201);
  t.not(a.body.slug, b.body.slug);
  t.regex(b.body.slug, new RegExp(`^${a.body.slug}-[a-z0-9]{6}$`));
});

test('POST /orgs refuses invalid slugs with 400 naming slug, writing nothing', async (t) => {
  const u = await newUser(ctx, 'badslug');
  for (const slug of ['bad slug!', '-leading', 'trailing-', 'a'.repeat(64), 'under_score', '']) {
    const name = unique('Bad Slug Org');
    const res = await u.api.post('/orgs', { name, slug });
    assertError(t, res, 400, /"slug"/);
    t.is(await rows(ctx, 'orgs', { name }), 0, slug);
  }
});

test('POST /orgs refuses unknown fields, a missing or empty name, and malformed JSON with 400, writing nothing', async (t) => {
  const u = await newUser(ctx, 'badinput');
  const name = unique('Unknown Field Org');
  assertError(t, await u.api.post('/orgs', { name, color: 'blue' }), 400, '"color" is not allowed');
  t.is(await rows(ctx, 'orgs', { name }), 0);

  assertError(t, await u.api.post('/orgs', { slug: 'nameless' }), 400, '"name" is required');
  t.is(await rows(ctx, 'orgs', { slug: 'nameless' }), 0);
  assertError(t, await u.api.post('/orgs', { name: '   ', slug: 'blankname' }), 400, /"name"/);
  t.is(await rows(ctx, 'orgs', { slug: 'blankname' }), 0);

  const raw = await ctx.srv.server.inject({
    method: 'POST',
    url: '/orgs',
    headers: { authorization: `Bearer ${u.token}`, 'content-type': 'application/json' },
    payload: '{"name": "Broken JSON Org", ',
  });
  t.is(raw.statusCode, 400);
  const body = JSON.parse(raw.payload);
  t.is(body.statusCode, 400);
  t.is(body.error, 'Bad Request');
  t.regex(body.message, /JSON/);
  t.is(await rows(ctx, 'orgs', { name: 'Broken JSON Org' }), 0);
  t.is(await rows(ctx, 'org_members', { user_id: u.id }), 0);
});

test('POST /orgs without a token is 401', async (t) => {
  const res = await as(ctx.srv.server).post('/orgs', { name: 'Anonymous Org' });
  t.is(res.statusCode, 401);
  t.is(await rows(ctx, 'orgs', { name: 'Anonymous Org' }), 0);
});

test('GET /orgs lists only the orgs the caller belongs to', async (t) => {
  const a = await newUser(ctx, 'lister-a');
  const b = await newUser(ctx, 'lister-b');
  const a1 = (await a.api.post('/orgs', { name: unique('A One') })).body;
  const a2 = (await a.api.post('/orgs', { name: unique('A Two') })).body;
  const b1 = (await b.api.post('/orgs', { name: unique('B One') })).body;

  const la = await a.api.get('/orgs');
  t.deepEqual(assertPage(t, la, { limit: 10, offset: 0, count: 2, total: 2, has_more: false }), [a2.id, a1.id]);
  t.deepEqual(la.body.data[0], a2);
  const lb = await b.api.get('/orgs');
  t.deepEqual(assertPage(t, lb, { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [b1.id]);

  // Being added to an org makes it appear; the lobby org the user was created through does not.
  const added = await ctx.srv.server.inject({
    method: 'POST',
    url: `/orgs/${b1.id}/members`,
    headers: { authorization: `Bearer ${b.token}` },
    payload: { email: a.email, role: 'member' },
  });
  t.is(added.statusCode, 201);
  const again = await a.api.get('/orgs');
  t.deepEqual(assertPage(t, again, { limit: 10, offset: 0, count: 3, total: 3, has_more: false }), [b1.id, a2.id, a1.id]);
});

test('GET /orgs/{org_id}: 200 for members, 404 for non-members and unknown ids, 400 for malformed ids', async (t) => {
  const owner = await newUser(ctx, 'get-owner');
  const outsider = await newUser(ctx, 'get-outsider');
  const org = (await owner.api.post('/orgs', { name: unique('Visible') })).body;
  const member = await memberOf(ctx, org.id, 'get-member');

  const mine = await member.api.get(`/orgs/${org.id}`);
  t.is(mine.statusCode, 200);
  t.deepEqual(mine.body, org);

  assertError(t, await outsider.api.get(`/orgs/${org.id}`), 404, `org ${org.id} not found`);
  assertError(t, await outsider.api.get(`/orgs/${missingOrgId}`), 404, `org ${missingOrgId} not found`);
  assertError(t, await owner.api.get(`/orgs/${missingOrgId}`), 404, `org ${missingOrgId} not found`);
  for (const bad of ['org_123', 'proj_01h455vb4pex5vsknk084sn02q', 'org_01H455VB4PEX5VSKNK084SN02Q', 'nope']) {
    assertError(t, await owner.api.get(`/orgs/${bad}`), 400, /"org_id"/);
  }
  // The system administrator sees every org.
  t.is((await as(ctx.srv.server, ctx.adminToken).get(`/orgs/${org.id}`)).statusCode, 200);
});

test('PATCH /orgs/{org_id} renames and changes the slug for admins; members get 403 orgs:write', async (t) => {
  const owner = await newUser(ctx, 'patch-owner');
  const org = (await owner.api.post('/orgs', { name: unique('Patchable') })).body;
  const admin = await memberOf(ctx, org.id, 'patch-admin', 'admin');
  const member = await memberOf(ctx, org.id, 'patch-member', 'member');
  const outsider = await newUser(ctx, 'patch-outsider');
  const slug = unique('renamed').toLowerCase();

  const res = await admin.api.patch(`/orgs/${org.id}`, { name: 'Renamed Org', slug });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), ORG_FIELDS);
  t.like(res.body, { id: org.id, name: 'Renamed Org', slug, deleted: false, created_at: org.created_at });
  t.true(Date.parse(res.body.updated_at) >= Date.parse(org.updated_at));

  assertError(t, await member.api.patch(`/orgs/${org.id}`, { name: 'Member Rename' }), 403, 'missing permission orgs:write');
  assertError(t, await outsider.api.patch(`/orgs/${org.id}`, { name: 'Outsider Rename' }), 404, `org ${org.id} not found`);
  t.like(await ctx.srv.kernel.db('orgs').where({ id: org.id }).first(), { name: 'Renamed Org', slug });

  const other = (await owner.api.post('/orgs', { name: unique('Other') })).body;
  assertError(t, await admin.api.patch(`/orgs/${org.id}`, { slug: other.slug }), 409, `org slug '${other.slug}' is taken`);
  assertError(t, await admin.api.patch(`/orgs/${org.id}`, {}), 400, /at least 1 key/);
  assertError(t, await admin.api.patch(`/orgs/${org.id}`, { slug: 'Not A Slug' }), 400, /"slug"/);
  assertError(t, await admin.api.patch(`/orgs/${org.id}`, { id: missingOrgId }), 400, '"id" is not allowed');
  t.like(await ctx.srv.kernel.db('orgs').where({ id: org.id }).first(), { name: 'Renamed Org', slug });
});

test('PATCH {deleted: true} soft-deletes for owners only; deleted orgs leave lists unless include_deleted=true', async (t) => {
  const owner = await newUser(ctx, 'softdel-owner');
  const keep = (await owner.api.post('/orgs', { name: unique('Keep') })).body;
  const org = (await owner.api.post('/orgs', { name: unique('Doomed') })).body;
  const admin = await memberOf(ctx, org.id, 'softdel-admin', 'admin');

  assertError(t, await admin.api.patch(`/orgs/${org.id}`, { deleted: true }), 403, 'missing permission orgs:delete');
  assertError(t, await admin.api.patch(`/orgs/${org.id}`, { name: 'sneaky', deleted: true }), 403, 'missing permission orgs:delete');
  t.like(await ctx.srv.kernel.db('orgs').where({ id: org.id }).first(), { deleted: false, deleted_at: null, name: org.name });

  const res = await owner.api.patch(`/orgs/${org.id}`, { deleted: true });
  t.is(res.statusCode, 200);
  t.like(res.body, { id: org.id, deleted: true });
  t.not((await ctx.srv.kernel.db('orgs').where({ id: org.id }).first()).deleted_at, null);

  t.deepEqual(assertPage(t, await owner.api.get('/orgs'), { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [keep.id]);
  const all = await owner.api.get('/orgs?include_deleted=true');
  t.deepEqual(assertPage(t, all, { limit: 10, offset: 0, count: 2, total: 2, has_more: false }), [org.id, keep.id]);
  t.true(all.body.data[0].deleted);

  // The owner can restore it.
  const restored = await owner.api.patch(`/orgs/${org.id}`, { deleted: false });
  t.like(restored.body, { deleted: false });
  t.is((await ctx.srv.kernel.db('orgs').where({ id: org.id }).first()).deleted_at, null);
});

test('DELETE /orgs/{org_id} soft-deletes (204) for owners; admins and members get 403 orgs:delete', async (t) => {
  const owner = await newUser(ctx, 'del-owner');
  const org = (await owner.api.post('/orgs', { name: unique('Delete Me') })).body;
  const admin = await memberOf(ctx, org.id, 'del-admin', 'admin');
  const member = await memberOf(ctx, org.id, 'del-member', 'member');

  assertError(t, await admin.api.delete(`/orgs/${org.id}`), 403, 'missing permission orgs:delete');
  assertError(t, await member.api.delete(`/orgs/${org.id}`), 403, 'missing permission orgs:delete');
  t.false((await ctx.srv.kernel.db('orgs').where({ id: org.id }).first()).deleted);

  const res = await owner.api.delete(`/orgs/${org.id}`);
  t.is(res.statusCode, 204);
  t.is(res.body, null);
  const row = await ctx.srv.kernel.db('orgs').where({ id: org.id }).first();
  t.true(row.deleted);
  t.not(row.deleted_at, null);

  t.deepEqual(assertPage(t, await member.api.get('/orgs'), { limit: 10, offset: 0, count: 0, total: 0, has_more: false }), []);
  const withDeleted = await member.api.get('/orgs?include_deleted=true');
  t.deepEqual(assertPage(t, withDeleted, { limit: 10, offset: 0, count: 1, total: 1, has_more: false }), [org.id]);
  t.true(withDeleted.body.data[0].deleted);
  // Still soft: a second DELETE is idempotent.
  t.is((await owner.api.delete(`/orgs/${org.id}`)).statusCode, 204);
});

test('POST /orgs/ensure creates (200), returns the same org for identical input, and 409s naming the differing field', async (t) => {
  const u = await newUser(ctx, 'ensurer');
  const slug = unique('ensured').toLowerCase();
  const created = await u.api.post('/orgs/ensure', { name: 'Ensured Org', slug });
  t.is(created.statusCode, 200, JSON.stringify(created.body));
  t.deepEqual(Object.keys(created.body).sort(), ORG_FIELDS);
  t.like(created.body, { name: 'Ensured Org', slug, deleted: false });
  const owners = await u.api.get(`/orgs/${created.body.id}/members`);
  t.like(owners.body.data[0], { user_id: u.id, role: 'owner' });

  const same = await u.api.post('/orgs/ensure', { name: 'Ensured Org', slug });
  t.is(same.statusCode, 200);
  t.deepEqual(same.body, created.body);

  const conflict = await u.api.post('/orgs/ensure', { name: 'Another Name', slug });
  assertError(t, conflict, 409, `org ${created.body.id} exists with different name`);
  t.is(await rows(ctx, 'orgs', { slug }), 1);
  t.is(await rows(ctx, 'orgs', { name: 'Another Name' }), 0);

  // Derived slug: the name alone finds it again.
  const byName = unique('Derived Ensure');
  const d1 = await u.api.post('/orgs/ensure', { name: byName });
  const d2 = await u.api.post('/orgs/ensure', { name: byName });
  t.is(d1.statusCode, 200);
  t.is(d2.statusCode, 200);
  t.is(d2.body.id, d1.body.id);
  t.is(d1.body.slug, byName.toLowerCase().replace(/ /g, '-'));

  // A name without letters or digits still has a stable derived slug.
  const symbols = '!!! ??? !!!';
  const s1 = await u.api.post('/orgs/ensure', { name: symbols });
  const s2 = await u.api.post('/orgs/ensure', { name: symbols });
  t.is(s1.statusCode, 200, JSON.stringify(s1.body));
  t.regex(s1.body.slug, /^org-[0-9a-f]{8}$/);
  t.is(s2.statusCode, 200);
  t.is(s2.body.id, s1.body.id);
  t.is(await rows(ctx, 'orgs', { name: symbols }), 1);
  const plain = await u.api.post('/orgs', { name: symbols });
  t.is(plain.statusCode, 201);
  t.regex(plain.body.slug, new RegExp(`^${s1.body.slug}-[a-z0-9]{6}$`));

  // The same name under another slug is that org, not a second one of the same name.
  const namesake = await u.api.post('/orgs/ensure', { name: 'Ensured Org', slug: `${slug}-two` });
  assertError(t, namesake, 409, `org ${created.body.id} is already named 'Ensured Org', with slug '${slug}': ensure it by that slug, or choose another name`);
  t.is(await rows(ctx, 'orgs', { name: 'Ensured Org' }), 1);
  // Another tenant's org of that name is invisible here, so it neither conflicts nor shows.
  const stranger = await newUser(ctx, 'ensure-stranger');
  const theirs = await stranger.api.post('/orgs/ensure', { name: 'Ensured Org', slug: `${slug}-theirs` });
  t.is(theirs.statusCode, 200, JSON.stringify(theirs.body));
  t.not(theirs.body.id, created.body.id);

  // Validation applies as on create.
  assertError(t, await u.api.post('/orgs/ensure', { name: 'x', slug: 'Bad Slug' }), 400, /"slug"/);
  assertError(t, await u.api.post('/orgs/ensure', { name: 'x', id: 'org_bad' }), 400, /"id"/);
});

test('POST /orgs/ensure by explicit id', async (t) => {
  const u = await newUser(ctx, 'ensure-id');
  const id = 'org_01jz0000000000000000000001';
  const slug = unique('by-id').toLowerCase();
  const created = await u.api.post('/orgs/ensure', { id, name: 'By Id', slug });
  t.is(created.statusCode, 200, JSON.stringify(created.body));
  t.like(created.body, { id, name: 'By Id', slug });

  const same = await u.api.post('/orgs/ensure', { id, name: 'By Id' });
  t.is(same.statusCode, 200);
  t.is(same.body.id, id);

  assertError(t, await u.api.post('/orgs/ensure', { id, name: 'Other Name' }), 409, `org ${id} exists with different name`);
  assertError(t, await u.api.post('/orgs/ensure', { id, name: 'By Id', slug: 'other-slug' }), 409, `org ${id} exists with different slug`);
  t.is(await rows(ctx, 'orgs', { id }), 1);
  t.is(await rows(ctx, 'orgs', { slug: 'other-slug' }), 0);
});

test('POST /orgs/ensure with a new id and a slug another org holds: 409 for a given slug, a varied slug for a derived one', async (t) => {
  const u = await newUser(ctx, 'ensure-id-slug');
  const slug = unique('held').toLowerCase();
  const holder = (await u.api.post('/orgs', { name: 'Holder', slug })).body;
  const id = 'org_01jz0000000000000000000002';
  assertError(t, await u.api.post('/orgs/ensure', { id, name: 'Holder', slug }), 409, `org slug '${slug}' is taken`);
  t.is(await rows(ctx, 'orgs', { id }), 0);
  t.is((await ctx.srv.kernel.db('orgs').where({ slug }).first()).id, holder.id);

  // With the id as the key and no slug given, the derived slug is varied as on create.
  const derived = unique('Derived Holder');
  const taken = (await u.api.post('/orgs', { name: derived })).body;
  const id2 = 'org_01jz0000000000000000000003';
  const res = await u.api.post('/orgs/ensure', { id: id2, name: derived });
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  t.is(res.body.id, id2);
  t.regex(res.body.slug, new RegExp(`^${taken.slug}-[a-z0-9]{6}$`));
  const again = await u.api.post('/orgs/ensure', { id: id2, name: derived });
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, res.body);
  t.is(await rows(ctx, 'orgs', { name: derived }), 2);
});

test('POST /orgs/ensure by an id the caller cannot see is 409 without revealing the org', async (t) => {
  const a = await newUser(ctx, 'ensure-id-a');
  const b = await newUser(ctx, 'ensure-id-b');
  const org = (await a.api.post('/orgs', { name: 'Hidden By Id', slug: unique('hidden').toLowerCase() })).body;
  const res = await b.api.post('/orgs/ensure', { id: org.id, name: 'Hidden By Id' });
  assertError(t, res, 409, `org ${org.id} already exists`);
  t.false(res.body.message.includes(org.slug));
  t.is(await rows(ctx, 'org_members', { user_id: b.id }), 0);
});

test('POST /orgs/ensure on a slug held by an org the caller cannot see is 409 and reveals no id', async (t) => {
  const a = await newUser(ctx, 'ensure-a');
  const b = await newUser(ctx, 'ensure-b');
  const slug = unique('private').toLowerCase();
  const org = (await a.api.post('/orgs', { name: 'Private', slug })).body;
  const res = await b.api.post('/orgs/ensure', { name: 'Private', slug });
  assertError(t, res, 409, `an org with slug '${slug}' already exists`);
  t.false(res.body.message.includes(org.id));
  t.is(await rows(ctx, 'org_members', { user_id: b.id }), 0);
});

test('POST /orgs/ensure on a soft-deleted org is 409 naming deleted', async (t) => {
  const u = await newUser(ctx, 'ensure-deleted');
  const slug = unique('gone').toLowerCase();
  const org = (await u.api.post('/orgs', { name: 'Gone', slug })).body;
  t.is((await u.api.delete(`/orgs/${org.id}`)).statusCode, 204);
  assertError(t, await u.api.post('/orgs/ensure', { name: 'Gone', slug }), 409, `org ${org.id} exists with different deleted`);
});

test('two concurrent identical ensures both answer 200 with the same id and create one row', async (t) => {
  const u = await newUser(ctx, 'ensure-race');
  for (let round = 0; round < 5; round++) {
    const slug = unique('race').toLowerCase();
    const results = await Promise.all([0, 1, 2].map(() => u.api.post('/orgs/ensure', { name: `Race ${slug}`, slug })));
    for (const r of results) t.is(r.statusCode, 200, JSON.stringify(r.body));
    t.is(new Set(results.map((r) => r.body.id)).size, 1);
    t.is(await rows(ctx, 'orgs', { slug }), 1);
    t.is(await rows(ctx, 'org_members', { org_id: results[0].body.id }), 1);

    const name = unique('Race By Name');
    const byName = await Promise.all([0, 1].map(() => u.api.post('/orgs/ensure', { name })));
    for (const r of byName) t.is(r.statusCode, 200, JSON.stringify(r.body));
    t.is(byName[0].body.id, byName[1].body.id);
    t.is(await rows(ctx, 'orgs', { name }), 1);
  }
});

test('GET /orgs paginates newest first with exact pagination values', async (t) => {
  const u = await newUser(ctx, 'pager');
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const res = await u.api.post('/orgs', { name: unique(`Page ${i}`) });
    t.is(res.statusCode, 201);
    ids.push(res.body.id);
  }
  const newestFirst = [...ids].reverse();

  const first = await u.api.get('/orgs');
  t.deepEqual(assertPage(t, first, { limit: 10, offset: 0, count: 10, total: 12, has_more: true }), newestFirst.slice(0, 10));
  const times = first.body.data.map((o: { created_at: string }) => Date.parse(o.created_at));
  t.deepEqual(
    times,
    [...times].sort((x: number, y: number) => y - x),
  );

  t.deepEqual(assertPage(t, await u.api.get('/orgs?offset=10'), { limit: 10, offset: 10, count: 2, total: 12, has_more: false }), newestFirst.slice(10));
  t.deepEqual(assertPage(t, await u.api.get('/orgs?limit=5'), { limit: 5, offset: 0, count: 5, total: 12, has_more: true }), newestFirst.slice(0, 5));
  t.deepEqual(assertPage(t, await u.api.get('/orgs?limit=5&offset=5'), { limit: 5, offset: 5, count: 5, total: 12, has_more: true }), newestFirst.slice(5, 10));
  t.deepEqual(assertPage(t, await u.api.get('/orgs?limit=5&offset=10'), { limit: 5, offset: 10, count: 2, total: 12, has_more: false }), newestFirst.slice(10));
  t.deepEqual(assertPage(t, await u.api.get('/orgs?limit=5&offset=12'), { limit: 5, offset: 12, count: 0, total: 12, has_more: false }), []);
  t.deepEqual(assertPage(t, await u.api.get('/orgs?offset=50'), { limit: 10, offset: 50, count: 0, total: 12, has_more: false }), []);
  t.deepEqual(assertPage(t, await u.api.get('/orgs?limit=100'), { limit: 100, offset: 0, count: 12, total: 12, has_more: false }), newestFirst);
});

test('GET /orgs refuses out-of-range limit and offset with 400', async (t) => {
  const u = await newUser(ctx, 'badpage');
  assertError(t, await u.api.get('/orgs?limit=0'), 400, '"limit" must be greater than or equal to 1');
  assertError(t, await u.api.get('/orgs?limit=101'), 400, '"limit" must be less than or equal to 100');
  assertError(t, await u.api.get('/orgs?offset=-1'), 400, '"offset" must be greater than or equal to 0');
  assertError(t, await u.api.get('/orgs?limit=abc'), 400, '"limit" must be a number');
  assertError(t, await u.api.get('/orgs?include_deleted=maybe'), 400, '"include_deleted" must be a boolean');
  assertError(t, await u.api.get('/orgs?sort=name'), 400, '"sort" is not allowed');
});
