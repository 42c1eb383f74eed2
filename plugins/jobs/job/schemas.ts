import Joi from 'joi';
import { projectId, timestamp } from '../../../core/http/schemas.ts';
import { listQuerySchema } from '../../../core/http/lists.ts';
import { normalizeMountPath, parseResourceUri } from '../../../core/ports/resources.ts';
import { HARNESS_NAME, REASONING_EFFORTS } from '../../../core/ports/harness.ts';
import { closest } from '../../../core/closest.ts';
import { GitAccessError, pushRemoteKind } from '../../../core/git-access.ts';
import { MAX_SPARSE_PATHS, refNameProblem, sparsePathProblem } from '../../../core/git-refs.ts';
import { isReservedEnvName, RESERVED_ENV_NAMES, RESERVED_ENV_PREFIX } from '../../../domain/manifest/validate-env.ts';

export const PHASES = ['idea', 'backlog', 'ready', 'active', 'review', 'done', 'cancelled'] as const;
export type Phase = (typeof PHASES)[number];
export const ISSUE_TYPES = ['task', 'bug', 'feature', 'epic', 'chore'] as const;
export const REVIEW_REQUIRED = ['none', 'human', 'agent'] as const;
export const EXECUTION_MODES = ['persistent', 'ephemeral'] as const;
export const PERMISSION_POLICIES = ['default', 'auto_edit', 'never', 'yolo'] as const;
export const RELATION_TYPES = ['blocked_by', 'blocks', 'waits_for', 'conditional_blocks'] as const;

/** Root `{slug}-{hash8}`, children `{parent}.{n}`, at most two levels below the root. */
export const JOB_ID = /^[a-z0-9]{4,8}-[0-9a-f]{8}(\.[1-9][0-9]*){0,2}$/;
export const jobId = Joi.string().pattern(JOB_ID, '{slug}-{hash8}[.n] job id').example('myapp-1a2b3c4d');

const isoDate = Joi.date().iso().raw();
/** A branch, tag or commit SHA as git check-ref-format accepts it (core/git-refs.ts): refused here, not when the attempt runs. */
const gitRef = Joi.string()
  .trim()
  .min(1)
  .max(255)
  .custom((ref: string, helpers) => {
    const problem = refNameProblem(ref);
    return problem ? helpers.message({ custom: '{{#label}} {#why}' }, { why: `is not a valid git ref name: it ${problem}` }) : ref;
  })
  .description('a branch, tag or commit SHA: what git check-ref-format accepts, not beginning with "-"');

export const gitSchema = Joi.object({
  ref: gitRef,
  ref_policy: Joi.string().valid('auto', 'env', 'project_default', 'explicit'),
  branch: gitRef,
  depth: Joi.number().integer().min(1).max(1_000_000).description('a shallow checkout: the last `depth` commits of each branch (git clone --depth)'),
  create_branch: Joi.string().valid('never', 'if_missing', 'always'),
  commit: Joi.string().valid('never', 'manual', 'auto', 'required'),
  commit_message: Joi.string().max(2000),
  push: Joi.string().valid('never', 'on_success', 'required'),
  remote: Joi.string()
    .max(2000)
    .custom((remote: string, helpers) => {
      try {
        pushRemoteKind(remote);
        return remote;
      } catch (e) {
        if (e instanceof GitAccessError) return helpers.message({ custom: '{#why}' }, { why: e.message });
        throw e;
      }
    })
    .description("'origin', or an https:// or ssh URL of the same kind as the project's repo_url (never a path or file://)"),
})
  .custom((git, helpers) =>
    git.ref_policy === 'explicit' && !git.ref ? helpers.message({ custom: '"git.ref" is required when "git.ref_policy" is explicit' }) : git,
  )
  .label('GitControls');

