import Joi from 'joi';
import { timestamp } from '../../../core/http/schemas.ts';
import { ATTEMPT_STATUSES, RESULT_STATUSES } from '../attempts/attempts.ts';
import { attemptSchema } from '../attempts/attempt-schemas.ts';
import { RECEIPT_VERSION, REPORTED_BY_CLI } from './receipt-assembly.ts';
import { jobId } from '../job/schemas.ts';

const INT_MAX = 2_147_483_647;
const count = Joi.number().integer().min(0);
const usd = Joi.number().min(0);
const leaseToken = Joi.string().guid().required().description('the token the claim returned');
/** `calls[0]`: where an object-level rule failed, for messages that name the field path like joi's own. */
const pathOf = (helpers: Joi.CustomHelpers) => helpers.state.path?.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${p}`)).join('') ?? '';

// --- what the runner records ------------------------------------------------------------------------

const tokens = count.max(INT_MAX);
/** One `llm.call`: usage only. Unknown keys (a prompt, a response) are refused, so no content can be stored. */
export const llmCallSchema = Joi.object({
  model: Joi.string().trim().min(1).max(200).required().description('provider model id, e.g. claude-sonnet-4-5-20250929'),
  provider: Joi.string().trim().min(1).max(100),
  input_tokens: tokens.required().description('uncached input tokens (cache reads and writes are counted apart)'),
  output_tokens: tokens.required().description('output tokens, reasoning included'),
  cache_read_tokens: tokens.description('default 0'),
  cache_write_tokens: tokens.description('default 0'),
  reasoning_tokens: tokens.description('the part of output_tokens spent reasoning (at most output_tokens); default 0'),
  duration_ms: tokens.description('how long the provider call took'),
  reported_cost_usd: usd.description(
    "what the coding CLI said the call cost, in USD, when it computes a cost itself: shown on the receipt beside svc's own pricing, never billed",
  ),
})
  // Object-level rules (not Joi.ref) keep the OpenAPI document valid.
  .custom((call, helpers) => {
    const at = pathOf(helpers);
    return (call.reasoning_tokens ?? 0) > call.output_tokens
      ? helpers.message({ custom: `"${at}.reasoning_tokens" must not exceed "${at}.output_tokens" (it is part of them)` })
      : call;
  })
  .label('LlmCallUsage');

export const usagePayload = Joi.object({
  lease_token: leaseToken,
  calls: Joi.array().items(llmCallSchema).min(1).max(100).required(),
}).label('RecordUsageRequest');

export const PHASE_NAME = /^[a-z][a-z0-9]*(?:[_-][a-z0-9]+)*$/;
export const phaseSchema = Joi.object({
  name: Joi.string().max(40).pattern(PHASE_NAME, 'lower-case words (provision, clone, hydrate, execute, commit, push)').required(),
  started_at: timestamp.required(),
  ended_at: timestamp.required().description('not before started_at'),
})
  .custom((phase, helpers) => {
    const at = pathOf(helpers);
    return phase.ended_at < phase.started_at ? helpers.message({ custom: `"${at}.ended_at" must not be before "${at}.started_at"` }) : phase;
  })
  .label('AttemptPhase');

export const phasesPayload = Joi.object({
  lease_token: leaseToken,
  phases: Joi.array().items(phaseSchema).min(1).max(50).unique('name').required(),
}).label('RecordPhasesRequest');

export const recordedSchema = Joi.object({
  recorded: count.required(),
  budget_exceeded: Joi.string().description(
    'this usage took the attempt over hints.max_tokens or hints.max_cost: the attempt has been ended as failed (BUDGET_EXCEEDED); stop the run',
  ),
}).label('RecordedUsage');

// --- receipts -----------------------------------------------------------------------------------------

const tokenCounts = {
  input_tokens: count.required(),
  output_tokens: count.required(),
  cache_read_tokens: count.required(),
  cache_write_tokens: count.required(),
  reasoning_tokens: count.required(),
};

const modelUsageSchema = Joi.object({
  calls: count.required(),
  ...tokenCounts,
  duration_ms: count.required(),
  providers: Joi.array().items(Joi.string()).required(),
  cost_usd: usd.allow(null).required().description('null: no price for this model (it counts 0)'),
  reported_cost_usd: usd
    .allow(null)
    .description(
      'the sum of what the coding CLI said the calls of this model cost; null: it reported none. Never billed. Absent on receipts written before it was recorded',
    ),
  priced_as: Joi.string()
    .allow(null)
    .required()
    .description(`the price-table entry that matched; '${REPORTED_BY_CLI}' when none did and the CLI reported a cost (reported_cost_usd; cost_usd stays null)`),
}).label('ModelUsage');

const PRICING = ['priced', 'partial', 'unpriced'] as const;

export const receiptSchema = Joi.object({
  receipt_version: Joi.number().valid(RECEIPT_VERSION).required(),
  attempt_id: Joi.string().guid().required(),
  attempt_number: Joi.number().integer().min(1).required(),
  job_id: jobId.required(),
  status: Joi.string()
    .valid(...ATTEMPT_STATUSES)
    .required(),
  result_status: Joi.string()
    .valid(...RESULT_STATUSES)
    .allow(null)
    .required(),
  timing: Joi.object({
    started_at: timestamp.required(),
    ended_at: timestamp.required(),
    billable_ms: count.required().description('ended_at − started_at'),
    phases: Joi.object().pattern(Joi.string(), count).required().description('phase name → milliseconds'),
  })
    .required()
    .label('ReceiptTiming'),
  llm: Joi.object({
    calls: count.required(),
    ...tokenCounts,
    duration_ms: count.required().description('sum of the calls that reported one'),
    models: Joi.object().pattern(Joi.string(), modelUsageSchema).required().description('model id → its usage'),
  })
    .required()
    .label('ReceiptLlm'),
  cost: Joi.object({
    base_cost_usd: usd.required().description('USD, six decimals'),
    billed_cost: Joi.object({ currency: Joi.string().length(3).required(), amount: usd.required() })
      .required()
      .label('Money')
      .description("in the org's billing currency at the exchange rate in force; USD when no rate was in force"),
    pricing: Joi.string()
      .valid(...PRICING)
      .required()
      .description('priced: every model used has a price; partial: some do not (they count 0); unpriced: none does'),
    unpriced_models: Joi.array().items(Joi.string()).required(),
    reported_cost_usd: usd
      .allow(null)
      .description(
        'the sum of what the coding CLIs said the calls cost, all models; null: none reported one. Informational: not part of base_cost_usd or billed_cost. Absent on receipts written before it was recorded',
      ),
    price_table: Joi.string().allow(null).required().description('the rate card used; null when none was in force (everything unpriced)'),
    exchange_rate: Joi.number()
      .min(0)
      .allow(null)
      .description('USD per unit of the billed currency used; null: no rate was in force (billed in USD); absent on receipts written before billing'),
  })
    .required()
    .label('ReceiptCost'),
  compute: Joi.object({
    resource_class: Joi.string().required().description("hints.resource_class, else 'default'"),
    billable_ms: count.required(),
    cost_usd: usd
      .allow(null)
      .description("billable minutes × the rate card's price for the class, included in base_cost_usd; null: the card has none; absent on older receipts"),
  })
    .required()
    .label('ReceiptCompute'),
  workspace: Joi.object({
    mode: Joi.string().required().description('job, session, isolated, or run (a fresh workspace on the run branch)'),
    reused: Joi.boolean().required().description('the attempt continued in a workspace an earlier attempt or job left'),
    started_from: Joi.string().allow(null).required().description('the commit the step started from'),
    run_branch: Joi.string().allow(null).required(),
    step_branch: Joi.string().allow(null).required(),
    merged: Joi.array()
      .items(Joi.object({ step: Joi.string().required(), branch: Joi.string().required(), sha: Joi.string().required() }).label('ReceiptMergedStep'))
      .required(),
    pushed_to: Joi.array()
      .items(Joi.object({ branch: Joi.string().required(), sha: Joi.string().required() }).label('ReceiptPushedBranch'))
      .required(),
    changed_files: Joi.array().items(Joi.string()).required(),
    checkout: Joi.object({
      copy_on_write: Joi.boolean().required().description("the working tree was an overlay over the repository cache's prepared checkout, nothing written"),
      sparse: Joi.array().items(Joi.string()).allow(null).required().description('workspace.sparse: only these folders were checked out; null: all'),
      depth: Joi.number().integer().allow(null).required().description('git.depth: the history was cut to this many commits per branch; null: all'),
    })
      .label('ReceiptCheckout')
      .description('how a fresh checkout was made (absent when the attempt continued one, and on older receipts)'),
  })
    .allow(null)
    .label('ReceiptWorkspace')
    .description(
      'what the workspace reused and handed on; null for a fresh isolated workspace without workspace.sparse or git.depth (absent on receipts written before it was recorded)',
    ),
  created_at: timestamp.required().description('when the receipt was written (the attempt ended)'),
}).label('Receipt');

// --- compare ------------------------------------------------------------------------------------------

export const compareQuery = Joi.object({
  a: Joi.number().integer().min(1).required().description('attempt_number'),
  b: Joi.number().integer().min(1).required().description('attempt_number (may equal a)'),
  include_receipt: Joi.boolean().default(false),
});

const json = Joi.object().unknown(true).allow(null);
const difference = (value: Joi.Schema, label: string) =>
  Joi.object({ a: value.required(), b: value.required(), changed: Joi.boolean().required() }).label(label);
const numericDifference = (label: string) =>
  Joi.object({
    a: Joi.number().allow(null).required(),
    b: Joi.number().allow(null).required(),
    changed: Joi.boolean().required(),
    delta: Joi.number().allow(null).required().description('b − a; null when either is null'),
  }).label(label);
export const tokenTotals = Joi.object({ ...tokenCounts, total_tokens: count.required(), calls: count.required() }).label('TokenTotals');
const signed = Joi.number().integer().required();
const tokenDelta = Joi.object(Object.fromEntries([...Object.keys(tokenCounts), 'total_tokens', 'calls'].map((k) => [k, signed])))
  .label('TokenDelta')
  .description('b − a for each count');

/** The attempt's own fields a comparison shows, as the Attempt schema defines them. */
const COMPARED_FIELDS = ['id', 'attempt_number', 'status', 'result_status', 'error', 'started_at', 'ended_at'] as const;

const compareAttemptSchema = Joi.object({
  ...Object.fromEntries(COMPARED_FIELDS.map((key) => [key, attemptSchema.extract(key)])),
  pricing: Joi.string()
    .valid(...PRICING)
    .required(),
  receipt: receiptSchema.allow(null).label('ComparedReceipt').description('only with include_receipt=true; null while the attempt runs'),
}).label('ComparedAttempt');

export const comparisonSchema = Joi.object({
  job_id: jobId.required(),
  a: compareAttemptSchema.required(),
  b: compareAttemptSchema.required(),
  differences: Joi.object({
    status: difference(Joi.string(), 'StringDifference').required(),
    result_status: difference(Joi.string().allow(null), 'NullableStringDifference').required(),
    result_summary: difference(Joi.string().allow(null), 'NullableStringDifference').required(),
    result_json: difference(json, 'JsonDifference').required(),
    git: difference(json, 'JsonDifference').required(),
    duration_ms: numericDifference('NumberDifference').required(),
    tokens: Joi.object({ a: tokenTotals.required(), b: tokenTotals.required(), changed: Joi.boolean().required(), delta: tokenDelta.required() })
      .required()
      .label('TokensDifference'),
    cost_usd: numericDifference('NumberDifference').required(),
  })
    .required()
    .label('AttemptDifferences'),
}).label('AttemptComparison');
