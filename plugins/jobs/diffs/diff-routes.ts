import Joi from 'joi';
import type { ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../../core/di.ts';
import { requires } from '../../../core/http/access.ts';
import { docs, timestamp } from '../../../core/http/schemas.ts';
import { queryOf } from '../../../core/http/request.ts';
import { jobParams } from '../job/routes.ts';
import { jobId } from '../job/schemas.ts';
import { AttemptDiffs, DIFF_FORMATS, type DiffFormat } from './diffs.ts';

const tags = ['api', 'jobs'];
const count = Joi.number().integer().min(0);
const sha = Joi.string().pattern(/^[0-9a-f]{40,64}$/, 'a commit id');

export const attemptNumberParams = jobParams.keys({
  attempt_number: Joi.number().integer().min(1).max(2_147_483_647).required().description('1, 2, … within the job'),
});
const diffQuery = Joi.object({
  format: Joi.string()
    .valid(...DIFF_FORMATS)
    .default('patch')
    .description('patch (default): files, stats and the patch text; stat: files and stats only'),
}).label('AttemptDiffQuery');

export const diffFileSchema = Joi.object({
  path: Joi.string().required(),
  old_path: Joi.string().description('the path before a rename'),
  status: Joi.string().valid('added', 'modified', 'deleted', 'renamed').label('AttemptDiffFileStatus').required(),
  additions: count.required().description('lines added (0 for a binary file)'),
  deletions: count.required().description('lines removed (0 for a binary file)'),
  binary: Joi.boolean().required(),
}).label('AttemptDiffFile');

export const diffSchema = Joi.object({
  job_id: jobId.required(),
  attempt_id: Joi.string().guid().required(),
  attempt_number: Joi.number().integer().min(1).required(),
  format: Joi.string()
    .valid(...DIFF_FORMATS)
    .label('AttemptDiffFormat')
    .required(),
  base_sha: sha.required().description('the commit the attempt started from'),
  head_sha: sha.allow(null).required().description("the checkout's HEAD when the attempt ended"),
  uncommitted: Joi.boolean().required().description('the diff holds work that was left uncommitted (not in head_sha)'),
  stats: Joi.object({ files: count.required(), additions: count.required(), deletions: count.required() })
    .required()
    .label('AttemptDiffStats')
    .description('every file changed, listed or not'),
  files: Joi.array().items(diffFileSchema).label('AttemptDiffFiles').required().description('in the order of the patch; at most limits.max_files'),
  patch: Joi.string()
    .allow('')
    .description(
      'format patch: the unified diff (a/ and b/ prefixes, 3 lines of context, renames found), at most limits.max_patch_bytes, cut after a whole line',
    ),
  truncated: Joi.boolean().required().description('this answer leaves something out: the file list, or (format patch) the end of the patch; note says what'),
  note: Joi.string().allow(null).required().description('what was left out and why, in words'),
  patch_bytes: count.required().description("the whole patch's size as git wrote it"),
  omitted_bytes: count.required().description('how much of the patch was not kept'),
  limits: Joi.object({ max_patch_bytes: count.required(), max_files: count.required() })
    .required()
    .label('AttemptDiffLimits')
    .description("the worker's worker.diff when it recorded the diff"),
  recorded_at: timestamp.required(),
}).label('AttemptDiff');

const DESCRIPTION =
  "What attempt N of the job changed, against the commit it started from: the working tree as `git add -A` takes it (the attempt's commits and " +
  "any work left uncommitted; ignored files and svc's own files left out), recorded by the worker when the attempt ended (docs/diffs.md). " +
  'Per file: path, old_path (renames), status added|modified|deleted|renamed, additions, deletions, binary; stats over every file; the patch text ' +
  'up to worker.diff.max_patch_bytes (default 1 MiB) and at most worker.diff.max_files files (default 3000), with truncated and a note saying what was ' +
  'left out. `format=stat`: the summary without the patch. 404 when the job is not visible, the attempt does not exist, or it has no diff ' +
  '(still running, no checkout, or none recorded: the message says which).';

/** The diff of an attempt (docs/diffs.md). */
export function diffRoutes(container: DependencyContainer): ServerRoute[] {
  const diffs = container.resolve(AttemptDiffs);
  return [
    {
      method: 'GET',
      path: '/jobs/{job_id}/attempts/{attempt_number}/diff',
      options: {
        id: 'getAttemptDiff',
        tags,
        description: DESCRIPTION,
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) },
        validate: { params: attemptNumberParams, query: diffQuery },
        response: { schema: diffSchema },
      },
      handler: (request) => {
        const { job_id, attempt_number } = request.params as { job_id: string; attempt_number: number };
        return diffs.ofAttempt(job_id, attempt_number, queryOf<{ format: DiffFormat }>(request).format);
      },
    },
  ];
}
