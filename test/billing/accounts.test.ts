import test, { type ExecutionContext } from 'ava';
import { assertError, memberOf } from '../orgs/helpers.ts';
import { claimed, complete, newJob } from '../jobs/claim-helpers.ts';
import { billingWorld, postRate, type BillingWorld } from './helpers.ts';

let w: BillingWorld;
test.before(async () => {
  w = await billingWorld('accounts');
});
test.after.always(() => w?.ctx.srv.stop());

const SONNET = 'claude-sonnet-4-5-20250929'; // seed card: $3 in, $15 out per million tokens

/** A job in `project` that ran one attempt using 1M input tokens of Sonnet ($3). */
async function spendThreeDollars(t: ExecutionContext, project = w.projectA, user = w.owner) {
  const job = await newJob(w, {}, project, user);
  const { attempt } = await claimed(t, w, job.id, {}, user);
  const usage = await user.api.post(`/jobs/${job.id}/attempts/${attempt.id}/usage`, {
    lease_token: attempt.lease_token,
    calls: [{ model: SONNET, input_tokens: 1_000_000, output_tokens: 0 }],
  });
  t.is(usage.statusCode, 201, JSON.stringify(usage.body));
  t.is((await complete(w, job.id, attempt, { status: 'success' }, {}, user)).statusCode, 200);
  return job;
}

test.serial('org billing settings: read with orgs:read, changed by org admins; a currency needs a rate; others 404', async (t) => {
  const read = await w.owner.api.get(`/orgs/${w.orgA}/billing`);
  t.deepEqual(read.body, {
    org_id: w.orgA,
    currency: 'USD',
    monthly_budget: null,
    budget_mode: 'refuse',
    balance: null,
    balance_threshold: null,
    below_threshold_since: null,
  });
  assertError(t, await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { currency: 'SEK' }), 422, /no exchange rate for SEK/);
  assertError(t, await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { monthly_budget: -1 }), 400, /"monthly_budget" must be greater than or equal to 0/);
  assertError(t, await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { balance_threshold: 5 }), 400, /"balance_threshold" is not allowed/);
  assertError(t, await w.outsider.api.get(`/orgs/${w.orgA}/billing`), 404, /not found/);
  assertError(t, await w.outsider.api.get(`/orgs/${w.orgA}/spend`), 404, /not found/);
  assertError(t, await w.owner.api.get(`/admin/orgs/${w.orgA}/usage`), 403, /system administrator/);
  assertError(t, await w.admin.get('/admin/orgs/org_01h455vb4pex5vsknk084sn02q/usage'), 404, 'org org_01h455vb4pex5vsknk084sn02q not found');
  const member = await memberOf(w.ctx, w.orgA, 'billing-member');
  t.is((await member.api.get(`/orgs/${w.orgA}/billing`)).statusCode, 200);
  t.is((await member.api.patch(`/orgs/${w.orgA}/billing`, { monthly_budget: 1 })).statusCode, 403);
  await postRate(w, 'SEK', 0.1, new Date(Date.now() - 1000));
  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { currency: 'SEK' })).body.currency, 'SEK');
  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { currency: 'USD' })).body.currency, 'USD');
});

test.serial('spend: totals and breakdowns by project, model, harness and day; admin usage lists the records', async (t) => {
  const empty = await w.owner.api.get(`/orgs/${w.orgA}/spend?window=1d`);
  t.is(empty.statusCode, 200, JSON.stringify(empty.body));
  t.like(empty.body, { org_id: w.orgA, window: '1d', currency: 'USD', totals: { attempts: 0, base_cost_usd: 0, billed_cost: 0 }, by_project: [] });
  assertError(t, await w.owner.api.get(`/orgs/${w.orgA}/spend?window=2d`), 400, /"window" must be one of \[1d, 7d, 30d, 90d\]/);

  await spendThreeDollars(t, w.projectA);
  await spendThreeDollars(t, w.projectA2);
  await spendThreeDollars(t, w.projectB, w.outsider); // another org: not counted
  const spend = (await w.owner.api.get(`/orgs/${w.orgA}/spend`)).body;
  t.is(spend.window, '7d');
  t.like(spend.totals, { attempts: 2, base_cost_usd: 6, billed_cost: 6, unconverted_usd: 0, unpriced_attempts: 0, input_tokens: 2_000_000 });
  t.deepEqual(
    spend.by_project.map((p: any) => [p.project_id, p.base_cost_usd]).sort(),
    [
      [w.projectA, 3],
      [w.projectA2, 3],
    ].sort(),
  );
  t.deepEqual(
    spend.by_model.map((m: any) => [m.model, m.attempts, m.base_cost_usd, m.billed_cost]),
    [[SONNET, 2, 6, 6]],
  );
  t.deepEqual(
    spend.by_harness.map((h: any) => [h.harness, h.attempts]),
    [[null, 2]],
  );
  t.deepEqual(
    spend.by_day.map((d: any) => [d.day, d.base_cost_usd]),
    [[new Date().toISOString().slice(0, 10), 6]],
  );

  const usage = await w.admin.get(`/admin/orgs/${w.orgA}/usage?window=30d&limit=1`);
  t.is(usage.statusCode, 200, JSON.stringify(usage.body));
  t.like(usage.body, { org_id: w.orgA, window: '30d', billing: { currency: 'USD' }, totals: { attempts: 2, base_cost_usd: 6 } });
  t.is(usage.body.records.length, 1);
  t.like(usage.body.records[0], { model: SONNET, input_tokens: 1_000_000, project_id: w.projectA2 });
});

