import { inject, injectable } from '../../core/di.ts';
import { EnvironmentDirectoryLookup, type EnvironmentDirectory, type EnvironmentStatus } from '../../core/ports/environments.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import { JobStatisticsToken, PipelineStatisticsToken, type JobStatistics, type PipelineStatistics } from '../../core/ports/stats.ts';
import { windowStart, type ReportWindow } from '../../core/http/windows.ts';

const pipelineFigures = ({ runs, success_rate, avg_duration_seconds }: { runs: number; success_rate: number; avg_duration_seconds: number }) => ({
  runs,
  success_rate,
  avg_duration_seconds,
});

/**
 * An org's analytics over its live projects: jobs and pipeline runs of a window (through the jobs
 * and pipelines domains' statistics ports) and its environments' health (through the environments
 * seam, empty until an environments domain fills it). An org with nothing answers zeros.
 */
@injectable()
export class Analytics {
  constructor(
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(JobStatisticsToken) private readonly jobs: JobStatistics,
    @inject(PipelineStatisticsToken) private readonly pipelines: PipelineStatistics,
    @inject(EnvironmentDirectoryLookup) private readonly environments: () => EnvironmentDirectory | null,
  ) {}

  private async scope(orgId: string, window: ReportWindow) {
    const asOf = new Date();
    return { asOf, since: windowStart(window, asOf), projectIds: await this.projects.liveIdsInOrg(orgId) };
  }

  private async environmentsOf(projectIds: string[]): Promise<EnvironmentStatus[]> {
    const directory = this.environments();
    return directory && projectIds.length ? directory.ofProjects(projectIds) : [];
  }

  async summary(orgId: string, window: ReportWindow) {
    const { asOf, since, projectIds } = await this.scope(orgId, window);
    const [jobs, pipelines, environments] = await Promise.all([
      this.jobs.counts(projectIds, since),
      this.pipelines.summary(projectIds, since),
      this.environmentsOf(projectIds),
    ]);
    const health = (status: string) => environments.filter((e) => e.status === status).length;
    return {
      as_of: asOf,
      window,
      projects: projectIds.length,
      jobs,
      pipelines: pipelineFigures(pipelines),
      environments: { total: environments.length, healthy: health('healthy'), degraded: health('degraded'), unknown: health('unknown') },
    };
  }

  async jobsReport(orgId: string, window: ReportWindow) {
    const { asOf, since, projectIds } = await this.scope(orgId, window);
    const [jobs, byProject, byDay] = await Promise.all([
      this.jobs.counts(projectIds, since),
      this.jobs.countsByProject(projectIds, since),
      this.jobs.countsByDay(projectIds, since),
    ]);
    return { as_of: asOf, window, jobs, by_project: byProject, by_day: byDay };
  }

  async pipelinesReport(orgId: string, window: ReportWindow) {
    const { asOf, since, projectIds } = await this.scope(orgId, window);
    const [pipelines, byPipeline] = await Promise.all([this.pipelines.summary(projectIds, since), this.pipelines.byPipeline(projectIds, since)]);
    return { as_of: asOf, window, pipelines: pipelineFigures(pipelines), by_pipeline: byPipeline };
  }

  async envHealth(orgId: string) {
    const projectIds = await this.projects.liveIdsInOrg(orgId);
    const environments = await this.environmentsOf(projectIds);
    return {
      as_of: new Date(),
      environments: environments
        .map(({ name, project_id, status }) => ({ name, project_id, status }))
        .sort((a, b) => a.project_id.localeCompare(b.project_id) || a.name.localeCompare(b.name)),
    };
  }
}
