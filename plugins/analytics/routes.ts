import type { ServerRoute } from '@hapi/hapi';
import type { Request } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { paramsOf, queryOf } from '../../core/http/request.ts';
import { windowQuery, type ReportWindow } from '../../core/http/windows.ts';
import { Analytics } from './service.ts';
import * as S from './schemas.ts';

const tags = ['api', 'analytics'];

/** GET /orgs/{org_id}/analytics/* (orgs:read), each with `window` (docs/billing.md). */
export function analyticsRoutes(container: DependencyContainer): ServerRoute[] {
  const analytics = container.resolve(Analytics);
  const args = (request: Request): [string, ReportWindow] => [paramsOf(request).org_id, queryOf<{ window: ReportWindow }>(request).window];
  const route = (id: string, path: string, description: string, schema: unknown, handler: (request: Request) => Promise<unknown>): ServerRoute => ({
    method: 'GET',
    path: `/orgs/{org_id}/analytics/${path}`,
    options: {
      id,
      tags,
      description,
      plugins: { ...requires('orgs:read', 'org'), ...docs(400, 401, 403, 404) },
      validate: { params: S.orgParams, query: windowQuery },
      response: { schema: schema as never },
    },
    handler,
  });
  return [
    route('getAnalyticsSummary', 'summary', "The org's projects, jobs and pipeline runs of the window, and its environments' health", S.summarySchema, (r) =>
      analytics.summary(...args(r)),
    ),
    route('getJobAnalytics', 'jobs', 'Jobs of the window: totals, by project and by day', S.jobsReportSchema, (r) => analytics.jobsReport(...args(r))),
    route('getPipelineAnalytics', 'pipelines', 'Pipeline runs of the window: totals and by pipeline', S.pipelinesReportSchema, (r) =>
      analytics.pipelinesReport(...args(r)),
    ),
    route(
      'getEnvironmentHealthAnalytics',
      'env-health',
      "A snapshot of the org's environments and their health (window is accepted and ignored)",
      S.envHealthSchema,
      (r) => analytics.envHealth(args(r)[0]),
    ),
  ];
}
