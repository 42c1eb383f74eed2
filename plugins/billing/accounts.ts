import type { Logger } from 'pino';
import { inject, injectable } from '../../core/di.ts';
import type { InjectionToken } from 'tsyringe';
import { Tokens } from '../../core/tokens.ts';
import type { Db } from '../../core/db/knex.ts';
import { emitEvent } from '../../core/events/emit.ts';
import { Invalid, NotFound } from '../../core/errors.ts';
import type { EndedAttempt } from '../../core/ports/attempts.ts';
import type { EnvironmentSuspension } from '../../core/ports/environments.ts';
import { OrgDirectoryToken, ProjectDirectoryToken, type OrgDirectory, type ProjectDirectory } from '../../core/ports/directory.ts';
import { JobStatisticsToken, type JobStatistics } from '../../core/ports/stats.ts';
import type { JobPlace } from '../../core/ports/jobs.ts';
import { BillingRepository, type OrgBillingChanges, type OrgBillingRow } from './repository.ts';
import { Pricing } from './pricing.ts';
import { roundToMicro } from '../../domain/pricing/prices.ts';

export const EnvironmentSuspensionLookup = Symbol('EnvironmentSuspensionLookup') as InjectionToken<() => EnvironmentSuspension | null>;

/** The first instant of `now`'s calendar month, UTC: monthly budgets reset then. */
export const monthStart = (now: Date): Date => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));

/**
 * An org's billing: its currency, monthly budget (refused or only warned about when over), and its
 * balance, drawn down by every receipt billed in the org's currency; falling below the threshold
 * emits `system.org.balance_low` and suspends the org's environments through the environments seam.
 */
@injectable()
export class OrgAccounts {
  constructor(
    @inject(Tokens.Db) private readonly db: Db,
    @inject(Tokens.Logger) private readonly logger: Logger,
    @inject(BillingRepository) private readonly repo: BillingRepository,
    @inject(Pricing) private readonly pricing: Pricing,
    @inject(OrgDirectoryToken) private readonly orgs: OrgDirectory,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(JobStatisticsToken) private readonly stats: JobStatistics,
    @inject(EnvironmentSuspensionLookup) private readonly suspension: () => EnvironmentSuspension | null,
  ) {}

  async requireOrg(orgId: string): Promise<void> {
    const org = await this.orgs.byId(orgId);
    if (!org || org.deleted) throw new NotFound(`org ${orgId} not found`);
  }

  async settings(orgId: string): Promise<OrgBillingRow> {
    await this.requireOrg(orgId);
    return this.repo.billing(orgId);
  }

  /** A currency other than USD needs an exchange rate, or nothing could be billed in it. */
  async change(orgId: string, changes: OrgBillingChanges): Promise<OrgBillingRow> {
    await this.requireOrg(orgId);
    if (changes.currency && changes.currency !== 'USD' && !(await this.repo.hasRate(changes.currency))) {
      throw new Invalid(`no exchange rate for ${changes.currency}: a system administrator adds one under /admin/pricing/exchange-rates first`);
    }
    return this.db.transaction(async (trx) => {
      const current = await this.repo.lockBilling(orgId, trx);
      const updated = await this.repo.updateBilling(orgId, changes, trx);
      return this.checkThreshold(current, updated, null, trx);
    });
  }

  /** Adds to the balance (a negative amount corrects it down); the first credit starts tracking a balance. */
  async credit(orgId: string, amount: number): Promise<OrgBillingRow> {
    await this.requireOrg(orgId);
    return this.db.transaction(async (trx) => {
      const current = await this.repo.lockBilling(orgId, trx);
      const updated = await this.repo.updateBilling(orgId, { balance: roundToMicro((current.balance ?? 0) + amount) }, trx);
      return this.checkThreshold(current, updated, null, trx);
    });
  }

