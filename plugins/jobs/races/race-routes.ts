import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../../core/di.ts';
import { principalOf, requires } from '../../../core/http/access.ts';
import { docs, timestamp } from '../../../core/http/schemas.ts';
import { paramsOf, payloadOf } from '../../../core/http/request.ts';
import { HARNESS_NAME, REASONING_EFFORTS } from '../../../core/ports/harness.ts';
import { attemptSchema, checkResultSchema } from '../attempts/attempt-schemas.ts';
import { jobSchema } from '../job/schemas.ts';
import { jobParams } from '../job/routes.ts';
import { tokenTotals } from '../receipts/receipt-schemas.ts';
import { attemptNumberParams } from '../diffs/diff-routes.ts';
import { LANE_STATUSES } from './race-lanes.ts';
import { Races, type RaceRequest } from './races.ts';
import { RaceComparisons } from './race-comparison.ts';

const tags = ['api', 'jobs'];
/** How many rivals one race may run. */
export const MAX_VARIANTS = 8;

const variantSchema = Joi.object({
  harness: Joi.string().max(200).pattern(HARNESS_NAME).description('a harness id or alias'),
  harness_profile: Joi.string().max(200).description("a profile of the project's manifest (x-svc.agents.profiles)"),
  model: Joi.string().max(200),
  reasoning_effort: Joi.string().valid(...REASONING_EFFORTS),
})
  .min(1)
  .label('RaceVariant')
  .description("what one rival runs: the job's harness fields for its lane");

const racePayload = Joi.object({
  variants: Joi.array().items(variantSchema).min(2).max(MAX_VARIANTS).label('RaceVariants').description('one lane per variant, run side by side'),
  profile: Joi.string().max(200).description('instead of variants: a manifest profile (x-svc.agents.profiles) whose entries are the variants'),
  check_command: Joi.string()
    .trim()
    .min(1)
    .max(2000)
    .description("run with /bin/sh in each attempt's workspace after its agent ends (the project's tests, say); exit code 0 passes"),
})
  .xor('variants', 'profile')
  .label('StartRaceRequest');

const laneSchema = Joi.object({
  lane: Joi.number().integer().min(1).required(),
  variant: variantSchema.required(),
  status: Joi.string()
    .valid(...LANE_STATUSES)
    .label('RaceLaneStatus')
    .required(),
  worker_losses: Joi.number().integer().min(0).required().description('attempts of this lane lost with their worker and run again'),
}).label('RaceLane');

const raceSchema = Joi.object({
  job: jobSchema.required(),
  lanes: Joi.array()
    .items(
      laneSchema
        .keys({ job_id: Joi.string().required(), check_command: Joi.string().allow(null).required(), created_at: timestamp.required() })
        .label('RaceLaneRow'),
    )
    .required(),
}).label('Race');

const entrySchema = Joi.object({
  attempt_number: Joi.number().integer().min(1).required(),
  race_lane: Joi.number().integer().min(1).required(),
  variant: variantSchema.required(),
  status: attemptSchema.extract('status').required(),
  result_status: attemptSchema.extract('result_status').required(),
  result_summary: Joi.string().allow(null).required(),
  error: Joi.string().allow(null).required(),
  branch: Joi.string().allow(null).required().description('the branch it committed on'),
  pushed: Joi.boolean().required(),
  chosen: Joi.boolean().required(),
  started_at: timestamp.required(),
  ended_at: timestamp.allow(null).required(),
  duration_ms: Joi.number().integer().min(0).allow(null).required(),
  cost_usd: Joi.number().min(0).required(),
  tokens: tokenTotals.required(),
  diff: Joi.object({
    files_total: Joi.number().integer().min(0).required(),
    additions: Joi.number().integer().min(0).required(),
    deletions: Joi.number().integer().min(0).required(),
    files: Joi.array().items(Joi.string()).required().description('the paths it changed (at most worker.diff.max_files)'),
  })
    .allow(null)
    .label('RaceDiffStats')
    .required()
    .description('null while it runs or when it recorded none; GET /jobs/{job_id}/attempts/{attempt_number}/diff has the patch'),
  check: checkResultSchema.allow(null).required(),
}).label('RaceEntry');

const comparisonSchema = Joi.object({
  job_id: Joi.string().required(),
  phase: jobSchema.extract('phase').required(),
  check_command: Joi.string().allow(null).required(),
  chosen: Joi.number().integer().min(1).allow(null).required().description('the attempt chosen as the job result, once one is'),
  lanes: Joi.array().items(laneSchema).required(),
  attempts: Joi.array().items(entrySchema).required().description('every attempt of the race, by lane then number (a lane lost with its worker has several)'),
}).label('RaceComparison');

const choiceSchema = Joi.object({
  job: jobSchema.required(),
  attempt: attemptSchema.required(),
  cleanup: Joi.object({
    branches: Joi.array().items(Joi.string()).required().description("the other attempts' pushed branches"),
    deleted: Joi.boolean().required(),
    error: Joi.string().allow(null).required().description('why they were not deleted (the choice stands)'),
  })
    .required()
    .label('RaceBranchCleanup'),
}).label('RaceChoice');

/** Rival attempts (docs/worker.md): start a race, compare its attempts, choose one as the job's result. */
export function raceRoutes(container: DependencyContainer): ServerRoute[] {
  const races = container.resolve(Races);
  const comparisons = container.resolve(RaceComparisons);
  return [
    {
      method: 'POST',
      path: '/jobs/{job_id}/attempts',
      options: {
        id: 'startJobRace',
        tags,
        description:
          "Race a backlog or ready job: one lane per variant (or per entry of a manifest profile), each run as its own attempt in its own workspace on its own branch (svc/<job>-attempt-<n>), side by side within the workers' concurrency, each with its receipt, and the check command run in each workspace after the agent ends. The job is active until one attempt is chosen. 409 when the job is not backlog or ready, or is blocked; 422 for a profile the manifest lacks",
        plugins: { ...requires('jobs:write', 'job'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: jobParams, payload: racePayload },
        response: { schema: raceSchema },
      },
      handler: async (request, h) => {
        const race = await races.start(paramsOf(request).job_id, payloadOf<RaceRequest>(request), principalOf(request).id);
        return h.response(race).code(201);
      },
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/race',
      options: {
        id: 'compareJobRace',
        tags,
        description:
          "A race's attempts side by side: variant, status, result summary, duration, cost, tokens, diff size and files, branch, the check's outcome, and which one was chosen. 404 when the job was not raced",
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) },
        validate: { params: jobParams },
        response: { schema: comparisonSchema },
      },
      handler: (request) => comparisons.of(paramsOf(request).job_id),
    },
    {
      method: 'POST',
      path: '/jobs/{job_id}/attempts/{attempt_number}/choose',
      options: {
        id: 'chooseJobAttempt',
        tags,
        description:
          "Make a race's succeeded attempt the job's result, as a successful attempt's becomes it (its resolved git; done, or review when the job asks for one), and delete the other attempts' pushed branches. 409 while lanes run or when the job was not raced or is no longer active; 422 for an attempt that is not the race's or did not succeed",
        plugins: { ...requires('jobs:write', 'job'), ...docs(400, 401, 403, 404, 409, 422) },
        validate: { params: attemptNumberParams, payload: Joi.object().allow(null).label('ChooseJobAttemptRequest') },
        response: { schema: choiceSchema },
      },
      handler: (request) => {
        const { job_id, attempt_number } = request.params as { job_id: string; attempt_number: number };
        return races.choose(job_id, attempt_number);
      },
    },
  ];
}
