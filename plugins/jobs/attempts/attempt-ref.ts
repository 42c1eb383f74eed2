import Joi from 'joi';
import type { Lifecycle, Request, RouteOptionsPreObject } from '@hapi/hapi';
import { NotFound } from '../../../core/errors.ts';
import { TYPEID_SUFFIX } from '../../../core/ids.ts';
import { jobId } from '../job/schemas.ts';
import type { AttemptRepository } from './attempts.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** `<project_id>:<job_id>:<attempt_number>`: the interface's cross-context reference to an attempt (the job part must equal the path's job). */
const COMPOSITE = new RegExp(`^(proj_${TYPEID_SUFFIX}):([^:]{1,100}):([1-9][0-9]{0,8})$`);

/** An attempt named by its UUID or by the composite reference `<project_id>:<job_id>:<attempt_number>`. */
export const attemptRef = Joi.alternatives()
  .try(Joi.string().guid(), Joi.string().pattern(COMPOSITE, '<project_id>:<job_id>:<attempt_number>'))
  .messages({ 'alternatives.match': '{{#label}} must be an attempt id (a UUID) or <project_id>:<job_id>:<attempt_number>' })
  .description('the attempt: its id, or the composite reference <project_id>:<job_id>:<attempt_number>')
  .example('proj_01h455vb4pex5vsknk084sn02q:myapp-1a2b3c4d:2');

/** Path parameters of the routes under /jobs/{job_id}/attempts/{attempt_id}. */
export const attemptParams = Joi.object({ job_id: jobId.required(), attempt_id: attemptRef.required() });

/**
 * A route prerequisite that turns a composite `attempt_id` into the attempt's id, so handlers only
 * see ids. The reference must name the route's own job in that job's project; otherwise, as for an
 * unknown attempt, 404.
 */
export function resolveAttemptRef(attempts: AttemptRepository): RouteOptionsPreObject {
  const method: Lifecycle.Method = async (request: Request) => {
    const params = request.params as { job_id: string; attempt_id: string };
    const ref = params.attempt_id;
    if (UUID.test(ref)) return ref;
    const [, projectId, jobId, number] = COMPOSITE.exec(ref) ?? [];
    const found = jobId === params.job_id ? await attempts.byReference(projectId, jobId, Number(number)) : undefined;
    if (!found) throw new NotFound(`attempt ${ref} of job ${params.job_id} not found`);
    params.attempt_id = found;
    return found;
  };
  return { method };
}
