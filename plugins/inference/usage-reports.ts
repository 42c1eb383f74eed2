import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import type { GatewayCallGroup, GatewayCallRecord, GatewayUsage } from '../../core/ports/gateway-usage.ts';

const TOKEN_COLUMNS = ['input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'reasoning_tokens'] as const;

/** The org's gateway calls made outside jobs (`job_id IS NULL`), for billing's spend and usage reports. */
@injectable()
export class GatewayUsageReports implements GatewayUsage {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  private outsideJobs(orgId: string, since: Date) {
    return this.db('inference_usage').where({ org_id: orgId }).whereNull('job_id').where('created_at', '>=', since);
  }

  async groups(orgId: string, since: Date): Promise<GatewayCallGroup[]> {
    const rows = await this.outsideJobs(orgId, since)
      .select('principal_kind', 'principal_id', 'upstream_model', 'provider_kind as provider')
      .select(this.db.raw(`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day`))
      .select(this.db.raw('count(*)::int AS calls'), this.db.raw('max(created_at) AS last_at'))
      .select(TOKEN_COLUMNS.map((c) => this.db.raw(`COALESCE(sum(${c}), 0)::bigint AS ${c}`)))
      .groupBy('principal_kind', 'principal_id', 'upstream_model', 'provider_kind', 'day')
      .orderBy('day');
    return rows.map((r: any) => ({ ...r, ...Object.fromEntries(TOKEN_COLUMNS.map((c) => [c, Number(r[c])])) }));
  }

  async records(orgId: string, since: Date, limit: number): Promise<GatewayCallRecord[]> {
    return this.outsideJobs(orgId, since)
      .select(
        'principal_kind',
        'principal_id',
        'project_id',
        'model',
        'upstream_model',
        'provider_kind as provider',
        'status',
        'latency_ms',
        'created_at',
        ...TOKEN_COLUMNS,
      )
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit);
  }
}
