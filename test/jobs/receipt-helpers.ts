import type { ExecutionContext } from 'ava';
import type { Reply } from '../support/server.ts';
import type { World } from './claim-helpers.ts';

type Attempt = { id: string; lease_token: string };

/** POST …/usage with the attempt's lease token (or `token`). */
export const postUsage = (w: World, jobId: string, attempt: Attempt, calls: unknown[], token = attempt.lease_token): Promise<Reply> =>
  w.owner.api.post(`/jobs/${jobId}/attempts/${attempt.id}/usage`, { lease_token: token, calls });

/** POST …/phases with the attempt's lease token (or `token`). */
export const postPhases = (w: World, jobId: string, attempt: Attempt, phases: unknown[], token = attempt.lease_token): Promise<Reply> =>
  w.owner.api.post(`/jobs/${jobId}/attempts/${attempt.id}/phases`, { lease_token: token, phases });

/** Records usage and insists on 201 `{recorded: n}`. */
export async function recordUsage(t: ExecutionContext, w: World, jobId: string, attempt: Attempt, calls: unknown[]): Promise<void> {
  const res = await postUsage(w, jobId, attempt, calls);
  t.is(res.statusCode, 201, JSON.stringify(res.body));
  t.deepEqual(res.body, { recorded: calls.length });
}

/** GET the receipt of one attempt and insist on 200. */
export async function receiptOf(t: ExecutionContext, w: World, jobId: string, attemptId: string): Promise<any> {
  const res = await w.owner.api.get(`/jobs/${jobId}/attempts/${attemptId}/receipt`);
  t.is(res.statusCode, 200, JSON.stringify(res.body));
  return res.body;
}

export const usageRows = (w: World, attemptId: string) => w.db('attempt_usage').where({ attempt_id: attemptId }).orderBy('id');
export const phaseRows = (w: World, attemptId: string) => w.db('attempt_phases').where({ attempt_id: attemptId }).orderBy('name');
export const receiptRows = (w: World, jobId: string) => w.db('attempt_receipts').where({ job_id: jobId });

export const RECEIPT_FIELDS = [
  'attempt_id',
  'attempt_number',
  'compute',
  'cost',
  'created_at',
  'job_id',
  'llm',
  'receipt_version',
  'result_status',
  'status',
  'timing',
  'workspace',
];
export const ZERO_LLM = {
  calls: 0,
  input_tokens: 0,
  output_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  reasoning_tokens: 0,
  duration_ms: 0,
  models: {},
};
