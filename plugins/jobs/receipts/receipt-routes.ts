import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../../core/di.ts';
import { requires } from '../../../core/http/access.ts';
import { docs } from '../../../core/http/schemas.ts';
import { paramsOf, payloadOf, queryOf } from '../../../core/http/request.ts';
import { Receipts } from './receipts.ts';
import { AttemptComparison } from './compare.ts';
import type { LlmCall, PhaseTiming } from './receipt-store.ts';
import { jobParams } from '../job/routes.ts';
import { attemptParams, resolveAttemptRef } from '../attempts/attempt-ref.ts';
import { AttemptRepository } from '../attempts/attempts.ts';
import { comparisonSchema, compareQuery, phasesPayload, receiptSchema, recordedSchema, usagePayload } from './receipt-schemas.ts';

const tags = ['api', 'jobs'];

const RECEIPT_SHAPE =
  'A receipt: {receipt_version, attempt_id, attempt_number, job_id, status, result_status, ' +
  'timing {started_at, ended_at, billable_ms, phases {name: ms}}, ' +
  'llm {calls, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, duration_ms, models {model: {calls, token counts, duration_ms, providers, cost_usd, reported_cost_usd, priced_as}}}, ' +
  'cost {base_cost_usd, billed_cost {currency, amount}, pricing priced|partial|unpriced, unpriced_models, reported_cost_usd, price_table, exchange_rate}, ' +
  'compute {resource_class, billable_ms, cost_usd}, workspace, created_at}. ' +
  'Written once when the attempt ends, however it ends; never changed. Models without a price count 0 (fail-open) and pricing says so. ' +
  "reported_cost_usd is what the coding CLI said the calls cost (null when it said nothing); a model without a price but with such a figure is priced_as 'reported by the CLI'. " +
  'It is shown, never billed: base_cost_usd and billed_cost come from the rate card alone.';

const COMPARE_SHAPE =
  'Two attempts of the job by attempt_number (a may equal b): {job_id, a, b, differences}. a and b: {id, attempt_number, status, result_status, error, ' +
  'started_at, ended_at, pricing, receipt (only with include_receipt=true; null while running)}. differences: status, result_status, result_summary, ' +
  'result_json, git as {a, b, changed}; duration_ms and cost_usd as {a, b, changed, delta: b − a}; tokens as {a, b, changed, delta} of ' +
  '{input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, total_tokens, calls}. Figures come from the receipt; ' +
  'a running attempt shows its usage so far and duration_ms null. 404 naming a or b when it is not an attempt of the job.';

/** Usage and phase recording for the runner of an attempt, receipts, and attempt comparison. */
export function receiptRoutes(container: DependencyContainer): ServerRoute[] {
  const attemptRef = resolveAttemptRef(container.resolve(AttemptRepository));
  const receipts = container.resolve(Receipts);
  const comparison = container.resolve(AttemptComparison);
  const read = { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) };
  const write = { ...requires('jobs:write', 'job'), ...docs(400, 401, 403, 404, 409) };

  return [
    {
      method: 'POST',
      path: '/jobs/{job_id}/attempts/{attempt_id}/usage',
      options: {
        id: 'recordAttemptUsage',
        tags,
        description:
          'Record the usage of 1–100 llm.call events of a running attempt: model, provider, token counts, duration, and reported_cost_usd ' +
          '(what the coding CLI said the call cost, when it computes one: shown on the receipt, never billed); nothing else is accepted ' +
          '(no prompt or response content). Fenced by the lease token like heartbeat: 409 `lease lost …` and nothing written when it does not hold. ' +
          'Answers 201 {recorded: n}.',
        plugins: write,
        pre: [attemptRef],
        validate: { params: attemptParams, payload: usagePayload },
        response: { status: { 201: recordedSchema } },
      },
      handler: async (request, h) => {
        const { job_id, attempt_id } = paramsOf(request);
        const body = payloadOf<{ lease_token: string; calls: LlmCall[] }>(request);
        return h.response(await receipts.recordUsage(job_id, attempt_id, body.lease_token, body.calls)).code(201);
      },
    },
    {
      method: 'POST',
      path: '/jobs/{job_id}/attempts/{attempt_id}/phases',
      options: {
        id: 'recordAttemptPhases',
        tags,
        description:
          'Record phase timings of a running attempt (provision, clone, hydrate, execute, commit, push: lower-case words; ended_at ≥ started_at); ' +
          'a name reported again replaces its times. Fenced by the lease token (409 `lease lost …`, nothing written). Answers 201 {recorded: n}.',
        plugins: write,
        pre: [attemptRef],
        validate: { params: attemptParams, payload: phasesPayload },
        response: { status: { 201: recordedSchema } },
      },
      handler: async (request, h) => {
        const { job_id, attempt_id } = paramsOf(request);
        const body = payloadOf<{ lease_token: string; phases: PhaseTiming[] }>(request);
        return h.response(await receipts.recordPhases(job_id, attempt_id, body.lease_token, body.phases)).code(201);
      },
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/receipt',
      options: {
        id: 'getJobReceipt',
        tags,
        description: `The receipt of the job's latest attempt that has one (404 \`job X has no receipt yet\` otherwise). ${RECEIPT_SHAPE}`,
        plugins: read,
        validate: { params: jobParams },
        response: { schema: receiptSchema },
      },
      handler: (request) => receipts.ofJob(paramsOf(request).job_id),
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/attempts/{attempt_id}/receipt',
      options: {
        id: 'getAttemptReceipt',
        tags,
        description: `The receipt of one attempt (404 when it is not the job's, or has none yet because it is still running). ${RECEIPT_SHAPE}`,
        plugins: read,
        pre: [attemptRef],
        validate: { params: attemptParams },
        response: { schema: receiptSchema },
      },
      handler: (request) => {
        const { job_id, attempt_id } = paramsOf(request);
        return receipts.ofAttempt(job_id, attempt_id);
      },
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/compare',
      options: {
        id: 'compareJobAttempts',
        tags,
        description: COMPARE_SHAPE,
        plugins: read,
        validate: { params: jobParams, query: compareQuery },
        response: { schema: comparisonSchema },
      },
      handler: (request) => {
        const { a, b, include_receipt } = queryOf<{ a: number; b: number; include_receipt: boolean }>(request);
        return comparison.compare(paramsOf(request).job_id, a, b, include_receipt);
      },
    },
  ];
}
