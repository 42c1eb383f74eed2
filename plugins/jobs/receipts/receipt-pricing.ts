import type { InjectionToken } from 'tsyringe';
import { inject, injectable } from '../../../core/di.ts';
import type { Db } from '../../../core/db/knex.ts';
import type { PriceBook, PricingContext } from '../../../core/ports/billing.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../../core/ports/directory.ts';
import { BUILTIN_PRICING } from './receipt-assembly.ts';

export const PriceBookLookup = Symbol('PriceBookLookup') as InjectionToken<() => PriceBook | null>;

/**
 * What a project's usage is priced with at an instant: the billing domain's card and rate in force
 * for the project's org, or without a billing domain the built-in table in USD.
 */
@injectable()
export class ReceiptPricing {
  constructor(
    @inject(PriceBookLookup) private readonly book: () => PriceBook | null,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
  ) {}

  async at(projectId: string, at: Date, trx?: Db): Promise<PricingContext> {
    const book = this.book();
    if (!book) return BUILTIN_PRICING;
    const project = await this.projects.byId(projectId, trx);
    return project ? book.forOrg(project.org_id, at, trx) : BUILTIN_PRICING;
  }

  /** USD per unit of `currency` at `at` (1 for USD; null without a rate or a billing domain, except USD). */
  async rate(currency: string, at: Date, trx?: Db): Promise<number | null> {
    if (currency === 'USD') return 1;
    return (await this.book()?.rate(currency, at, trx)) ?? null;
  }
}
