import test from 'ava';
import { Writable } from 'node:stream';
import { createLogger } from '../../core/logger.ts';
import { memberOf, type User } from '../orgs/helpers.ts';
import { SECRET, subscribe, webhookWorld, type WebhookWorld } from './helpers.ts';

const lines: string[] = [];
const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(...String(chunk).split('\n').filter(Boolean)), done()) });

let w: WebhookWorld;
let member: User;
test.before(async () => {
  w = await webhookWorld('whsub', { logger: createLogger('debug', sink) });
  member = await memberOf(w.ctx, w.orgA, 'whsub-member');
});
test.after.always(() => w?.srv.stop());

const WH_ID = /^wh_[0-7][0-9a-hjkmnp-tv-z]{25}$/;
const URL_ = 'http://127.0.0.1:9/hook';
const base = () => `/orgs/${w.orgA}/webhooks`;
const count = async () => Number((await w.db('webhook_subscriptions').count({ n: '*' }).first())!.n);

test.serial('create answers 201 with the subscription and never the secret, which is sealed at rest', async (t) => {
  const res = await w.owner.api.post(base(), { url: URL_, events: ['system.job.*', 'job.failed'], filter: { agent: 'coder*' }, secret: SECRET });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.regex(res.body.id, WH_ID);
  t.like(res.body, { org_id: w.orgA, project_id: null, url: URL_, enabled: true, consecutive_failures: 0, disabled_at: null, deleted_at: null });
  t.deepEqual(res.body.events, ['system.job.*', 'job.failed']);
  t.deepEqual(res.body.filter, { agent: 'coder*' });
  t.false('secret' in res.body);
  t.false('secret_enc' in res.body);
  const row = await w.db('webhook_subscriptions').where({ id: res.body.id }).first();
  t.regex(row.secret_enc, /^v1:/);
  t.false(row.secret_enc.includes(SECRET));
  for (const path of [`${base()}/${res.body.id}`, base()]) {
    const read = await w.owner.api.get(path);
    t.false(JSON.stringify(read.body).includes(SECRET), path);
    t.false(JSON.stringify(read.body).includes('secret'), path);
  }
  t.false(lines.join('\n').includes(SECRET), 'the secret is never logged');
  t.true(
    lines.some((l) => l.includes('/webhooks')),
    'the requests were logged',
  );
});

test.serial('a project-scoped subscription belongs to the project and its org', async (t) => {
  const res = await w.owner.api.post(`/projects/${w.projectA2}/webhooks`, { url: URL_, events: ['*'], secret: SECRET, filter: { project_id: w.projectA2 } });
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.like(res.body, { org_id: w.orgA, project_id: w.projectA2 });
  const listed = await w.owner.api.get(`${base()}?project_id=${w.projectA2}`);
  t.deepEqual(
    listed.body.data.map((s: any) => s.id),
    [res.body.id],
  );
  t.is((await w.owner.api.get(`${base()}/${res.body.id}`)).statusCode, 200);
});

test.serial('list pages newest first, filters, and shows deleted ones only when asked', async (t) => {
  const a = await subscribe(w, { url: URL_ });
  const b = await subscribe(w, { url: URL_, enabled: false });
  const page = await w.owner.api.get(`${base()}?limit=2`);
  t.is(page.statusCode, 200);
  t.deepEqual(
    page.body.data.map((s: any) => s.id),
    [b.id, a.id],
  );
  t.like(page.body.pagination, { limit: 2, offset: 0, count: 2, has_more: true });
  t.deepEqual(
    (await w.owner.api.get(`${base()}?enabled=false`)).body.data.map((s: any) => s.id),
    [b.id],
  );

  t.is((await w.owner.api.delete(`${base()}/${b.id}`)).statusCode, 204);
  t.false((await w.owner.api.get(base())).body.data.some((s: any) => s.id === b.id));
  const withDeleted = (await w.owner.api.get(`${base()}?include_deleted=true`)).body.data;
  t.truthy(withDeleted.find((s: any) => s.id === b.id).deleted_at);
  for (const [method, path] of [
    ['GET', ''],
    ['DELETE', ''],
    ['PATCH', '/enable'],
    ['GET', '/deliveries'],
    ['POST', '/test'],
  ] as const) {
    const url = `${base()}/${b.id}${path}`;
    const res =
      method === 'GET'
        ? await w.owner.api.get(url)
        : method === 'DELETE'
          ? await w.owner.api.delete(url)
          : method === 'PATCH'
            ? await w.owner.api.patch(url, {})
            : await w.owner.api.post(url);
    t.is(res.statusCode, 404, `${method} ${path}`);
    t.deepEqual(res.body, { statusCode: 404, error: 'Not Found', message: `webhook ${b.id} not found`, code: 'resource_not_found' });
  }
});

