import type { InjectionToken } from 'tsyringe';
import type { Db } from '../db/knex.ts';
import type { ModelPrice } from '../../domain/pricing/prices.ts';

/** A rate card as receipts use it: per model prices (USD per million tokens) and compute (USD per minute per resource class). */
export interface RateCardPrices {
  id: string;
  models: Record<string, ModelPrice>;
  compute: Record<string, number>;
}

/** What an org's usage at one instant is priced with: the card in force, the org's currency and its rate in force. */
export interface PricingContext {
  /** Null when no card is in force: everything is unpriced (fail-open). */
  card: RateCardPrices | null;
  currency: string;
  /** USD per unit of `currency` (1 for USD); null when no rate is in force (billed_cost stays unconverted). */
  rate_to_usd: number | null;
}

/** Prices and exchange rates in force at an instant (the billing domain registers it). */
export interface PriceBook {
  forOrg(orgId: string, at: Date, trx?: Db): Promise<PricingContext>;
  /** USD per unit of `currency` at `at`: 1 for USD, null when no rate is in force. */
  rate(currency: string, at: Date, trx?: Db): Promise<number | null>;
}

export const PriceBookToken = Symbol('PriceBook') as InjectionToken<PriceBook>;
