import type { UsageCall } from '../../../core/ports/attempts.ts';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import type { AttemptRow } from '../attempts/attempts.ts';
import { ReceiptPricing } from './receipt-pricing.ts';
import {
  assembleReceipt,
  inDisplayOrder,
  usageSections,
  type CostSection,
  type LlmSection,
  type ModelUsageRow,
  type PhaseRow,
  type Receipt,
} from './receipt-assembly.ts';
import { roundToMicro } from '../../../domain/pricing/prices.ts';

/** One `llm.call`: usage only. The columns are the whole record: there is nowhere to put prompt or response text. */
export type LlmCall = UsageCall;
/** A job's ended attempts in three numbers (the job list's `figures`). */
export interface JobFigures {
  attempts: number;
  cost_usd: number;
  duration_ms: number;
}
export interface PhaseTiming {
  name: string;
  started_at: Date;
  ended_at: Date;
}
/** A stored receipt as the API returns it: the immutable receipt and when it was written. */
export type StoredReceipt = Receipt & { created_at: Date };

const toStored = (row: { receipt: Receipt; created_at: Date }): StoredReceipt => ({ ...inDisplayOrder(row.receipt), created_at: row.created_at });

/**
 * SQL for receipts and what they are assembled from: attempt_usage, attempt_phases, attempt_receipts.
 * `write` is called by AttemptRepository.end, the one place attempts end, in the ending transaction.
 */
@injectable()
export class ReceiptStore {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ReceiptPricing) private readonly pricing: ReceiptPricing,
  ) {}

  async addUsage(attemptId: string, calls: LlmCall[], trx: Db): Promise<number> {
    const rows = calls.map((c) => ({
      attempt_id: attemptId,
      model: c.model,
      provider: c.provider ?? null,
      input_tokens: c.input_tokens,
      output_tokens: c.output_tokens,
      cache_read_tokens: c.cache_read_tokens ?? 0,
      cache_write_tokens: c.cache_write_tokens ?? 0,
      reasoning_tokens: c.reasoning_tokens ?? 0,
      duration_ms: c.duration_ms ?? null,
      reported_cost_usd: c.reported_cost_usd ?? null,
    }));
    await trx('attempt_usage').insert(rows);
    return rows.length;
  }

  /** A phase reported again (a retried request, a corrected time) replaces the earlier report while the attempt runs. */
  async putPhases(attemptId: string, phases: PhaseTiming[], trx: Db): Promise<number> {
    const rows = phases.map((p) => ({ attempt_id: attemptId, name: p.name, started_at: p.started_at, ended_at: p.ended_at }));
    await trx('attempt_phases').insert(rows).onConflict(['attempt_id', 'name']).merge(['started_at', 'ended_at']);
    return rows.length;
  }

  /** Usage per model, model order. */
  async usageByModel(attemptId: string, trx: Db = this.db): Promise<ModelUsageRow[]> {
    const { rows } = await trx.raw(
      `SELECT model, count(*) AS calls,
              sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,
              sum(cache_write_tokens) AS cache_write_tokens, sum(reasoning_tokens) AS reasoning_tokens,
              coalesce(sum(duration_ms), 0) AS duration_ms,
              array_remove(array_agg(DISTINCT provider), NULL) AS providers,
              sum(reported_cost_usd) AS reported_cost_usd
       FROM attempt_usage WHERE attempt_id = ? GROUP BY model ORDER BY model`,
      [attemptId],
    );
    return rows;
  }

  /** A running attempt's usage so far, priced like its receipt will be (the card and rate in force when it started). */
  async liveSections(attemptId: string): Promise<{ llm: LlmSection; cost: CostSection }> {
    const attempt = await this.db('job_attempts as a').join('jobs as j', 'j.id', 'a.job_id').where('a.id', attemptId).first('a.started_at', 'j.project_id');
    return usageSections(await this.usageByModel(attemptId), await this.pricing.at(attempt.project_id, attempt.started_at));
  }

  phases(attemptId: string, trx: Db = this.db): Promise<PhaseRow[]> {
    return trx('attempt_phases').where({ attempt_id: attemptId }).orderBy(['started_at', 'name']).select('name', 'started_at', 'ended_at');
  }

  /**
   * Assembles and stores the receipt of an attempt that has just ended (in the ending transaction),
   * priced with the rate card and exchange rate in force when the attempt started.
   */
  async write(attempt: AttemptRow, trx: Db): Promise<Receipt> {
    const job = await trx('jobs').where({ id: attempt.job_id }).first('hints', 'project_id');
    const pricing = await this.pricing.at(job.project_id, attempt.started_at, trx);
    const receipt = assembleReceipt(attempt, job.hints ?? {}, await this.phases(attempt.id, trx), await this.usageByModel(attempt.id, trx), pricing);
    await trx('attempt_receipts').insert({ attempt_id: attempt.id, job_id: attempt.job_id, receipt: JSON.stringify(receipt) });
    return receipt;
  }

  async ofAttempt(attemptId: string): Promise<StoredReceipt | undefined> {
    const row = await this.db('attempt_receipts').where({ attempt_id: attemptId }).first('receipt', 'created_at');
    return row ? toStored(row) : undefined;
  }

  /**
   * What each job's ended attempts cost and took, summed from their receipts (base cost in USD, wall
   * time from start to end); a job with none is absent. One statement for a page of jobs.
   */
  async figuresOfJobs(jobIds: string[]): Promise<Map<string, JobFigures>> {
    if (jobIds.length === 0) return new Map();
    const { rows } = await this.db.raw(
      `SELECT job_id, count(*)::int AS attempts,
              coalesce(sum((receipt->'cost'->>'base_cost_usd')::numeric), 0) AS cost_usd,
              coalesce(sum(extract(epoch FROM (receipt->'timing'->>'ended_at')::timestamptz - (receipt->'timing'->>'started_at')::timestamptz) * 1000), 0)::bigint AS duration_ms
         FROM attempt_receipts WHERE job_id = ANY(?) GROUP BY job_id`,
      [jobIds],
    );
    return new Map(
      rows.map((r: Record<string, unknown>) => [
        r.job_id as string,
        { attempts: Number(r.attempts), cost_usd: roundToMicro(Number(r.cost_usd)), duration_ms: Number(r.duration_ms) },
      ]),
    );
  }

  /** The receipt of the job's highest-numbered attempt that has one. */
  async latestOfJob(jobId: string): Promise<StoredReceipt | undefined> {
    const row = await this.db('attempt_receipts as r')
      .join('job_attempts as a', 'a.id', 'r.attempt_id')
      .where('r.job_id', jobId)
      .orderBy('a.attempt_number', 'desc')
      .first('r.receipt', 'r.created_at');
    return row ? toStored(row) : undefined;
  }
}