test.serial('monthly budget: over it, new jobs are refused with 422 (refuse) or created with one system.org.budget_exceeded a month (warn)', async (t) => {
  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { monthly_budget: 5 })).statusCode, 200);
  const refused = await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'one more' });
  assertError(t, refused, 422, new RegExp(`^org ${w.orgA} is over its monthly budget: 6 USD spent since \\d{4}-\\d{2}-01 of 5 USD; no new jobs`));
  t.is((await w.outsider.api.post(`/projects/${w.projectB}/jobs`, { description: 'other org' })).statusCode, 201, 'other orgs are not affected');

  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { budget_mode: 'warn' })).statusCode, 200);
  for (let i = 0; i < 2; i++) t.is((await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: `warned ${i}` })).statusCode, 201);
  const events = await w.db('events').where({ project_id: w.projectA, type: 'system.org.budget_exceeded' });
  t.is(events.length, 1, 'once a month per project');
  t.like(events[0].payload_json, { org_id: w.orgA, spent: 6, monthly_budget: 5, currency: 'USD', mode: 'warn' });

  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { monthly_budget: null, budget_mode: 'refuse' })).statusCode, 200);
  t.is((await w.owner.api.post(`/projects/${w.projectA}/jobs`, { description: 'no budget' })).statusCode, 201);
});

test.serial('monthly budget: a pipeline run or workflow invocation over it is refused like a job, with nothing written; warn lets it start', async (t) => {
  const yaml = `
pipelines:
  ship:
    steps:
      - { name: build, run: echo build }
      - { name: test, run: echo test, depends_on: [build] }
workflows:
  review:
    steps:
      - { name: look, run: echo look }
      - { name: say, run: echo say, depends_on: [look] }
`;
  t.is((await w.owner.api.post(`/projects/${w.projectA}/manifest`, { yaml })).statusCode, 200);
  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { monthly_budget: 5, budget_mode: 'refuse' })).statusCode, 200);
  const jobsBefore = Number((await w.db('jobs').where({ project_id: w.projectA }).count('* as n').first())!.n);
  const over = new RegExp(`^org ${w.orgA} is over its monthly budget: 6 USD spent since \\d{4}-\\d{2}-01 of 5 USD; no new jobs`);
  assertError(t, await w.owner.api.post(`/projects/${w.projectA}/pipelines/ship/run`, {}), 422, over);
  assertError(t, await w.owner.api.post(`/projects/${w.projectA}/workflows/review/invoke`, { input: {} }), 422, over);
  t.is(Number((await w.db('pipeline_runs').where({ project_id: w.projectA }).count('* as n').first())!.n), 0, 'no run written');
  t.is(Number((await w.db('jobs').where({ project_id: w.projectA }).count('* as n').first())!.n), jobsBefore, 'no step or root job written');
  // Unknown work is still 404 first: admission asks only about work that exists.
  assertError(t, await w.owner.api.post(`/projects/${w.projectA}/pipelines/nope/run`, {}), 404, /pipeline nope not found/);

  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { budget_mode: 'warn' })).statusCode, 200);
  const run = await w.owner.api.post(`/projects/${w.projectA}/pipelines/ship/run`, {});
  t.is(run.statusCode, 201, JSON.stringify(run.body));
  t.is(run.body.steps.length, 2);
  const invoked = await w.owner.api.post(`/projects/${w.projectA}/workflows/review/invoke`, { input: {} });
  t.true([200, 201, 202].includes(invoked.statusCode), JSON.stringify(invoked.body));
  t.is((await w.db('events').where({ project_id: w.projectA, type: 'system.org.budget_exceeded' })).length, 1, 'still once a month per project');
  t.is((await w.owner.api.patch(`/orgs/${w.orgA}/billing`, { monthly_budget: null, budget_mode: 'refuse' })).statusCode, 200);
});

test.serial('balance: credits fill it, receipts draw it down; below the threshold the event is emitted and environments suspended once', async (t) => {
  assertError(t, await w.owner.api.post(`/admin/orgs/${w.orgA}/credits`, { amount: 10 }), 403, /system administrator/);
  assertError(t, await w.admin.post(`/admin/orgs/${w.orgA}/credits`, { amount: 0 }), 400, /"amount" contains an invalid value/);
  t.like((await w.admin.post(`/admin/orgs/${w.orgA}/credits`, { amount: 10 })).body, { balance: 10 });
  t.like((await w.admin.patch(`/admin/orgs/${w.orgA}/billing`, { balance_threshold: 5 })).body, {
    balance: 10,
    balance_threshold: 5,
    below_threshold_since: null,
  });

  await spendThreeDollars(t); // 7 left
  t.is(w.suspension.calls.length, 0);
  await spendThreeDollars(t); // 4 left: below 5
  const after = (await w.owner.api.get(`/orgs/${w.orgA}/billing`)).body;
  t.is(after.balance, 4);
  t.truthy(after.below_threshold_since);
  t.deepEqual(w.suspension.calls, [{ orgId: w.orgA, reason: 'balance 4 USD fell below the threshold 5 USD' }]);
  const events = await w.db('events').where({ type: 'system.org.balance_low' }).orderBy('project_id');
  t.deepEqual(events.map((e: any) => e.project_id).sort(), [w.projectA, w.projectA2].sort(), 'on every live project of the org');
  t.like(events[0].payload_json, { org_id: w.orgA, balance: 4, threshold: 5, currency: 'USD', caused_by_project_id: w.projectA, environments_suspended: 2 });

  await spendThreeDollars(t); // 1 left: still below, not again
  t.is(w.suspension.calls.length, 1);
  t.like((await w.admin.post(`/admin/orgs/${w.orgA}/credits`, { amount: 20 })).body, { balance: 21, below_threshold_since: null });
  t.like((await w.admin.post(`/admin/orgs/${w.orgA}/credits`, { amount: -17 })).body, { balance: 4 });
  t.is(w.suspension.calls.length, 2, 'a correction down across the threshold suspends again');
});
