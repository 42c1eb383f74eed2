import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../../core/di.ts';
import { principalOf, requires } from '../../../core/http/access.ts';
import { docs, projectId } from '../../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../../core/http/request.ts';
import { Claims, MAX_LEASE_SECONDS, type Completion } from './claims.ts';
import { Review } from './review.ts';
import { AttemptHistory, AttemptRepository, RESULT_STATUSES } from '../attempts/attempts.ts';
import { attemptSchema, claimedAttemptSchema } from '../attempts/attempt-schemas.ts';
import { jobSchema, jobId } from '../job/schemas.ts';
import { jobParams } from '../job/routes.ts';
import { attemptParams, resolveAttemptRef } from '../attempts/attempt-ref.ts';

const tags = ['api', 'jobs'];

const projectJobParams = Joi.object({ project_id: projectId.required(), job_id: jobId.required().description('the job id (the spec calls it job_number)') });

const leaseSeconds = Joi.number().integer().min(1).max(MAX_LEASE_SECONDS).description('lease length; default 300');
const leaseToken = Joi.string().guid().required().description('the token the claim returned');
const text = (max: number) => Joi.string().trim().min(1).max(max);

const claimPayload = Joi.object({ owner: text(200).description("who runs the attempt; default the caller's user id"), lease_seconds: leaseSeconds })
  .allow(null)
  .label('ClaimJobRequest');
const releasePayload = Joi.object({ attempt_id: Joi.string().guid().required(), lease_token: leaseToken }).label('ReleaseJobRequest');
const heartbeatPayload = Joi.object({ lease_token: leaseToken, lease_seconds: leaseSeconds }).label('HeartbeatAttemptRequest');
const completePayload = Joi.object({
  lease_token: leaseToken,
  result: Joi.object({
    status: Joi.string()
      .valid(...RESULT_STATUSES)
      .required(),
    summary: text(20_000),
    reason: text(2000),
  })
    .required()
    .description('the svc object of the json-result block'),
  result_json: Joi.object().unknown(true).description('the whole json-result block'),
  error: text(20_000),
}).label('CompleteAttempt');

const claimedSchema = Joi.object({ job: jobSchema.required(), attempt: claimedAttemptSchema.required() }).label('ClaimedJob');
const outcomeSchema = Joi.object({ job: jobSchema.required(), attempt: attemptSchema.required() }).label('AttemptOutcome');

