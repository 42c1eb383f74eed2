import { inject, injectable } from '../../core/di.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import { JobStatisticsToken, type JobStatistics, type Spend, type SpendFigures, type UsageRecord } from '../../core/ports/stats.ts';
import { windowStart, type ReportWindow } from '../../core/http/windows.ts';
import { OrgAccounts } from './accounts.ts';
import type { OrgBillingRow } from './repository.ts';

interface Report {
  org_id: string;
  window: ReportWindow;
  since: Date;
  as_of: Date;
  currency: string;
}

export type SpendReport = Report & Spend;
export type UsageReport = Report & { billing: OrgBillingRow; totals: SpendFigures; records: UsageRecord[] };

/** What an org spent in a window (its receipts, by project, model, harness and day), and the usage records behind it. */
@injectable()
export class SpendReports {
  constructor(
    @inject(OrgAccounts) private readonly accounts: OrgAccounts,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(JobStatisticsToken) private readonly stats: JobStatistics,
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
    return { ...report, ...(await this.stats.spend(projectIds, report.since, report.currency)) };
  }

  async usage(orgId: string, window: ReportWindow, limit: number): Promise<UsageReport> {
    const { billing, report, projectIds } = await this.scope(orgId, window);
    const [totals, records] = await Promise.all([
      this.stats.spendTotals(projectIds, report.since, report.currency),
      this.stats.usageRecords(projectIds, report.since, limit),
    ]);
    return { ...report, billing, totals, records };
  }
}