  /** The AttemptCompletionListener: the receipt's billed cost comes off the balance, when the org keeps one. */
  readonly attemptEnded = async ({ job, cost }: EndedAttempt, trx: Db): Promise<void> => {
    const project = await this.projects.byId(job.project_id, trx);
    if (!project) return;
    const current = await this.repo.billing(project.org_id, trx);
    if (current.balance === null) return;
    const amount = await this.inCurrency(cost, current.currency, trx);
    if (!amount) return;
    const locked = await this.repo.lockBilling(project.org_id, trx);
    const updated = await this.repo.updateBilling(project.org_id, { balance: roundToMicro((locked.balance ?? 0) - amount) }, trx);
    await this.checkThreshold(locked, updated, job.project_id, trx);
  };

  /** The receipt's cost in `currency`: as billed, or its USD at the rate in force now; null without a rate (fail-open). */
  private async inCurrency(cost: EndedAttempt['cost'], currency: string, trx: Db): Promise<number | null> {
    if (cost.billed_cost.currency === currency) return cost.billed_cost.amount;
    const rate = await this.pricing.rate(currency, new Date(), trx);
    return rate ? cost.base_cost_usd / rate : null;
  }

  /**
   * Crossing below the threshold (from at or above it, or when it is first set) emits the event on
   * every live project of the org and suspends its environments; coming back up clears the mark.
   */
  private async checkThreshold(before: OrgBillingRow, after: OrgBillingRow, causedBy: string | null, trx: Db): Promise<OrgBillingRow> {
    const below = after.balance !== null && after.balance_threshold !== null && after.balance < after.balance_threshold;
    if (!below) return before.below_threshold_since ? this.repo.updateBilling(after.org_id, { below_threshold_since: null }, trx) : after;
    if (before.below_threshold_since) return after;
    const marked = await this.repo.updateBilling(after.org_id, { below_threshold_since: new Date() }, trx);
    const reason = `balance ${after.balance} ${after.currency} fell below the threshold ${after.balance_threshold} ${after.currency}`;
    const suspended = (await this.suspension()?.suspendOrg(after.org_id, reason, trx)) ?? 0;
    for (const projectId of await this.projects.liveIdsInOrg(after.org_id, trx)) {
      await emitEvent(trx, {
        project_id: projectId,
        type: 'system.org.balance_low',
        source: 'system',
        actor_type: 'system',
        payload: {
          org_id: after.org_id,
          balance: after.balance,
          threshold: after.balance_threshold,
          currency: after.currency,
          caused_by_project_id: causedBy,
          environments_suspended: suspended,
        },
      });
    }
    this.logger.warn({ org_id: after.org_id, suspended }, reason);
    return marked;
  }

  /** The JobAdmission: an org at or over its monthly budget refuses new jobs (422), or in warn mode says so once a month per project. */
  readonly admit = async ({ projectId, orgId }: JobPlace): Promise<void> => {
    const billing = await this.repo.budgetSettings(orgId);
    if (billing.monthly_budget === null) return;
    const since = monthStart(new Date());
    const spent = (await this.stats.spendTotals(await this.projects.idsInOrg(orgId), since, billing.currency)).billed_cost;
    if (spent < billing.monthly_budget) return;
    const message = `org ${orgId} is over its monthly budget: ${spent} ${billing.currency} spent since ${since.toISOString().slice(0, 10)} of ${billing.monthly_budget} ${billing.currency}`;
    if (billing.budget_mode === 'refuse')
      throw new Invalid(`${message}; no new jobs until next month or a higher monthly_budget (PATCH /orgs/${orgId}/billing)`);
    await this.db.transaction((trx) =>
      emitEvent(trx, {
        project_id: projectId,
        type: 'system.org.budget_exceeded',
        source: 'system',
        actor_type: 'system',
        dedupe_key: `budget_exceeded:${since.toISOString().slice(0, 7)}`,
        payload: { org_id: orgId, spent, monthly_budget: billing.monthly_budget, currency: billing.currency, mode: 'warn' },
      }),
    );
    this.logger.warn({ org_id: orgId, project_id: projectId }, message);
  };
}
