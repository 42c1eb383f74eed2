import test from 'ava';
import { assertError, assertPage, ISO, MEMBER_FIELDS, memberOf, missingUserId, newUser, rows, setup, unique, type Ctx, type User } from './helpers.ts';

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

const roleIn = async (orgId: string, userId: string): Promise<string | undefined> =>
  (await ctx.srv.kernel.db('org_members').where({ org_id: orgId, user_id: userId }).first('role'))?.role;

test('adding a member by e-mail creates the user (201), again is 200, another role is 409', async (t) => {
  const { owner, orgId } = await ownedOrg('add');
  const email = `${unique('newcomer')}@example.com`.toLowerCase();
  t.is(await rows(ctx, 'users', { email }), 0);

  const res = await owner.api.post(`/orgs/${orgId}/members`, { email, role: 'admin' });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(Object.keys(res.body).sort(), MEMBER_FIELDS);
  t.like(res.body, { email, role: 'admin', display_name: null });
  t.regex(res.body.user_id, /^usr_/);
  t.regex(res.body.created_at, ISO);
  t.is(await rows(ctx, 'users', { email }), 1);
  t.is(await roleIn(orgId, res.body.user_id), 'admin');

  const again = await owner.api.post(`/orgs/${orgId}/members`, { email: email.toUpperCase(), role: 'admin' });
  t.is(again.statusCode, 200);
  t.deepEqual(again.body, res.body);

  const other = await owner.api.post(`/orgs/${orgId}/members`, { email, role: 'member' });
  assertError(t, other, 409, `${email} is already a member with role admin; change it with PATCH .../members/${res.body.user_id}`);
  t.is(await roleIn(orgId, res.body.user_id), 'admin');
  t.is(await rows(ctx, 'users', { email }), 1);

  // The role defaults to member; an existing user is reused.
  const plain = await owner.api.post(`/orgs/${orgId}/members`, { email: `${unique('plain')}@example.com` });
  t.is(plain.statusCode, 201);
  t.is(plain.body.role, 'member');

  const list = await owner.api.get(`/orgs/${orgId}/members`);
  t.deepEqual(assertPage(t, list, { limit: 10, offset: 0, count: 3, total: 3, has_more: false }, 'user_id'), [plain.body.user_id, res.body.user_id, owner.id]);
});

test('adding a member refuses bad input with 400 and writes nothing', async (t) => {
  const { owner, orgId } = await ownedOrg('badadd');
  const email = `${unique('bad')}@example.com`.toLowerCase();
  assertError(t, await owner.api.post(`/orgs/${orgId}/members`, { email: 'not-an-email' }), 400, '"email" must be a valid email');
  assertError(t, await owner.api.post(`/orgs/${orgId}/members`, { email, role: 'god' }), 400, '"role" must be one of [owner, admin, member]');
  assertError(t, await owner.api.post(`/orgs/${orgId}/members`, { email, role: 'member', team: 'x' }), 400, '"team" is not allowed');
  assertError(t, await owner.api.post(`/orgs/${orgId}/members`, { role: 'member' }), 400, '"email" is required');
  assertError(t, await owner.api.post('/orgs/org_bad/members', { email }), 400, /"org_id"/);
  t.is(await rows(ctx, 'users', { email }), 0);
  t.is(await rows(ctx, 'org_members', { org_id: orgId }), 1);
});

test('PATCH changes a role, DELETE removes (204), unknown members are 404', async (t) => {
  const { owner, orgId } = await ownedOrg('patch');
  const admin = await memberOf(ctx, orgId, 'patch-admin', 'admin');
  const member = await memberOf(ctx, orgId, 'patch-member', 'member');

  const promoted = await admin.api.patch(`/orgs/${orgId}/members/${member.id}`, { role: 'admin' });
  t.is(promoted.statusCode, 200, JSON.stringify(promoted.body));
  t.deepEqual(Object.keys(promoted.body).sort(), MEMBER_FIELDS);
  t.like(promoted.body, { user_id: member.id, email: member.email, role: 'admin' });
  t.is(await roleIn(orgId, member.id), 'admin');

  const same = await admin.api.patch(`/orgs/${orgId}/members/${member.id}`, { role: 'admin' });
  t.is(same.statusCode, 200);
  t.is(same.body.role, 'admin');

  assertError(t, await admin.api.patch(`/orgs/${orgId}/members/${member.id}`, { role: 'boss' }), 400, '"role" must be one of [owner, admin, member]');
  assertError(t, await admin.api.patch(`/orgs/${orgId}/members/${member.id}`, {}), 400, '"role" is required');
  assertError(t, await admin.api.patch(`/orgs/${orgId}/members/usr_bad`, { role: 'member' }), 400, /"user_id"/);
  assertError(t, await admin.api.patch(`/orgs/${orgId}/members/${missingUserId}`, { role: 'member' }), 404, `user ${missingUserId} is not a member`);
  assertError(t, await admin.api.delete(`/orgs/${orgId}/members/${missingUserId}`), 404, `user ${missingUserId} is not a member`);
  // A real user who is not a member of this org.
  const stranger = await newUser(ctx, 'stranger');
  assertError(t, await admin.api.delete(`/orgs/${orgId}/members/${stranger.id}`), 404, `user ${stranger.id} is not a member`);

  const removed = await admin.api.delete(`/orgs/${orgId}/members/${member.id}`);
  t.is(removed.statusCode, 204);
  t.is(removed.body, null);
  t.is(await roleIn(orgId, member.id), undefined);
  t.is(await rows(ctx, 'users', { id: member.id }), 1, 'the account stays');
  assertError(t, await admin.api.delete(`/orgs/${orgId}/members/${member.id}`), 404, `user ${member.id} is not a member`);
  t.is((await owner.api.get(`/orgs/${orgId}/members`)).body.pagination.total, 2);
});