/** The hints a job request may carry (docs/interface-spec.md, Hints object), and those svc itself reads. */
const PUBLIC_HINTS: Record<string, Joi.Schema> = {
  worker_type: Joi.string().max(100),
  permission_policy: Joi.string().valid(...PERMISSION_POLICIES),
  timeout_seconds: Joi.number()
    .positive()
    .max(7 * 86_400),
  resource_class: Joi.string().max(100),
  max_cost: Joi.object({ currency: Joi.string().length(3).uppercase().required(), amount: Joi.number().positive().required() }),
  max_tokens: Joi.number().integer().positive(),
  gates: Joi.array().items(Joi.string().trim().min(1).max(200)).unique().max(20),
  max_attempts: Joi.number().integer().min(1).max(100),
  db_access: Joi.string().valid('read_only', 'read_write'),
  workflow_name: Joi.string().max(200),
  request_json: Joi.string().max(1_000_000),
  app_apis: Joi.array().items(Joi.string().max(200)),
  coordination: Joi.object({ thread_id: Joi.string().max(200) }).unknown(true),
  step: Joi.object({ kind: Joi.string().valid('script', 'agent', 'action') })
    .unknown(true)
    .description('what the attempt runs instead of an agent on the description: {kind: script, script: {run}} and the like'),
  mutation_id: Joi.string().max(200).description("the caller's id of the change, carried into the job's events"),
  request_id: Joi.string().max(200).description("the caller's request id, carried into the job's events"),
};

/** Hints only svc writes, on the jobs workflows and pipelines lay out (never accepted from a request). */
const PLATFORM_HINTS: Record<string, Joi.Schema> = {
  step_name: Joi.string().max(200),
  pipeline_run_id: Joi.string().max(200),
  pipeline_name: Joi.string().max(200),
  depends_on: Joi.array().items(Joi.string().max(200)).description('the steps of the same run this step starts after (its workspace merges theirs)'),
  execution_type: Joi.string().max(50),
  event_id: Joi.string().max(200),
  event_json: Joi.string().max(1_000_000),
  resource_refs: Joi.alternatives(Joi.string().valid('inherit', 'none'), Joi.array().items(Joi.string().max(200))).description(
    "a workflow step's resource_refs policy",
  ),
};

/** Hints of the caller's own, which svc stores and never reads: `x-` and a name. */
export const CUSTOM_HINT = /^x-./;

/** The message of each unknown key: its path, the known key it is likely a typo of, and the escape for custom hints. */
function unknownHint(path: (string | number)[], key: string, known: string[]): string {
  const suggestion = closest(key, known);
  return `"${[...path, key].join('.')}" is not a known hint${suggestion ? ` (did you mean "${suggestion}"?)` : ''}; custom hints take the prefix "x-"`;
}

function hintsOf(keys: Record<string, Joi.Schema>, label: string): Joi.ObjectSchema {
  const known = Object.keys(keys);
  return Joi.object(keys)
    .pattern(CUSTOM_HINT, Joi.any())
    .unknown(true) // what is left is refused below, with a "did you mean"
    .custom((hints: Record<string, unknown>, helpers) => {
      const unknown = Object.keys(hints).filter((key) => !known.includes(key) && !CUSTOM_HINT.test(key));
      if (unknown.length === 0) return hints;
      return helpers.error('hints.unknown', { problems: unknown.map((key) => unknownHint(helpers.state.path ?? [], key, known)).join('; ') });
    })
    .messages({ 'hints.unknown': '{#problems}' })
    .label(label);
}

export const hintsSchema = hintsOf(PUBLIC_HINTS, 'Hints');
/** A request svc makes itself (workflow steps, pipeline steps) may also carry the platform's own hints. */
export const platformHintsSchema = hintsOf({ ...PUBLIC_HINTS, ...PLATFORM_HINTS }, 'PlatformHints');

/** A joi check from a core parser: its error becomes the message, the value is kept as written. */
const checked = (parse: (value: string) => object) => (value: string, helpers: Joi.CustomHelpers) => {
  const result = parse(value);
  return 'error' in result ? helpers.message({ custom: `{{#label}} ${String(result.error)}` }) : value;
};

const resourceRef = Joi.object({
  uri: Joi.string()
    .max(2000)
    .custom(checked(parseResourceUri), 'resource uri')
    .required()
    .description('org_docs:/<path>[@v<N>] or job_attachments:/<job_id>/<name>'),
  label: Joi.string().max(200),
  required: Joi.boolean().default(true),
  mount_path: Joi.string().max(1024).custom(checked(normalizeMountPath), 'mount path').description('relative path under .svc/resources/, no ".." segments'),
}).label('ResourceRef');

