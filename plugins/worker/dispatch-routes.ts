import Boom from '@hapi/boom';
import type { Request, ResponseToolkit, ServerRoute } from '@hapi/hapi';
import Joi from 'joi';
import type { AttemptControl } from '../../core/ports/attempts.ts';
import { CAPACITY_SUBJECT, type DispatchTokens } from './dispatch-token.ts';
import { fromDispatchBody, type DispatchBody } from './remote.ts';
import type { InProcessWorker } from './worker.ts';

// Internal machine-to-machine routes: not tagged 'api', so not in the published OpenAPI document.
const tags = ['worker'];

const dispatchSchema = Joi.object({
  job_id: Joi.string().min(1).max(100).required(),
  project_id: Joi.string().min(1).max(100).required(),
  attempt_id: Joi.string().guid().required(),
  attempt_number: Joi.number().integer().min(1).required(),
  lease_token: Joi.string().min(1).max(200).required(),
  lease_expires_at: Joi.date().iso().required(),
  worker_type: Joi.string().max(100).allow(null).default(null),
  api_url: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .allow(null)
    .default(null),
}).label('WorkerDispatch');

const capacitySchema = Joi.object({ capacity: Joi.number().integer().min(0).required() }).label('WorkerCapacity');

/**
 * The worker role's side of remote dispatch (docs/worker.md, "Worker routing"): an orchestrator
 * posts a claimed attempt, with a dispatch token bound to that attempt (checked before the body is
 * validated, so unauthenticated callers learn nothing); 202 with the room left, 429 when full, 503
 * while stopping, 409 when the attempt is no longer running. The attempt then runs here exactly as
 * an in-process one, every write fenced by the lease token it came with.
 */
export function dispatchRoutes(worker: InProcessWorker, tokens: DispatchTokens, control: AttemptControl): ServerRoute[] {
  const authorizeDispatch = async (request: Request, h: ResponseToolkit) => {
    const body = request.payload as Partial<DispatchBody> | null;
    await tokens.verify(request.headers.authorization as string | undefined, typeof body?.attempt_id === 'string' ? body.attempt_id : '(no attempt_id)');
    return h.continue;
  };
  return [
    {
      method: 'POST',
      path: '/worker/attempts',
      options: {
        auth: false,
        tags,
        description: 'Run a claimed attempt on this worker (orchestrators only, with a worker dispatch token)',
        ext: { onPostAuth: { method: authorizeDispatch } },
        validate: { payload: dispatchSchema },
        response: { status: { 202: capacitySchema } },
      },
      handler: async (request, h) => {
        const claim = fromDispatchBody(request.payload as DispatchBody);
        if (worker.isStopping) throw Boom.serverUnavailable('this worker is stopping');
        if (worker.capacity() <= 0) throw Boom.tooManyRequests('this worker is running as many attempts as it may (worker.concurrency)');
        const work = await control.load(claim.jobId, claim.attemptId);
        if (!work || work.attempt.status !== 'running') throw Boom.conflict(`attempt ${claim.attemptId} of job ${claim.jobId} is not running`);
        await worker.dispatch(claim);
        return h.response({ capacity: worker.capacity() }).code(202);
      },
    },
    {
      method: 'GET',
      path: '/worker/capacity',
      options: {
        auth: false,
        tags,
        description: 'How many more attempts this worker takes now (orchestrators only)',
        ext: {
          onPreAuth: { method: async (request, h) => (await tokens.verify(request.headers.authorization as string | undefined, CAPACITY_SUBJECT), h.continue) },
        },
        response: { schema: capacitySchema },
      },
      handler: () => ({ capacity: worker.capacity() }),
    },
  ];
}
