import type { DomainPlugin } from '../../core/http/plugins.ts';
import { AttemptCompletionListeners } from '../../core/ports/attempts.ts';
import { JobRequestChecks } from '../../core/ports/jobs.ts';
import { CoordinationThreadsToken } from '../../core/ports/threads.ts';
import { ThreadRepository } from './repository.ts';
import { ThreadService } from './service.ts';
import { Coordination } from './coordination.ts';
import { threadRoutes } from './routes.ts';
import { distillRoutes } from './distill-routes.ts';
import { DistillPorts, ThreadDistiller } from './distill.ts';
import { lookupLater } from '../../core/di.ts';
import { ModelCompletionsToken } from '../../core/ports/inference.ts';
import { OrgDocumentsToken } from '../../core/ports/resources.ts';
import { describeTags } from '../../core/http/openapi.ts';

/**
 * Threads of a project and their messages (docs/threads.md); coordination threads of team
 * dispatches: the worker's inbox, the status post when an attempt ends, the check of
 * `hints.coordination.thread_id` when a job is created.
 */
export const plugin: DomainPlugin = {
  name: 'threads',
  dependencies: ['projects', 'jobs'],
  register(server, { container }) {
    describeTags(server, {
      threads:
        'Conversations in a project: people, service accounts and running jobs post messages in order; coordination threads carry directives and status between a parent job and its children.',
    });
    container.registerInstance(DistillPorts, { models: lookupLater(container, ModelCompletionsToken), docs: lookupLater(container, OrgDocumentsToken) });
    for (const cls of [ThreadRepository, ThreadService, Coordination, ThreadDistiller]) container.registerSingleton(cls as never);
    const coordination = container.resolve(Coordination);
    container.register(CoordinationThreadsToken, { useToken: Coordination });
    container.resolve(AttemptCompletionListeners).add(coordination.attemptCompleted);
    container.resolve(JobRequestChecks).add(coordination.checkRequest);
    server.route([...threadRoutes(container), ...distillRoutes(container)]);
  },
};