const envName = Joi.string().pattern(/^[A-Z_][A-Z0-9_]*$/, 'upper-case variable name');

/** The names the manifest reserves (domain/manifest/validate-env.ts: PATH, HOME, LD_PRELOAD, SVC_*, …) are refused here too, each named. */
const envOverrides = Joi.object()
  .pattern(envName, Joi.string().max(4096))
  .custom((env: Record<string, string>, helpers) => {
    const reserved = Object.keys(env).filter(isReservedEnvName);
    // Worded as the manifest's check words it (checkEnvOverrides), so both read the same.
    return reserved.length
      ? helpers.message({ custom: reserved.map((n) => `env_overrides.${n}: Invalid env override '${n}': reserved variable`).join('; ') })
      : env;
  })
  .description(`upper-case names; ${RESERVED_ENV_NAMES.join(', ')} and every ${RESERVED_ENV_PREFIX}* name are reserved (the platform sets them)`);

export const createJobSchema = Joi.object({
  description: Joi.string().trim().min(1).max(200_000).required(),
  title: Joi.string().trim().min(1).max(300),
  issue_type: Joi.string().valid(...ISSUE_TYPES),
  labels: Joi.array().items(Joi.string().trim().min(1).max(100)).unique().max(50),
  parent_id: jobId.allow(null),
  phase: Joi.string().valid('idea', 'backlog', 'ready'),
  priority: Joi.number().integer().min(0).max(4),
  assignee: Joi.string().max(200).allow(null),
  review_required: Joi.string().valid(...REVIEW_REQUIRED),
  defer_until: isoDate.allow(null),
  due_at: isoDate.allow(null),
  harness: Joi.string()
    .max(200)
    .pattern(HARNESS_NAME)
    .description("harness_a … harness_f, an alias, or a harness plugin's id; checked against this server's harnesses"),
  harness_profile: Joi.string().max(200),
  harness_variant: Joi.string().max(200),
  harness_options: Joi.object({ variant: Joi.string().max(200), model: Joi.string().max(200), reasoning_effort: Joi.string().valid(...REASONING_EFFORTS) }),
  model: Joi.string().max(200),
  reasoning_effort: Joi.string().valid(...REASONING_EFFORTS),
  harness_profile_override: Joi.object().unknown(true),
  env_overrides: envOverrides,
  hints: hintsSchema,
  git: gitSchema,
  workspace: Joi.object({
    mode: Joi.string().valid('job', 'session', 'isolated'),
    key: Joi.string().max(200),
    sparse: Joi.array()
      .items(
        Joi.string().custom((p: string, helpers) => {
          const problem = sparsePathProblem(p);
          return problem ? helpers.message({ custom: '{{#label}} {#why}' }, { why: `is not a folder sparse-checkout may name: it ${problem}` }) : p;
        }),
      )
      .min(1)
      .max(MAX_SPARSE_PATHS)
      .unique()
      .description('a sparse checkout: only these folders of the repository (and the files at its top) are checked out (git sparse-checkout, cone mode)'),
  }),
  resource_refs: Joi.array().items(resourceRef).max(100),
  env_name: Joi.string().max(200).allow(null),
  execution_mode: Joi.string().valid(...EXECUTION_MODES),
}).label('CreateJobRequest');

/** The create request of a job svc lays out itself: the same, with the platform's hints. */
export const platformJobSchema = createJobSchema.keys({ hints: platformHintsSchema }).label('PlatformJobRequest');

export const updateJobSchema = Joi.object({
  title: Joi.string().trim().min(1).max(300),
  description: Joi.string().trim().min(1).max(200_000),
  issue_type: Joi.string().valid(...ISSUE_TYPES),
  labels: Joi.array().items(Joi.string().trim().min(1).max(100)).unique().max(50),
  priority: Joi.number().integer().min(0).max(4),
  assignee: Joi.string().max(200).allow(null),
  review_required: Joi.string().valid(...REVIEW_REQUIRED),
  defer_until: isoDate.allow(null),
  due_at: isoDate.allow(null),
  hints: hintsSchema,
  env_name: Joi.string().max(200).allow(null),
  phase: Joi.string()
    .valid(...PHASES)
    .description('moves through the state machine; a move it does not allow is 409'),
  close_reason: Joi.string().max(2000).description('with phase cancelled'),
})
  .min(1)
  .label('UpdateJob');

