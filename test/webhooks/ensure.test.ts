import test from 'ava';
import { memberOf, type User } from '../orgs/helpers.ts';
import { SECRET, webhookWorld, type WebhookWorld } from './helpers.ts';

/** POST …/webhooks/ensure: a subscription is known by its scope and URL. */
let w: WebhookWorld;
let member: User;
const URL_ = 'http://127.0.0.1:9/ensured';
const body = { url: URL_, events: ['job.failed', 'system.job.*'], filter: { agent: 'coder*' }, secret: SECRET };
const count = async () => Number((await w.db('webhook_subscriptions').whereNull('deleted_at').count({ n: '*' }).first())!.n);

test.before(async () => {
  w = await webhookWorld('whensure');
  member = await memberOf(w.ctx, w.orgA, 'whensure-member');
});
test.after.always(() => w?.srv.stop());

test.serial('org webhooks: created when missing (200), answered as it is when equal (events in any order), 409 naming what differs', async (t) => {
  const before = await count();
  const created = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/ensure`, body);
  t.is(created.statusCode, 200, JSON.stringify(created.body));
  t.like(created.body, { url: URL_, project_id: null, enabled: true, filter: { agent: 'coder*' } });
  t.false('secret' in created.body || 'secret_enc' in created.body);
  t.is(await count(), before + 1);

  const again = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/ensure`, { ...body, events: ['system.job.*', 'job.failed'] });
  t.is(again.statusCode, 200);
  t.is(again.body.id, created.body.id);
  t.is(await count(), before + 1);

  const differs = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/ensure`, { ...body, events: ['*'], secret: 'another-secret-0123456789', enabled: false });
  t.is(differs.statusCode, 409);
  t.is(differs.body.message, `webhook ${created.body.id} to ${URL_} exists with other events, enabled, secret`);
  t.is(await count(), before + 1, 'nothing written');

  // The same URL for one project is another subscription (another scope).
  const project = await w.owner.api.post(`/projects/${w.projectA}/webhooks/ensure`, body);
  t.is(project.statusCode, 200, JSON.stringify(project.body));
  t.not(project.body.id, created.body.id);
  t.is(project.body.project_id, w.projectA);
  t.is((await w.owner.api.post(`/projects/${w.projectA}/webhooks/ensure`, body)).body.id, project.body.id);
  const filter = await w.owner.api.post(`/projects/${w.projectA}/webhooks/ensure`, { ...body, filter: {} });
  t.is(filter.statusCode, 409);
  t.regex(filter.body.message, /exists with other filter$/);
});

test.serial('ensure needs webhooks:write and validates like create', async (t) => {
  t.is((await member.api.post(`/orgs/${w.orgA}/webhooks/ensure`, body)).statusCode, 403);
  const bad = await w.owner.api.post(`/orgs/${w.orgA}/webhooks/ensure`, { ...body, secret: 'short' });
  t.is(bad.statusCode, 400);
  t.regex(bad.body.message, /"secret"/);
  t.is((await w.owner.api.post('/orgs/org_01h455vb4pex5vsknk084sn02q/webhooks/ensure', body)).statusCode, 404);
});
