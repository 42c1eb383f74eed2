import { inject, injectable } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { paginate, type ListQuery, type Page } from '../../core/http/lists.ts';
import type { ModelPrice } from '../../domain/pricing/prices.ts';
import { SharedMemos, type SharedMemo } from '../../core/db/shared-memos.ts';
import { Batcher } from '../../core/batcher.ts';

export interface RateCardRow {
  id: string;
  name: string;
  effective_at: Date;
  provenance: string;
  models: Record<string, ModelPrice>;
  compute: Record<string, number>;
  created_by: string | null;
  created_at: Date;
}

export interface ExchangeRateRow {
  id: string;
  currency: string;
  rate_to_usd: number;
  effective_at: Date;
  created_by: string | null;
  created_at: Date;
}

export type BudgetMode = 'refuse' | 'warn';

export interface OrgBillingRow {
  org_id: string;
  currency: string;
  monthly_budget: number | null;
  budget_mode: BudgetMode;
  balance: number | null;
  balance_threshold: number | null;
  below_threshold_since: Date | null;
  updated_at: Date;
}

export type OrgBillingChanges = Partial<Pick<OrgBillingRow, 'currency' | 'monthly_budget' | 'budget_mode' | 'balance_threshold'>>;

/** What admitting a new job reads of its org's billing. */
export type BudgetSettings = Pick<OrgBillingRow, 'currency' | 'monthly_budget' | 'budget_mode'>;
const BUDGET_FIELDS = ['currency', 'monthly_budget', 'budget_mode'] as const;
/** A statement that may change budget settings (a balance drawn down by a receipt does not). */
const BUDGET_WRITE =
  /^\s*(?:(?:insert\s+into|delete\s+from)\s+"?org_billing"?[\s(]|update\s+"?org_billing"?\s+set\b[^;]*\b(?:currency|monthly_budget|budget_mode)\b)/i;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const toRate = (row: Record<string, unknown>): ExchangeRateRow => ({ ...(row as unknown as ExchangeRateRow), rate_to_usd: Number(row.rate_to_usd) });
const toBilling = (row: Record<string, unknown>): OrgBillingRow => ({
  ...(row as unknown as OrgBillingRow),
  monthly_budget: num(row.monthly_budget),
  balance: num(row.balance),
  balance_threshold: num(row.balance_threshold),
});

/** Settings of an org that has none stored yet. */
export const defaultBilling = (orgId: string): OrgBillingRow => ({
  org_id: orgId,
  currency: 'USD',
  monthly_budget: null,
  budget_mode: 'refuse',
  balance: null,
  balance_threshold: null,
  below_threshold_since: null,
  updated_at: new Date(0),
});

/** SQL for rate cards, exchange rates and org billing settings. */
@injectable()
export class BillingRepository {
  private readonly knownBudgets: SharedMemo<BudgetSettings>;

  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(SharedMemos) memos: SharedMemos,
  ) {
    this.knownBudgets = memos.memo('org-budgets', BUDGET_WRITE);
  }

  /** Inserts a card unless one with its id or effective_at exists; whether it was inserted. */
  async insertCard(card: Omit<RateCardRow, 'created_at'>, trx: Db = this.db): Promise<RateCardRow | null> {
    const [row] = await trx('rate_cards')
      .insert({ ...card, models: JSON.stringify(card.models), compute: JSON.stringify(card.compute) })
      .onConflict()
      .ignore()
      .returning('*');
    return row ?? null;
  }

  card(id: string): Promise<RateCardRow | undefined> {
    return this.db('rate_cards').where({ id }).first();
  }

  /** The card with the latest effective_at at or before `at`. */
  cardAt(at: Date, trx: Db = this.db): Promise<RateCardRow | undefined> {
    return trx('rate_cards').where('effective_at', '<=', at).orderBy('effective_at', 'desc').first();
  }

  cards(query: ListQuery): Promise<Page<RateCardRow>> {
    return paginate<RateCardRow, RateCardRow>(this.db('rate_cards'), query, (r) => r, 'rate_cards');
  }

  async insertRate(rate: Omit<ExchangeRateRow, 'created_at'>): Promise<ExchangeRateRow | null> {
    const [row] = await this.db('exchange_rates').insert(rate).onConflict(['currency', 'effective_at']).ignore().returning('*');
    return row ? toRate(row) : null;
  }

  async rateAt(currency: string, at: Date, trx: Db = this.db): Promise<number | null> {
    const row = await trx('exchange_rates').where({ currency }).where('effective_at', '<=', at).orderBy('effective_at', 'desc').first('rate_to_usd');
    return row ? Number(row.rate_to_usd) : null;
  }

  async hasRate(currency: string): Promise<boolean> {
    return Boolean(await this.db('exchange_rates').where({ currency }).first('id'));
  }

  async rates(query: ListQuery & { currency?: string }): Promise<Page<ExchangeRateRow>> {
    const base = this.db('exchange_rates');
    if (query.currency) base.where({ currency: query.currency });
    return paginate(base, query, toRate, 'exchange_rates');
  }

  async billing(orgId: string, trx: Db = this.db): Promise<OrgBillingRow> {
    const row = await trx('org_billing').where({ org_id: orgId }).first();
    return row ? toBilling(row) : defaultBilling(orgId);
  }

  /** The billing of each org, in order (the defaults for an org without a row). */
  async billings(orgIds: string[]): Promise<OrgBillingRow[]> {
    const rows = await this.db('org_billing').whereIn('org_id', [...new Set(orgIds)]);
    const byOrg = new Map(rows.map((r) => [r.org_id, toBilling(r)]));
    return orgIds.map((id) => byOrg.get(id) ?? defaultBilling(id));
  }

  /** The org's budget settings, remembered per process until they change (updateBilling); concurrent misses share one read. */
  async budgetSettings(orgId: string): Promise<BudgetSettings> {
    return (await this.knownBudgets.get(orgId, () => this.budgetReads.submit(orgId)))!;
  }

  private readonly budgetReads = new Batcher<string, BudgetSettings>(async (orgIds) =>
    (await this.billings(orgIds)).map((b) => ({ currency: b.currency, monthly_budget: b.monthly_budget, budget_mode: b.budget_mode })),
  );

  /** The org's row, locked for the transaction (created with the defaults when missing). */
  async lockBilling(orgId: string, trx: Db): Promise<OrgBillingRow> {
    await trx('org_billing').insert({ org_id: orgId }).onConflict('org_id').ignore();
    return toBilling(await trx('org_billing').where({ org_id: orgId }).forUpdate().first());
  }

  async updateBilling(orgId: string, changes: Partial<OrgBillingRow>, trx: Db): Promise<OrgBillingRow> {
    const [row] = await trx('org_billing')
      .where({ org_id: orgId })
      .update({ ...changes, updated_at: trx.fn.now() })
      .returning('*');
    if (BUDGET_FIELDS.some((f) => f in changes)) this.knownBudgets.changed(trx, orgId);
    return toBilling(row);
  }
}
