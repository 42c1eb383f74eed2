import Boom from '@hapi/boom';
import type { DomainPlugin } from '../../core/http/plugins.ts';
import { AccessTargets } from '../../core/http/access.ts';
import { Tokens } from '../../core/tokens.ts';
import { ManifestDefaultsToken, noManifestDefaults } from '../../core/ports/manifest.ts';
import { JobRepository } from './repository.ts';
import { JobCreation } from './create.ts';
import { JobService } from './service.ts';
import { jobRoutes } from './routes.ts';

/** Jobs: the resource, its phases, relations, review and attempts. */
export const plugin: DomainPlugin = {
  name: 'jobs',
  dependencies: ['projects'],
  register(server, { container }) {
    if (!container.isRegistered(ManifestDefaultsToken)) container.registerInstance(ManifestDefaultsToken, noManifestDefaults);
    for (const cls of [JobRepository, JobCreation, JobService]) container.registerSingleton(cls as never);
    const db = container.resolve(Tokens.Db);
    // /jobs/{job_id} routes act on the job's project.
    container.resolve(AccessTargets).register('job', async (request) => {
      const notFound = `job ${request.params.job_id} not found`;
      const job = await db('jobs').where({ id: request.params.job_id }).first('project_id');
      if (!job) throw Boom.notFound(notFound);
      return { project: job.project_id, notFound };
    });
    server.route(jobRoutes(container));
  },
};
