import Boom from '@hapi/boom';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { AccessTargets } from '../../core/http/access.ts';
import { AuthCache } from '../../core/auth/cache.ts';
import { Tokens } from '../../core/tokens.ts';
import { lookupLater } from '../../core/di.ts';
import { WorkerDispatcherToken } from '../../core/ports/worker.ts';
import { ManifestDefaultsToken, ManifestReaderToken, noManifestDefaults } from '../../core/ports/manifest.ts';
import {
  JobAdmissions,
  JobAttachmentReaderToken,
  JobGraphsToken,
  JobPhaseListeners,
  JobRequestChecks,
  PullRequestFeedbackToken,
} from '../../core/ports/jobs.ts';
import { VcsHostToken } from '../../core/ports/vcshost.ts';
import { SecretResolverToken } from '../../core/ports/secrets.ts';
import { PullRequestHosts, PullRequests } from './pull-requests/pull-requests.ts';
import { pullRequestRoutes } from './pull-requests/pull-request-routes.ts';
import { JobGraphService } from './job/graphs.ts';
import { JobRepository } from './job/repository.ts';
import { JobWakeups } from './lifecycle/wakeups.ts';
import { JobCreation, knownHarness } from './job/create.ts';
import { HarnessAvailabilityLookup, HarnessCheck } from './job/harness-check.ts';
import { HarnessAvailabilityToken } from '../../core/ports/harness.ts';
import { JobService } from './job/service.ts';
import { jobRoutes } from './job/routes.ts';
import { AttemptHistory, AttemptRepository } from './attempts/attempts.ts';
import { Claims } from './claims/claims.ts';
import { Review, ReviewLog } from './claims/review.ts';
import { claimRoutes } from './claims/claim-routes.ts';
import { JobRelations, RelationRepository } from './relations/relations.ts';
import { ContextRepository, JobContext } from './relations/context.ts';
import { relationRoutes } from './relations/relation-routes.ts';
import { AttachmentRepository, AttachmentService } from './attachments/attachments.ts';
import { attachmentRoutes } from './attachments/attachment-routes.ts';
import { JobDispatcher, WorkerDispatcherLookup } from './claims/dispatcher.ts';
import { RoleServices } from '../../core/roles.ts';
import { ReceiptStore } from './receipts/receipt-store.ts';
import { PriceBookLookup, ReceiptPricing } from './receipts/receipt-pricing.ts';
import { PriceBookToken } from '../../core/ports/billing.ts';
import { JobStatisticsToken } from '../../core/ports/stats.ts';
import { JobStats } from './stats/job-stats.ts';
import { Receipts } from './receipts/receipts.ts';
import { AttemptComparison } from './receipts/compare.ts';
import { receiptRoutes } from './receipts/receipt-routes.ts';
import { DiffStore } from './diffs/diff-store.ts';
import { AttemptDiffs } from './diffs/diffs.ts';
import { diffRoutes } from './diffs/diff-routes.ts';
import { raceRoutes } from './races/race-routes.ts';
import { workflowRoutes } from './workflows/workflow-routes.ts';
import { ManifestReaderLookup, WorkflowInvocation } from './workflows/workflow-invoke.ts';
import { WorkflowLauncherToken } from '../../core/ports/launchers.ts';
import { AttemptCompletionListeners, AttemptControlToken, AttemptLogListeners } from '../../core/ports/attempts.ts';
import { AttemptLogBus, AttemptLogs } from './logs/attempt-logs.ts';
import { AttemptControl } from './attempts/attempt-control.ts';
import { promoteResolvedGit } from './lifecycle/resolved-git.ts';
import { JobLifecycle } from './lifecycle/lifecycle.ts';
import { emitJobsCompleted } from './lifecycle/system-events.ts';
import { logRoutes } from './logs/log-routes.ts';
import { JobMetrics } from './metrics.ts';
import { QueuedJobQuota } from './job/quotas.ts';
import { describeTags } from '../../core/http/openapi.ts';

