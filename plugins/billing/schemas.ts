import Joi from 'joi';
import { idSchema, orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { windowQuery, REPORT_WINDOWS } from '../../core/http/windows.ts';
import { PRICE_CLASSES } from '../../domain/pricing/prices.ts';

const currency = Joi.string()
  .uppercase()
  .pattern(/^[A-Z]{3}$/, 'ISO 4217 code')
  .example('EUR');
const price = Joi.number().min(0).max(1_000_000);
const money = Joi.number().description('in the org currency, six decimals');
const modelKey = Joi.string().min(1).max(200).pattern(/^\S+$/, 'no whitespace');
const resourceClass = Joi.string()
  .max(64)
  .pattern(/^[a-z0-9][a-z0-9._-]*$/, 'lower-case resource class');

export const cardParams = Joi.object({ card_id: Joi.string().max(64).required() });
export const orgParams = Joi.object({ org_id: orgId.required() });

const modelPrice = Joi.object({
  input: price.required(),
  output: price.required(),
  cache_read: price.required(),
  cache_write: price.description('absent when posting: the input price'),
  reasoning: price.description('absent: reasoning tokens are billed as output'),
}).label('ModelPrice');

export const createCard = Joi.object({
  name: Joi.string().trim().min(1).max(200).required(),
  effective_at: timestamp.description('from when the card prices attempts (attempts that start then or later); default now'),
  provenance: Joi.string().trim().min(1).max(2000).required().description('where the prices come from (a price page and the date read, a contract)'),
  models: Joi.object()
    .pattern(modelKey, modelPrice)
    .required()
    .description(`model id (lower-cased; longer ids match up to -, @ or :) → USD per million tokens of ${PRICE_CLASSES.join(', ')}`),
  compute: Joi.object().pattern(resourceClass, price).default({}).description('resource class → USD per minute of billable time'),
}).label('CreateRateCard');

export const cardSchema = Joi.object({
  id: Joi.string().required(),
  name: Joi.string().required(),
  effective_at: timestamp.required(),
  provenance: Joi.string().required(),
  models: Joi.object().pattern(Joi.string(), modelPrice).required(),
  compute: Joi.object().pattern(Joi.string(), Joi.number()).required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
}).label('RateCard');

export const currentCardQuery = Joi.object({ at: timestamp.description('default now') });

export const createRate = Joi.object({
  currency: currency.invalid('USD').required(),
  rate_to_usd: Joi.number().positive().max(1_000_000).required().description('USD one unit of the currency is worth'),
  effective_at: timestamp.description('default now'),
}).label('CreateExchangeRate');

export const rateSchema = Joi.object({
  id: idSchema('fx').required(),
  currency: Joi.string().required(),
  rate_to_usd: Joi.number().required(),
  effective_at: timestamp.required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
}).label('ExchangeRate');

export const rateQuery = listQuerySchema.keys({ currency });

const budgetMode = Joi.string().valid('refuse', 'warn').description('over the monthly budget: refuse new jobs (422) or only emit system.org.budget_exceeded');

export const orgBillingChanges = Joi.object({
  currency: currency.description('receipts bill in it from now on; needs an exchange rate unless USD'),
  monthly_budget: Joi.number().min(0).allow(null).description('in the org currency per calendar month (UTC); null: none'),
  budget_mode: budgetMode,
}).label('OrgBillingChanges');

export const adminBillingChanges = orgBillingChanges
  .keys({ balance_threshold: Joi.number().min(0).allow(null).description('below it the org is flagged and its environments suspended; null: none') })
  .label('AdminOrgBillingChanges');

export const credit = Joi.object({
  amount: Joi.number().invalid(0).min(-1e12).max(1e12).required().description('added to the balance, in the org currency (negative corrects it down)'),
}).label('BalanceCredit');

export const billingSchema = Joi.object({
  org_id: orgId.required(),
  currency: Joi.string().required(),
  monthly_budget: money.allow(null).required(),
  budget_mode: budgetMode.required(),
  balance: money.allow(null).required().description('null: no balance kept (no credit posted yet)'),
  balance_threshold: money.allow(null).required(),
  below_threshold_since: timestamp.allow(null).required(),
}).label('OrgBilling');

export const toBilling = (row: Record<string, unknown>) => {
  const { updated_at: _updated, ...rest } = row;
  return rest;
};

const count = Joi.number().integer().min(0);
const usd = Joi.number().min(0);
const figures = {
  attempts: count.required(),
  base_cost_usd: usd.required(),
  billed_cost: money.required().description('receipts billed in the org currency'),
  unconverted_usd: usd.required().description('USD of receipts billed in another currency (no rate was in force, or the currency changed)'),
  unpriced_attempts: count.required(),
  input_tokens: count.required(),
  output_tokens: count.required(),
  cache_read_tokens: count.required(),
  cache_write_tokens: count.required(),
  reasoning_tokens: count.required(),
};
const figuresSchema = Joi.object(figures).label('SpendFigures');

const report = {
  org_id: orgId.required(),
  window: Joi.string()
    .valid(...REPORT_WINDOWS)
    .required(),
  since: timestamp.required(),
  as_of: timestamp.required(),
  currency: Joi.string().required(),
};

const gatewayFigures = {
  calls: count.required(),
  base_cost_usd: usd.required(),
  billed_cost: money.required().description('calls billed in the org currency'),
  unconverted_usd: usd.required().description('USD of calls for which no exchange rate was in force'),
  unpriced_calls: count.required().description('calls of a model the rate card has no price for (counted at 0)'),
  input_tokens: count.required(),
  output_tokens: count.required(),
  cache_read_tokens: count.required(),
  cache_write_tokens: count.required(),
  reasoning_tokens: count.required(),
};
const gatewayFiguresSchema = Joi.object(gatewayFigures).label('GatewaySpendFigures');
const principalKind = Joi.string().valid('user', 'service_account');

const outsideJobsSpend = Joi.object({
  totals: gatewayFiguresSchema.required(),
  by_caller: Joi.array()
    .items(Joi.object({ principal_kind: principalKind.required(), principal_id: Joi.string().required(), ...gatewayFigures }).label('CallerGatewaySpend'))
    .required(),
  by_model: Joi.array()
    .items(Joi.object({ model: Joi.string().required().description('the model the provider served'), ...gatewayFigures }).label('ModelGatewaySpend'))
    .required(),
  by_day: Joi.array()
    .items(Joi.object({ day: Joi.string().required(), ...gatewayFigures }).label('DayGatewaySpend'))
    .required(),
})
  .label('OutsideJobsSpend')
  .description(
    "model gateway calls made with a user's or a service account's token, outside any job (a job's calls are on its receipts above); priced with the rate card and exchange rate in force at each group's latest call",
  );

export const spendSchema = Joi.object({
  ...report,
  totals: figuresSchema.required(),
  by_project: Joi.array()
    .items(Joi.object({ project_id: projectId.required(), ...figures }).label('ProjectSpend'))
    .required(),
  by_model: Joi.array()
    .items(Joi.object({ model: Joi.string().required(), ...figures }).label('ModelSpend'))
    .required(),
  by_harness: Joi.array()
    .items(Joi.object({ harness: Joi.string().allow(null).required(), ...figures }).label('HarnessSpend'))
    .required(),
  by_day: Joi.array()
    .items(Joi.object({ day: Joi.string().required(), ...figures }).label('DaySpend'))
    .required(),
  outside_jobs: outsideJobsSpend.required(),
}).label('OrgSpend');

export const usageQuery = windowQuery.keys({ limit: Joi.number().integer().min(1).max(1000).default(100).description('usage records, newest first') });

export const usageSchema = Joi.object({
  ...report,
  billing: billingSchema.required(),
  totals: figuresSchema.required(),
  records: Joi.array()
    .items(
      Joi.object({
        project_id: projectId.required(),
        job_id: Joi.string().required(),
        attempt_id: Joi.string().required(),
        model: Joi.string().required(),
        provider: Joi.string().allow(null).required(),
        input_tokens: count.required(),
        output_tokens: count.required(),
        cache_read_tokens: count.required(),
        cache_write_tokens: count.required(),
        reasoning_tokens: count.required(),
        duration_ms: count.allow(null).required(),
        created_at: timestamp.required(),
      }).label('UsageRecord'),
    )
    .required(),
  outside_jobs: Joi.object({
    totals: gatewayFiguresSchema.required(),
    records: Joi.array()
      .items(
        Joi.object({
          principal_kind: principalKind.required(),
          principal_id: Joi.string().required(),
          project_id: projectId.allow(null).required(),
          model: Joi.string().required().description('as the caller named it'),
          upstream_model: Joi.string().required(),
          provider: Joi.string().required(),
          status: Joi.number().integer().required(),
          input_tokens: count.required(),
          output_tokens: count.required(),
          cache_read_tokens: count.required(),
          cache_write_tokens: count.required(),
          reasoning_tokens: count.required(),
          latency_ms: count.required(),
          created_at: timestamp.required(),
        }).label('GatewayCallRecord'),
      )
      .required()
      .description('newest first, at most `limit`'),
  })
    .required()
    .label('OutsideJobsUsage')
    .description("model gateway calls made with a user's or a service account's token, outside any job"),
}).label('OrgUsage');
