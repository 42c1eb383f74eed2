import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../core/di.ts';
import { principalOf, requires } from '../../core/http/access.ts';
import { docs } from '../../core/http/schemas.ts';
import { paramsOf, payloadOf } from '../../core/http/request.ts';
import { ThreadDistiller, type DistillInput } from './distill.ts';
import * as S from './schemas.ts';

/** Org-level thread routes: distillation of a thread of any project of the org. */
export function distillRoutes(container: DependencyContainer): ServerRoute[] {
  const distiller = container.resolve(ThreadDistiller);
  return [
    {
      method: 'POST',
      path: '/orgs/{org_id}/threads/{thread_id}/distill',
      options: {
        id: 'distillThread',
        tags: ['api', 'threads'],
        description:
          "Distill a thread of one of the org's projects into an org document: a model, through the inference gateway as the caller, summarises its newest messages (at most 500) into `/threads/<thread_id>.md` or the path given (a new version each time). Needs orgdocs:write in the org, threads:read on the thread's project and inference:use",
        plugins: { ...requires('orgdocs:write', 'org'), ...docs(400, 401, 403, 404, 422, 502, 504) },
        validate: { params: S.distillParams, payload: S.distillRequest },
        response: { schema: S.distillationSchema },
      },
      handler: (request) => {
        const { org_id, thread_id } = paramsOf(request);
        return distiller.distill(principalOf(request), org_id, thread_id, payloadOf<DistillInput>(request), request.info.id);
      },
    },
  ];
}