/** Jobs: the resource, its phases, relations, review, attempts and their receipts. */
export const plugin: DomainPlugin = {
  name: 'jobs',
  dependencies: ['projects'],
  register(server, { container }) {
    describeTags(server, {
      jobs: 'Jobs: a work prompt an AI coding agent runs in a checkout of the project. Create and change them; claim, heartbeat and complete attempts; review (submit, approve, reject); logs, receipts, attachments and dependencies.',
    });
    if (!container.isRegistered(ManifestDefaultsToken)) container.registerInstance(ManifestDefaultsToken, noManifestDefaults);
    container.registerInstance(PriceBookLookup, lookupLater(container, PriceBookToken));
    container.registerInstance(HarnessAvailabilityLookup, lookupLater(container, HarnessAvailabilityToken));
    for (const cls of [
      JobPhaseListeners,
      JobRequestChecks,
      JobAdmissions,
      JobWakeups,
      JobRepository,
      AttemptCompletionListeners,
      ReceiptPricing,
      ReceiptStore,
      AttemptRepository,
      JobLifecycle,
      HarnessCheck,
      JobCreation,
      JobService,
      QueuedJobQuota,
    ])
      container.registerSingleton(cls as never);
    for (const cls of [AttemptHistory, Claims, ReviewLog, Review, JobMetrics]) container.registerSingleton(cls as never);
    container.resolve(AttemptCompletionListeners).add(container.resolve(JobMetrics).attemptEnded);
    for (const cls of [Receipts, AttemptComparison, DiffStore, AttemptDiffs]) container.registerSingleton(cls as never);
    for (const cls of [RelationRepository, JobRelations, ContextRepository, JobContext]) container.registerSingleton(cls as never);
    for (const cls of [AttachmentRepository, AttachmentService]) container.registerSingleton(cls as never);
    const attachments = container.resolve(AttachmentRepository);
    container.registerInstance(JobAttachmentReaderToken, {
      read: async (projectId, jobId, name) => (await attachments.contentInProject(projectId, jobId, name)) ?? null,
    });
    for (const cls of [AttemptLogListeners, AttemptLogBus, AttemptLogs, AttemptControl]) container.registerSingleton(cls as never);
    container.register(AttemptControlToken, { useToken: AttemptControl });
    const phaseListeners = container.resolve(JobPhaseListeners);
    for (const listener of [promoteResolvedGit, emitJobsCompleted, container.resolve(AttemptLogs).phasesChanged]) phaseListeners.add(listener);
    container.resolve(JobRequestChecks).add(knownHarness(container));
    container.resolve(JobAdmissions).add(container.resolve(QueuedJobQuota).admit);
    container.registerSingleton(JobStatisticsToken, JobStats);
    container.registerSingleton(JobGraphService);
    container.register(JobGraphsToken, { useToken: JobGraphService });
    const db = container.resolve(Tokens.Db);
    // /jobs/{job_id} routes act on the job's project, which never changes (jobs are not moved or deleted).
    const jobProjects = container.resolve(AuthCache).memo<string>();
    container.resolve(AccessTargets).register('job', async (request) => {
      const id = String(request.params.job_id);
      const notFound = `job ${id} not found`;
      const project = await jobProjects.get(id, async () => (await db('jobs').where({ id }).first('project_id'))?.project_id);
      if (!project) throw Boom.notFound(notFound);
      return { project, job: id, notFound };
    });
    server.route(jobRoutes(container));
    server.route(claimRoutes(container));
    server.route(relationRoutes(container));
    server.route(attachmentRoutes(container));
    server.route(receiptRoutes(container));
    server.route(diffRoutes(container));
    server.route(logRoutes(container));
    container.registerInstance(PullRequestHosts, { vcshost: lookupLater(container, VcsHostToken), secrets: lookupLater(container, SecretResolverToken) });
    container.registerSingleton(PullRequests);
    container.register(PullRequestFeedbackToken, { useToken: PullRequests });
    server.route(pullRequestRoutes(container));
    server.ext('onPostStop', () => container.resolve(AttemptLogBus).close());
    container.registerInstance(ManifestReaderLookup, lookupLater(container, ManifestReaderToken));
    const invocation = container.resolve(WorkflowInvocation);
    container.registerInstance(WorkflowLauncherToken, {
      invokeWorkflow: async (creator, projectId, name, input, event) => ({
        job_id: (await invocation.invoke(creator, projectId, null, name, { input, event })).job_id,
      }),
    });
    server.route(workflowRoutes(invocation));
    server.route(raceRoutes(container));
    container.registerInstance(WorkerDispatcherLookup, lookupLater(container, WorkerDispatcherToken));
    container.resolve(RoleServices).add('orchestrator', container.resolve(JobDispatcher));
  },
};