/** A job of the list with `include_figures`. */
export const jobFiguresSchema = Joi.object({
  attempts: Joi.number().integer().required().description('attempts with a receipt (ended)'),
  cost_usd: Joi.number().required().description("sum of their receipts' base cost"),
  duration_ms: Joi.number().integer().required().description('sum of their wall time, start to end'),
}).label('JobFigures');

export const pullRequestSchema = Joi.object({
  number: Joi.number().integer().required(),
  url: Joi.string().required().description('the page a person opens'),
  state: Joi.string().valid('open', 'closed', 'merged').required(),
  head: Joi.string().required().description("the branch with the job's work"),
  base: Joi.string().required(),
  review: Joi.string().valid('approved', 'changes_requested', 'commented').allow(null).required().description('the latest review the code host reported'),
  opened_by: Joi.string().required(),
  opened_at: timestamp.required(),
  updated_at: timestamp.required(),
})
  .description("the job's pull request on the code host (POST /jobs/{job_id}/pull-request), kept up to date by its deliveries")
  .label('JobPullRequest');

export const openPullRequestSchema = Joi.object({
  title: Joi.string().trim().min(1).max(256).description("the job's title when not given"),
  body: Joi.string().max(65_536).allow('').description("the latest attempt's result summary and a link to the job when not given"),
  base: Joi.string().trim().min(1).max(255).description("the project's branch when not given"),
  draft: Joi.boolean().default(false),
})
  .allow(null)
  .label('OpenPullRequest');

export const jobSchema = Joi.object({
  id: jobId.required(),
  project_id: projectId.required(),
  parent_id: jobId.allow(null).required(),
  depth: Joi.number().integer().min(0).max(2).required(),
  title: Joi.string().required(),
  description: Joi.string().allow(null).required(),
  issue_type: Joi.string().required(),
  labels: Joi.array().items(Joi.string()).required(),
  phase: Joi.string()
    .valid(...PHASES)
    .required(),
  priority: Joi.number().integer().required(),
  assignee: Joi.string().allow(null).required(),
  review_required: Joi.string().required(),
  review_status: Joi.string().allow(null).required(),
  hints: Joi.object().unknown(true).required(),
  git: Joi.object().unknown(true).allow(null).required(),
  resolved_git: Joi.object().unknown(true).allow(null).required(),
  pull_request: pullRequestSchema.allow(null).required(),
  workspace: Joi.object().unknown(true).allow(null).required(),
  env_name: Joi.string().allow(null).required(),
  execution_mode: Joi.string().required(),
  harness: Joi.object()
    .unknown(true)
    .required()
    .description('harness, harness_profile, harness_variant, harness_options, model, reasoning_effort as requested'),
  resource_refs: Joi.array().items(Joi.object().unknown(true)).required(),
  defer_until: timestamp.allow(null).required(),
  due_at: timestamp.allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
  closed_at: timestamp.allow(null).required(),
  close_reason: Joi.string().allow(null).required(),
  figures: jobFiguresSchema.description('only in a list asked with include_figures'),
}).label('Job');

export const listJobsQuery = listQuerySchema.keys({
  phase: Joi.string().valid(...PHASES),
  issue_type: Joi.string().valid(...ISSUE_TYPES),
  label: Joi.string().max(100),
  assignee: Joi.string().max(200),
  priority: Joi.number().integer().min(0).max(4),
  parent_id: jobId,
  due_before: isoDate,
  q: Joi.string().trim().min(1).max(200).description('words of the title or description, each matched as a word or the start of one (all must match)'),
  harness: Joi.string().max(100).description('the harness the job names (harness_a … harness_f)'),
  model: Joi.string().max(300).description('the model the job names'),
  created_after: isoDate,
  created_before: isoDate,
  closed_after: isoDate,
  closed_before: isoDate,
  include_figures: Joi.boolean().default(false).description('each job with `figures`: what its ended attempts cost (USD, from their receipts) and took'),
});
