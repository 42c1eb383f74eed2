import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { SealedColumn } from '../../core/crypto/sealed-columns.ts';
import type { WebhookFilter } from './matching.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';

export interface SubscriptionRow {
  id: string;
  org_id: string;
  project_id: string | null;
  url: string;
  events: string[];
  filter: WebhookFilter;
  secret_enc: string;
  enabled: boolean;
  consecutive_failures: number;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_by: string | null;
  created_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export type Subscription = Omit<SubscriptionRow, 'secret_enc'>;

export interface SubscriptionFilters extends ListQuery {
  project_id?: string;
  enabled?: boolean;
}

/** The response shape: everything but the sealed secret. */
export function toSubscription({ secret_enc: _secret, ...rest }: SubscriptionRow): Subscription {
  return rest;
}

/** The AAD a subscription's secret is sealed under; plugins/secrets/rekey.ts repeats it. */
export const secretContext = (id: string): string => `webhook-secret:${id}`;

/** The subscriptions' signing secrets, for the master-key rekey. */
export const WEBHOOK_SECRET_SEALS: SealedColumn = {
  table: 'webhook_subscriptions',
  key: 'id',
  column: 'secret_enc',
  context: (r) => secretContext(r.id as string),
};

@injectable()
export class SubscriptionRepository {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  /**
   * Inserts the subscription unless its org already has `limit` live ones (limits.org.webhooks): then
   * nothing is written and the count comes back. Creations of one org take a transaction-scoped
   * advisory lock first, so two at once cannot both pass the last free place.
   */
  async insertWithin(
    row: Omit<SubscriptionRow, 'consecutive_failures' | 'disabled_at' | 'disabled_reason' | 'created_at' | 'updated_at' | 'deleted_at'>,
    limit: number,
  ): Promise<{ created: SubscriptionRow } | { count: number }> {
    return this.db.transaction(async (trx) => {
      await trx.raw("SELECT pg_advisory_xact_lock(hashtext('webhook_subscriptions'), hashtext(?))", [row.org_id]);
      const { n } = (await trx('webhook_subscriptions').where({ org_id: row.org_id }).whereNull('deleted_at').count({ n: '*' }).first()) as { n: string };
      if (Number(n) >= limit) return { count: Number(n) };
      const [created] = await trx('webhook_subscriptions')
        .insert({ ...row, filter: JSON.stringify(row.filter) })
        .returning('*');
      return { created };
    });
  }

  /** A live (not deleted) subscription of the org. */
  live(orgId: string, id: string, db: Db = this.db): Promise<SubscriptionRow | undefined> {
    return db('webhook_subscriptions').where({ id, org_id: orgId }).whereNull('deleted_at').first();
  }

  /** The live subscriptions of exactly that scope (org-wide: no project) to `url`, newest first. */
  liveAt(orgId: string, projectId: string | null, url: string): Promise<SubscriptionRow[]> {
    return this.db('webhook_subscriptions')
      .where({ org_id: orgId, project_id: projectId, url })
      .whereNull('deleted_at')
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]);
  }

  lock(id: string, trx: Db): Promise<SubscriptionRow | undefined> {
    return trx('webhook_subscriptions').where({ id }).whereNull('deleted_at').forUpdate().first();
  }

  list(orgId: string, f: SubscriptionFilters): Promise<Page<Subscription>> {
    const q = this.db('webhook_subscriptions').where({ org_id: orgId });
    if (!f.include_deleted) q.whereNull('deleted_at');
    if (f.project_id) q.where('project_id', f.project_id);
    if (f.enabled !== undefined) q.where('enabled', f.enabled);
    return paginate(q, f, toSubscription, 'webhook_subscriptions');
  }

  async update(id: string, changes: Partial<SubscriptionRow>, db: Db = this.db): Promise<SubscriptionRow> {
    const [row] = await db('webhook_subscriptions')
      .where({ id })
      .update({ ...changes, updated_at: db.fn.now() })
      .returning('*');
    return row;
  }

  async softDelete(id: string): Promise<void> {
    await this.db('webhook_subscriptions').where({ id }).update({ enabled: false, deleted_at: this.db.fn.now(), updated_at: this.db.fn.now() });
  }

  /**
   * Applies a batch of attempt outcomes to the failure counts, in id order (locks taken in one
   * order, so concurrent batches cannot deadlock): `reset` when an attempt succeeded, `tail` the
   * failures after the last success. Disables those reaching `disableAfter`; returns their ids.
   */
  async countOutcomes(trx: Db, counts: { id: string; reset: boolean; tail: number }[], disableAfter: number): Promise<string[]> {
    if (counts.length === 0) return [];
    await trx('webhook_subscriptions')
      .whereIn(
        'id',
        counts.map((c) => c.id),
      )
      .orderBy('id')
      .forUpdate()
      .select('id');
    const next = 'CASE WHEN v.reset THEN v.tail ELSE s.consecutive_failures + v.tail END';
    const { rows } = await trx.raw(
      `UPDATE webhook_subscriptions s SET
         consecutive_failures = ${next},
         enabled = s.enabled AND ${next} < :max,
         disabled_at = CASE WHEN s.enabled AND ${next} >= :max THEN now() ELSE s.disabled_at END,
         disabled_reason = CASE WHEN s.enabled AND ${next} >= :max THEN :reason ELSE s.disabled_reason END,
         updated_at = now()
       FROM jsonb_to_recordset(CAST(:counts AS jsonb)) AS v(id text, reset boolean, tail int)
       WHERE s.id = v.id AND (v.tail > 0 OR s.consecutive_failures > 0)
       RETURNING s.id, (s.disabled_at = now()) AS disabled_now`,
      { max: disableAfter, reason: `${disableAfter} consecutive failed deliveries`, counts: JSON.stringify(counts) },
    );
    return rows.filter((r: { disabled_now: boolean }) => r.disabled_now).map((r: { id: string }) => r.id);
  }

  /** The project's org and whether it is deleted. */
  project(id: string): Promise<{ org_id: string; deleted: boolean } | undefined> {
    return this.projects.byId(id);
  }

  /** Live, enabled subscriptions of these orgs: the candidates for a batch of events. */
  enabledIn(orgIds: string[], db: Db = this.db): Promise<SubscriptionRow[]> {
    return db('webhook_subscriptions').whereIn('org_id', orgIds).where('enabled', true).whereNull('deleted_at');
  }
}