test('the last owner cannot be removed or demoted (422); a second owner makes it possible', async (t) => {
  const { owner, orgId } = await ownedOrg('lastowner');
  assertError(t, await owner.api.delete(`/orgs/${orgId}/members/${owner.id}`), 422, 'the org must keep at least one owner');
  assertError(t, await owner.api.patch(`/orgs/${orgId}/members/${owner.id}`, { role: 'admin' }), 422, 'the org must keep at least one owner');
  t.is(await roleIn(orgId, owner.id), 'owner');

  const second = await owner.api.post(`/orgs/${orgId}/members`, { email: `${unique('second')}@example.com`, role: 'owner' });
  t.is(second.statusCode, 201);
  const demoted = await owner.api.patch(`/orgs/${orgId}/members/${second.body.user_id}`, { role: 'member' });
  t.is(demoted.statusCode, 200);
  t.is(demoted.body.role, 'member');
  assertError(t, await owner.api.patch(`/orgs/${orgId}/members/${owner.id}`, { role: 'member' }), 422, 'the org must keep at least one owner');

  t.is((await owner.api.patch(`/orgs/${orgId}/members/${second.body.user_id}`, { role: 'owner' })).statusCode, 200);
  const self = await owner.api.delete(`/orgs/${orgId}/members/${owner.id}`);
  t.is(self.statusCode, 204);
  t.is(await roleIn(orgId, owner.id), undefined);
  t.is(await rows(ctx, 'org_members', { org_id: orgId, role: 'owner' }), 1);
});

test('concurrent removal of the two owners leaves one', async (t) => {
  const { owner, orgId } = await ownedOrg('race');
  const second = await memberOf(ctx, orgId, 'race-second', 'owner');
  const results = await Promise.all([owner.api.delete(`/orgs/${orgId}/members/${owner.id}`), second.api.delete(`/orgs/${orgId}/members/${second.id}`)]);
  t.deepEqual(results.map((r) => r.statusCode).sort(), [204, 422]);
  t.is(await rows(ctx, 'org_members', { org_id: orgId, role: 'owner' }), 1);
});

test('an admin cannot grant, take or remove the owner role (403) and nothing changes', async (t) => {
  const { owner, orgId } = await ownedOrg('adminlimits');
  const admin = await memberOf(ctx, orgId, 'limited-admin', 'admin');
  const member = await memberOf(ctx, orgId, 'limited-member', 'member');
  const email = `${unique('would-be-owner')}@example.com`.toLowerCase();

  assertError(t, await admin.api.post(`/orgs/${orgId}/members`, { email, role: 'owner' }), 403, 'only an owner can grant the owner role');
  t.is(await rows(ctx, 'users', { email }), 0);
  assertError(t, await admin.api.patch(`/orgs/${orgId}/members/${member.id}`, { role: 'owner' }), 403, 'only an owner can grant or revoke the owner role');
  assertError(t, await admin.api.patch(`/orgs/${orgId}/members/${admin.id}`, { role: 'owner' }), 403, 'only an owner can grant or revoke the owner role');
  assertError(t, await admin.api.patch(`/orgs/${orgId}/members/${owner.id}`, { role: 'member' }), 403, 'only an owner can grant or revoke the owner role');
  assertError(t, await admin.api.delete(`/orgs/${orgId}/members/${owner.id}`), 403, 'only an owner can remove an owner');
  t.is(await roleIn(orgId, owner.id), 'owner');
  t.is(await roleIn(orgId, member.id), 'member');
  t.is(await roleIn(orgId, admin.id), 'admin');

  // What an admin may do: add admins and members, and change non-owner roles.
  t.is((await admin.api.post(`/orgs/${orgId}/members`, { email, role: 'admin' })).statusCode, 201);
  t.is((await admin.api.patch(`/orgs/${orgId}/members/${member.id}`, { role: 'admin' })).statusCode, 200);
});

