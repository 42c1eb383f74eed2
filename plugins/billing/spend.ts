import type { InjectionToken } from 'tsyringe';
import { inject, injectable } from '../../core/di.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import { JobStatisticsToken, type JobStatistics, type Spend, type SpendFigures, type UsageRecord } from '../../core/ports/stats.ts';
import { windowStart, type ReportWindow } from '../../core/http/windows.ts';
import { PriceBookToken, type PriceBook } from '../../core/ports/billing.ts';
import type { GatewayCallRecord, GatewayUsage } from '../../core/ports/gateway-usage.ts';
import { OrgAccounts } from './accounts.ts';
import { gatewayRecords, gatewaySpend, type GatewayFigures, type GatewaySpend } from './gateway-spend.ts';
import type { OrgBillingRow } from './repository.ts';

interface Report {
  org_id: string;
  window: ReportWindow;
  since: Date;
  as_of: Date;
  currency: string;
}

/** Gateway calls made outside jobs: a user's or a service account's token (job calls are on the receipts already). */
export type SpendReport = Report & Spend & { outside_jobs: GatewaySpend };
export type UsageReport = Report & {
  billing: OrgBillingRow;
  totals: SpendFigures;
  records: UsageRecord[];
  outside_jobs: { totals: GatewayFigures; records: GatewayCallRecord[] };
};

/** The inference domain's gateway usage, when it is loaded. */
export const GatewayUsageLookup = Symbol('GatewayUsageLookup') as InjectionToken<() => GatewayUsage | null>;

/** What an org spent in a window (its receipts, by project, model, harness and day), and the usage records behind it. */
@injectable()
export class SpendReports {
  constructor(
    @inject(OrgAccounts) private readonly accounts: OrgAccounts,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(JobStatisticsToken) private readonly stats: JobStatistics,
    @inject(PriceBookToken) private readonly prices: PriceBook,
    @inject(GatewayUsageLookup) private readonly gateway: () => GatewayUsage | null,
  ) {}

  /** Deleted projects' receipts still count: the money was spent. */
  private async scope(orgId: string, window: ReportWindow) {
    const billing = await this.accounts.settings(orgId);
    const asOf = new Date();
    const since = windowStart(window, asOf);
    const report: Report = { org_id: orgId, window, since, as_of: asOf, currency: billing.currency };
    return { billing, report, projectIds: await this.projects.idsInOrg(orgId) };
  }

  async spend(orgId: string, window: ReportWindow): Promise<SpendReport> {
    const { report, projectIds } = await this.scope(orgId, window);
    const [spend, outside] = await Promise.all([
      this.stats.spend(projectIds, report.since, report.currency),
      gatewaySpend(this.gateway(), this.prices, orgId, report.since, report.currency),
    ]);
    return { ...report, ...spend, outside_jobs: outside };
  }

  async usage(orgId: string, window: ReportWindow, limit: number): Promise<UsageReport> {
    const { billing, report, projectIds } = await this.scope(orgId, window);
    const [totals, records, outside, outsideRecords] = await Promise.all([
      this.stats.spendTotals(projectIds, report.since, report.currency),
      this.stats.usageRecords(projectIds, report.since, limit),
      gatewaySpend(this.gateway(), this.prices, orgId, report.since, report.currency),
      gatewayRecords(this.gateway(), orgId, report.since, limit),
    ]);
    return { ...report, billing, totals, records, outside_jobs: { totals: outside.totals, records: outsideRecords } };
  }
}
