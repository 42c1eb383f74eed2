import { inject, injectable } from '../../core/di.ts';
import type { Db } from '../../core/db/knex.ts';
import { newId } from '../../core/ids.ts';
import { Conflict, NotFound } from '../../core/errors.ts';
import type { ListQuery, Page } from '../../core/http/lists.ts';
import type { PriceBook, PricingContext } from '../../core/ports/billing.ts';
import { PRICES, PRICE_TABLE_ID, type ModelPrice } from '../../domain/pricing/prices.ts';
import { BillingRepository, type ExchangeRateRow, type RateCardRow } from './repository.ts';

/** The first card: the built-in table, in force since the epoch so every attempt has a card. */
export const SEED_CARD = {
  id: PRICE_TABLE_ID,
  name: 'Built-in list prices (late 2025)',
  effective_at: new Date(0),
  provenance:
    "svc's built-in table (domain/pricing/prices.ts): providers' public standard-tier list prices as of late 2025, written from memory and not verified against the providers' price pages; placeholders until an administrator posts a verified card",
};

export interface NewRateCard {
  name: string;
  effective_at?: Date;
  provenance: string;
  models: Record<string, ModelPrice>;
  compute: Record<string, number>;
}

export interface NewExchangeRate {
  currency: string;
  rate_to_usd: number;
  effective_at?: Date;
}

/** Rate cards and exchange rates (system administrator), and what is in force at an instant (the PriceBook port). */
@injectable()
export class Pricing implements PriceBook {
  constructor(@inject(BillingRepository) private readonly repo: BillingRepository) {}

  /** Stores the seed card once (a no-op when it exists). */
  async seed(): Promise<void> {
    await this.repo.insertCard({ ...SEED_CARD, models: PRICES as Record<string, ModelPrice>, compute: {}, created_by: null });
  }

  async createCard(input: NewRateCard, by: string): Promise<RateCardRow> {
    // Stored complete, so receipts never meet an absent class: cache writes default to the input price.
    const models = Object.fromEntries(
      Object.entries(input.models).map(([id, price]) => [id.trim().toLowerCase(), { ...price, cache_write: price.cache_write ?? price.input }]),
    );
    const effective = input.effective_at ?? new Date();
    const row = await this.repo.insertCard({
      id: newId('rc'),
      name: input.name,
      effective_at: effective,
      provenance: input.provenance,
      models,
      compute: input.compute,
      created_by: by,
    });
    if (!row) throw new Conflict(`a rate card already takes effect at ${effective.toISOString()}`);
    return row;
  }

  async card(id: string): Promise<RateCardRow> {
    const card = await this.repo.card(id);
    if (!card) throw new NotFound(`rate card ${id} not found`);
    return card;
  }

  cards(query: ListQuery): Promise<Page<RateCardRow>> {
    return this.repo.cards(query);
  }

  /** The card in force at `at` (404 when none is). */
  async cardInForce(at: Date): Promise<RateCardRow> {
    const card = await this.repo.cardAt(at);
    if (!card) throw new NotFound(`no rate card is in force at ${at.toISOString()}`);
    return card;
  }

  async createRate(input: NewExchangeRate, by: string): Promise<ExchangeRateRow> {
    const effective = input.effective_at ?? new Date();
    const row = await this.repo.insertRate({
      id: newId('fx'),
      currency: input.currency,
      rate_to_usd: input.rate_to_usd,
      effective_at: effective,
      created_by: by,
    });
    if (!row) throw new Conflict(`a ${input.currency} rate already takes effect at ${effective.toISOString()}`);
    return row;
  }

  rates(query: ListQuery & { currency?: string }): Promise<Page<ExchangeRateRow>> {
    return this.repo.rates(query);
  }

  async rate(currency: string, at: Date, trx?: Db): Promise<number | null> {
    return currency === 'USD' ? 1 : this.repo.rateAt(currency, at, trx);
  }

  async forOrg(orgId: string, at: Date, trx?: Db): Promise<PricingContext> {
    const [card, billing] = await Promise.all([this.repo.cardAt(at, trx), this.repo.billing(orgId, trx)]);
    return {
      card: card ? { id: card.id, models: card.models, compute: card.compute } : null,
      currency: billing.currency,
      rate_to_usd: await this.rate(billing.currency, at, trx),
    };
  }
}