/** Claiming and running work (claim, release, heartbeat, complete), review, and reading attempts. */
export function claimRoutes(container: DependencyContainer): ServerRoute[] {
  const attemptRef = resolveAttemptRef(container.resolve(AttemptRepository));
  const claims = container.resolve(Claims);
  const review = container.resolve(Review);
  const history = container.resolve(AttemptHistory);
  const write = (status: number[] = []) => ({ ...requires('jobs:write', 'job'), ...docs(400, 401, 403, 404, ...status) });

  return [
    {
      method: 'POST',
      path: '/jobs/{job_id}/claim',
      options: {
        id: 'claimJob',
        tags,
        description:
          'Claim a ready job: 409 when it is not ready, deferred, blocked (the message names the blockers) or a gate is held (body adds blocked_on_gates and jobId); 429 when its org runs limits.org.running_attempts already',
        plugins: write([409, 429]),
        validate: { params: jobParams, payload: claimPayload },
        response: { schema: claimedSchema },
      },
      handler: (request) => {
        const body = payloadOf<{ owner?: string; lease_seconds?: number } | null>(request) ?? {};
        return claims.claim(paramsOf(request).job_id, body.owner ?? principalOf(request).id, { leaseSeconds: body.lease_seconds });
      },
    },
    {
      method: 'POST',
      path: '/jobs/{job_id}/release',
      options: {
        id: 'releaseJob',
        tags,
        description: 'Give a claimed job back: the attempt ends cancelled, its gates are freed, the job is ready again (409 when the lease is lost)',
        plugins: write([409]),
        validate: { params: jobParams, payload: releasePayload },
        response: { schema: outcomeSchema },
      },
      handler: (request) => {
        const body = payloadOf<{ attempt_id: string; lease_token: string }>(request);
        return claims.release(paramsOf(request).job_id, body.attempt_id, body.lease_token);
      },
    },
    {
      method: 'POST',
      path: '/jobs/{job_id}/attempts/{attempt_id}/heartbeat',
      options: {
        id: 'heartbeatAttempt',
        tags,
        description: 'Extend the lease of a running attempt (409 when the token does not match, the lease expired or the attempt ended)',
        plugins: write([409]),
        pre: [attemptRef],
        validate: { params: attemptParams, payload: heartbeatPayload },
        response: { schema: attemptSchema },
      },
      handler: (request) => {
        const { job_id, attempt_id } = paramsOf(request);
        const body = payloadOf<{ lease_token: string; lease_seconds?: number }>(request);
        return claims.heartbeat(job_id, attempt_id, body.lease_token, body.lease_seconds);
      },
    },
    {
      method: 'POST',
      path: '/jobs/{job_id}/attempts/{attempt_id}/complete',
      options: {
        id: 'completeAttempt',
        tags,
        description: 'End an attempt with its result (success, waiting, failed), written only under its live lease (409 otherwise, nothing written)',
        plugins: write([409]),
        pre: [attemptRef],
        validate: { params: attemptParams, payload: completePayload },
        response: { schema: outcomeSchema },
      },
      handler: (request) => {
        const { job_id, attempt_id } = paramsOf(request);
        return claims.complete(job_id, attempt_id, payloadOf<Completion>(request));
      },
    },
    {
      method: 'POST',
      path: '/jobs/{job_id}/submit',
      options: {
        id: 'submitJob',
        tags,
        description: 'Submit an active job for review with a summary; its running attempt ends as succeeded',
        plugins: write([409]),
        validate: { params: jobParams, payload: Joi.object({ summary: text(20_000).required() }).label('SubmitJobRequest') },
        response: { schema: jobSchema },
      },
      handler: (request) => review.submit(paramsOf(request).job_id, principalOf(request).id, payloadOf<{ summary: string }>(request).summary),
    },
    {
      method: 'POST',
      path: '/jobs/{job_id}/approve',
      options: {
        id: 'approveJob',
        tags,
        description: 'Approve a job in review: it is done',
        plugins: write([409]),
        validate: {
          params: jobParams,
          payload: Joi.object({ comment: text(20_000) })
            .allow(null)
            .label('ApproveJobRequest'),
        },
        response: { schema: jobSchema },
      },
      handler: (request) => review.approve(paramsOf(request).job_id, principalOf(request).id, payloadOf<{ comment?: string } | null>(request)?.comment),
    },
    {
      method: 'POST',
      path: '/jobs/{job_id}/reject',
      options: {
        id: 'rejectJob',
        tags,
        description:
          'Reject a job in review with a reason: it is active again with a new attempt claimed for the caller (who gets its lease token); 429 when its org runs limits.org.running_attempts already',
        plugins: write([409, 429]),
        validate: { params: jobParams, payload: Joi.object({ reason: text(20_000).required() }).label('RejectJobRequest') },
        response: { schema: claimedSchema },
      },
      handler: (request) => review.reject(paramsOf(request).job_id, principalOf(request).id, payloadOf<{ reason: string }>(request).reason),
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/jobs/{job_id}/attempts',
      options: {
        id: 'listJobAttempts',
        tags,
        description: 'Attempts of a job, highest attempt_number first',
        plugins: { ...requires('jobs:read', 'project'), ...docs(400, 401, 404) },
        validate: { params: projectJobParams, query: listQuerySchema },
        response: { schema: pageSchema(attemptSchema, 'AttemptList') },
      },
      handler: (request) => {
        const { project_id, job_id } = paramsOf(request);
        return history.list(project_id, job_id, queryOf<ListQuery>(request));
      },
    },
    {
      method: 'GET',
      path: '/projects/{project_id}/jobs/{job_id}/attempts/{attempt_number}',
      options: {
        id: 'getJobAttempt',
        tags,
        description: 'One attempt of a job by its number',
        plugins: { ...requires('jobs:read', 'project'), ...docs(400, 401, 404) },
        validate: { params: projectJobParams.keys({ attempt_number: Joi.number().integer().min(1).required() }) },
        response: { schema: attemptSchema },
      },
      handler: (request) => {
        const { project_id, job_id, attempt_number } = request.params as { project_id: string; job_id: string; attempt_number: number };
        return history.get(project_id, job_id, attempt_number);
      },
    },
  ];
}
