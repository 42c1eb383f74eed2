import path from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { attemptsOf, finished, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * The cost a coding CLI reports itself (the stand-in Claude CLI's `modelUsage.costUSD`: $0.0123) goes
 * on the attempt's usage and into its receipt beside svc's own pricing: shown for a model the rate
 * card has no price for, and never in place of the price of one it has.
 */
const FAKE_CLAUDE = path.resolve('test/fixtures/bin/fake-claude');
const CLI_COST = 0.0123;
let w: WorkerWorld;

test.before(async () => {
  process.env.ANTHROPIC_API_KEY = 'sk-ant-test';
  w = await workerWorld('wcost', { overrides: { harnesses: { harness_a: { command: FAKE_CLAUDE } } } });
});
test.after.always(async () => {
  await w?.stop();
});

/** Runs a harness_a job on `model` to success; its receipt. */
async function receiptOfJob(t: ExecutionContext, model: string): Promise<any> {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, { description: 'Fix the bug', harness: 'harness_a', model });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await finished(w, created.body.id);
  const [attempt] = await attemptsOf(w, job.id);
  t.is(attempt.status, 'succeeded', JSON.stringify(attempt));
  const receipt = await w.api.get(`/jobs/${job.id}/receipt`);
  t.is(receipt.statusCode, 200, JSON.stringify(receipt.body));
  return receipt.body;
}

test("an unpriced model: the receipt shows the CLI's own figure, marked as reported by the CLI; the base cost stays 0", async (t) => {
  const receipt = await receiptOfJob(t, 'acme-coder-1');
  t.like(receipt.llm.models['acme-coder-1'], {
    input_tokens: 1200,
    output_tokens: 340,
    cost_usd: null,
    reported_cost_usd: CLI_COST,
    priced_as: 'reported by the CLI',
  });
  t.like(receipt.cost, { base_cost_usd: 0, pricing: 'unpriced', unpriced_models: ['acme-coder-1'], reported_cost_usd: CLI_COST });
});

test("a priced model: the base cost comes from the rate card, not the CLI's figure, which is shown beside it", async (t) => {
  const receipt = await receiptOfJob(t, 'claude-sonnet-4-5');
  // 1200 in × $3 + 340 out × $15 + 500 cache reads × $0.30 + 100 cache writes × $3.75, per million
  t.like(receipt.llm.models['claude-sonnet-4-5'], { cost_usd: 0.009225, reported_cost_usd: CLI_COST, priced_as: 'claude-sonnet-4' });
  t.like(receipt.cost, { base_cost_usd: 0.009225, pricing: 'priced', unpriced_models: [], reported_cost_usd: CLI_COST });
});