test.serial('another org never sees a subscription: every route is 404 with the code', async (t) => {
  const sub = await subscribe(w, { url: URL_ });
  const theirs = w.outsider.api;
  const paths = [
    `${base()}/${sub.id}`,
    `${base()}/${sub.id}/deliveries`,
    `/orgs/${w.orgB}/webhooks/${sub.id}`,
    `/orgs/${w.orgB}/webhooks/${sub.id}/deliveries`,
  ];
  for (const path of paths) {
    const res = await theirs.get(path);
    t.is(res.statusCode, 404, path);
    t.is(res.body.code, 'resource_not_found', path);
  }
  for (const res of [
    await theirs.delete(`${base()}/${sub.id}`),
    await theirs.patch(`${base()}/${sub.id}/enable`, {}),
    await theirs.post(`${base()}/${sub.id}/test`),
    await theirs.post(`${base()}/${sub.id}/replays`, { from_event: `evt_${'0'.repeat(26)}` }),
    await theirs.get(base()),
    await theirs.post(base(), { url: URL_, events: ['*'], secret: SECRET }),
    await theirs.post(`/projects/${w.projectA}/webhooks`, { url: URL_, events: ['*'], secret: SECRET }),
  ]) {
    t.is(res.statusCode, 404, JSON.stringify(res.body));
  }
  t.false((await theirs.get(`/orgs/${w.orgB}/webhooks`)).body.data.some((s: any) => s.id === sub.id));
  t.is((await w.owner.api.get(`${base()}/${sub.id}`)).body.enabled, true, 'untouched');
});

test.serial('members read, admins write', async (t) => {
  const sub = await subscribe(w, { url: URL_ });
  t.is((await member.api.get(base())).statusCode, 200);
  t.is((await member.api.get(`${base()}/${sub.id}`)).statusCode, 200);
  t.is((await member.api.get(`${base()}/${sub.id}/deliveries`)).statusCode, 200);
  for (const res of [
    await member.api.post(base(), { url: URL_, events: ['*'], secret: SECRET }),
    await member.api.delete(`${base()}/${sub.id}`),
    await member.api.patch(`${base()}/${sub.id}/enable`, {}),
    await member.api.post(`${base()}/${sub.id}/test`),
  ]) {
    t.is(res.statusCode, 403);
    t.is(res.body.message, 'missing permission webhooks:write');
  }
});