test('a member can list members but not add, change or remove them (403 members:write)', async (t) => {
  const { owner, orgId } = await ownedOrg('memberlimits');
  const member = await memberOf(ctx, orgId, 'plain-member', 'member');
  const email = `${unique('by-member')}@example.com`.toLowerCase();

  const list = await member.api.get(`/orgs/${orgId}/members`);
  t.is(list.statusCode, 200);
  t.is(list.body.pagination.total, 2);

  assertError(t, await member.api.post(`/orgs/${orgId}/members`, { email }), 403, 'missing permission members:write');
  assertError(t, await member.api.patch(`/orgs/${orgId}/members/${member.id}`, { role: 'admin' }), 403, 'missing permission members:write');
  assertError(t, await member.api.delete(`/orgs/${orgId}/members/${owner.id}`), 403, 'missing permission members:write');
  t.is(await rows(ctx, 'users', { email }), 0);
  t.is(await roleIn(orgId, member.id), 'member');
  t.is(await roleIn(orgId, owner.id), 'owner');
});

test('non-members get 404 on every member route', async (t) => {
  const { owner, orgId } = await ownedOrg('hidden');
  const outsider = await newUser(ctx, 'member-outsider');
  const email = `${unique('by-outsider')}@example.com`.toLowerCase();
  const nf = `org ${orgId} not found`;
  assertError(t, await outsider.api.get(`/orgs/${orgId}/members`), 404, nf);
  assertError(t, await outsider.api.post(`/orgs/${orgId}/members`, { email }), 404, nf);
  assertError(t, await outsider.api.patch(`/orgs/${orgId}/members/${owner.id}`, { role: 'member' }), 404, nf);
  assertError(t, await outsider.api.delete(`/orgs/${orgId}/members/${owner.id}`), 404, nf);
  t.is(await rows(ctx, 'users', { email }), 0);
  t.is(await roleIn(orgId, owner.id), 'owner');
});

test('removing a member takes effect at once: their token gets 404 right after', async (t) => {
  const { owner, orgId } = await ownedOrg('revoke');
  const member = await memberOf(ctx, orgId, 'revoked', 'admin');
  t.is((await member.api.get(`/orgs/${orgId}`)).statusCode, 200);
  t.is((await member.api.get('/orgs')).body.pagination.total, 1);

  t.is((await owner.api.delete(`/orgs/${orgId}/members/${member.id}`)).statusCode, 204);
  assertError(t, await member.api.get(`/orgs/${orgId}`), 404, `org ${orgId} not found`);
  assertError(t, await member.api.get(`/orgs/${orgId}/members`), 404, `org ${orgId} not found`);
  assertError(t, await member.api.patch(`/orgs/${orgId}`, { name: 'still here?' }), 404, `org ${orgId} not found`);
  t.deepEqual(assertPage(t, await member.api.get('/orgs'), { limit: 10, offset: 0, count: 0, total: 0, has_more: false }), []);

  // Demotion is immediate too.
  const admin = await memberOf(ctx, orgId, 'demoted', 'admin');
  t.is((await admin.api.patch(`/orgs/${orgId}`, { name: 'by admin' })).statusCode, 200);
  t.is((await owner.api.patch(`/orgs/${orgId}/members/${admin.id}`, { role: 'member' })).statusCode, 200);
  assertError(t, await admin.api.patch(`/orgs/${orgId}`, { name: 'by member' }), 403, 'missing permission orgs:write');
});

test('members list paginates newest first', async (t) => {
  const { owner, orgId } = await ownedOrg('pages');
  const ids = [owner.id];
  for (let i = 0; i < 11; i++) {
    const res = await owner.api.post(`/orgs/${orgId}/members`, { email: `${unique(`page${i}`)}@example.com` });
    t.is(res.statusCode, 201);
    ids.push(res.body.user_id);
  }
  const newestFirst = [...ids].reverse();
  t.deepEqual(
    assertPage(t, await owner.api.get(`/orgs/${orgId}/members`), { limit: 10, offset: 0, count: 10, total: 12, has_more: true }, 'user_id'),
    newestFirst.slice(0, 10),
  );
  t.deepEqual(
    assertPage(t, await owner.api.get(`/orgs/${orgId}/members?limit=5&offset=5`), { limit: 5, offset: 5, count: 5, total: 12, has_more: true }, 'user_id'),
    newestFirst.slice(5, 10),
  );
  t.deepEqual(
    assertPage(t, await owner.api.get(`/orgs/${orgId}/members?limit=5&offset=10`), { limit: 5, offset: 10, count: 2, total: 12, has_more: false }, 'user_id'),
    newestFirst.slice(10),
  );
  t.deepEqual(
    assertPage(t, await owner.api.get(`/orgs/${orgId}/members?offset=12`), { limit: 10, offset: 12, count: 0, total: 12, has_more: false }, 'user_id'),
    [],
  );
  assertError(t, await owner.api.get(`/orgs/${orgId}/members?limit=0`), 400, '"limit" must be greater than or equal to 1');
  assertError(t, await owner.api.get(`/orgs/${orgId}/members?limit=101`), 400, '"limit" must be less than or equal to 100');
  assertError(t, await owner.api.get(`/orgs/${orgId}/members?offset=-1`), 400, '"offset" must be greater than or equal to 0');
});