test.serial('every bad create is 400 naming the field, and writes nothing', async (t) => {
  const ok = { url: URL_, events: ['*'], secret: SECRET };
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...ok, url: undefined }, /"url" is required/],
    [{ ...ok, url: 'ftp://example.com/x' }, /"url" must be a valid uri with a scheme matching the http\|https pattern/],
    [{ ...ok, url: 'not a url' }, /"url" must be a valid uri/],
    [{ ...ok, url: `http://example.com/${'a'.repeat(2048)}` }, /"url" length must be less than or equal to 2048/],
    [{ ...ok, events: undefined }, /"events" is required/],
    [{ ...ok, events: [] }, /"events" must contain at least 1 items/],
    [{ ...ok, events: ['a*b'] }, /"events\[0\]" .*wildcard may only open/],
    [{ ...ok, events: ['x', 'x'] }, /"events\[1\]" contains a duplicate value/],
    [{ ...ok, events: 'x' }, /"events" must be an array/],
    [{ ...ok, secret: undefined }, /"secret" is required/],
    [{ ...ok, secret: 'x'.repeat(15) }, /"secret" length must be at least 16 characters long/],
    [{ ...ok, secret: 'x'.repeat(257) }, /"secret" length must be less than or equal to 256 characters long/],
    [{ ...ok, filter: { branch: 'main' } }, /"filter.branch" is not allowed/],
    [{ ...ok, filter: { project_id: 'nope' } }, /"filter.project_id" .*proj_<base32> id/],
    [{ ...ok, filter: { agent: '*a*' } }, /"filter.agent" .*wildcard may only open/],
    [{ ...ok, enabled: 'sometimes' }, /"enabled" must be a boolean/],
    [{ ...ok, project_id: w.projectA }, /"project_id" is not allowed/],
  ];
  const before = await count();
  for (const [body, message] of cases) {
    const res = await w.owner.api.post(base(), body);
    t.is(res.statusCode, 400, JSON.stringify(body).slice(0, 80));
    t.regex(res.body.message, message);
  }
  const sub = await subscribe(w, { url: URL_ });
  const others: [Promise<any>, RegExp][] = [
    [w.owner.api.patch(`${base()}/${sub.id}/enable`, { enabled: false }), /"enabled" is not allowed/],
    [w.owner.api.post(`${base()}/${sub.id}/test`, { event: 'x' }), /"event" is not allowed/],
    [w.owner.api.get(`${base()}?limit=0`), /"limit" must be greater than or equal to 1/],
    [w.owner.api.get(`${base()}?enabled=maybe`), /"enabled" must be a boolean/],
    [w.owner.api.get(`${base()}?project_id=nope`), /"project_id" .*proj_<base32> id/],
    [w.owner.api.get(`${base()}/${sub.id}/deliveries?kind=live`), /"kind" must be one of \[event, replay, test\]/],
    [w.owner.api.get(`${base()}/${sub.id}/replays/rpl_nope`), /"replay_id" .*rpl_<base32> id/],
    [w.owner.api.get(`/orgs/org_nope/webhooks`), /"org_id" .*org_<base32> id/],
  ];
  for (const [pending, message] of others) {
    const res = await pending;
    t.is(res.statusCode, 400, JSON.stringify(res.body));
    t.regex(res.body.message, message);
    t.is(res.body.code, undefined);
  }
  t.is((await w.owner.api.get(`${base()}/${sub.id}`)).body.enabled, true);
  await w.owner.api.delete(`${base()}/${sub.id}`);
  const badPath = await w.owner.api.get(`${base()}/wh_nope`);
  t.is(badPath.statusCode, 400);
  t.regex(badPath.body.message, /"wh_id" .*wh_<base32> id/);
  t.is(await count(), before + 1, 'nothing written by the bad requests (one subscription served the other routes)');
});

test.serial('rules on valid input are 422: a filter outside the scope, a deleted project', async (t) => {
  const before = await count();
  const outside = await w.owner.api.post(base(), { url: URL_, events: ['*'], secret: SECRET, filter: { project_id: w.projectB } });
  t.is(outside.statusCode, 422);
  t.is(outside.body.message, `filter.project_id ${w.projectB} is not a project of org ${w.orgA}`);
  const other = await w.owner.api.post(`/projects/${w.projectA}/webhooks`, { url: URL_, events: ['*'], secret: SECRET, filter: { project_id: w.projectA2 } });
  t.is(other.statusCode, 422);
  t.regex(other.body.message, /differs from the subscription's project/);
  const doomed = (await w.owner.api.post('/projects', { org_id: w.orgA, name: 'doomed', slug: 'whdoom' })).body.id;
  await w.owner.api.delete(`/projects/${doomed}`);
  const deleted = await w.owner.api.post(`/projects/${doomed}/webhooks`, { url: URL_, events: ['*'], secret: SECRET });
  t.is(deleted.statusCode, 422);
  t.is(deleted.body.message, `project ${doomed} is deleted`);
  t.is(await count(), before);
});
