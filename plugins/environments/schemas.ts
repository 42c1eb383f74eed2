import Joi from 'joi';
import { idSchema, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';

const ENV_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const envName = Joi.string().pattern(ENV_NAME, 'lower-case letters, digits and -, at most 63').description('environment name');
const digest = Joi.string().min(1).max(500).description('sha256:… digest, or an image reference');

export const projectParams = Joi.object({ project_id: projectId.required() });
export const envParams = projectParams.keys({ env: envName.required() });
export const deployParams = envParams.keys({ deploy_id: idSchema('dep').required() });

export const listQuery = listQuerySchema.keys({ kind: Joi.string().max(100), type: Joi.string().valid('persistent', 'temporary') });
export const DEPLOY_STATUSES = ['awaiting_approval', 'waiting', 'running', 'succeeded', 'failed', 'rejected', 'pipeline'] as const;
export const deploysQuery = listQuerySchema.keys({ status: Joi.string().valid(...DEPLOY_STATUSES) });

export const reviewSchema = Joi.object({ comment: Joi.string().max(2000).description('why; recorded with the review and on its event') }).label(
  'DeployReviewRequest',
);

export const ensureSchema = Joi.object({
  name: envName.required(),
  type: Joi.string().valid('persistent', 'temporary').description('default: temporary (the manifest decides for an environment it defines)'),
  kind: Joi.string().min(1).max(100).description('for example preview'),
  namespace: Joi.string().min(1).max(63),
  db_ref: Joi.string().min(1).max(200),
  pipeline: Joi.string().min(1).max(200).description('a pipeline of the manifest that deploys this environment'),
  pipeline_inputs: Joi.object().unknown(true),
}).label('EnvironmentEnsure');

export const deployRequestSchema = Joi.object({
  git_sha: Joi.string()
    .pattern(/^[0-9a-f]{40}$/, '40 lower-case hex characters')
    .description('required unless release_tag is given'),
  manifest_hash: Joi.string().min(1).max(200).description('required with git_sha'),
  release_tag: Joi.string()
    .min(1)
    .max(200)
    .description("alternative to git_sha plus manifest_hash; given with them, they must be the release's (422 otherwise)"),
  image_digests: Joi.object().pattern(Joi.string(), digest).description('service → digest; skips the build'),
  image_tag: Joi.string().min(1).max(128).description('tag of pre-built images'),
  direct: Joi.boolean().default(false).description("bypass the environment's pipeline"),
  inputs: Joi.object().unknown(true).description('extra pipeline inputs; may carry release_id or release_tag'),
})
  // With release_tag, git_sha and manifest_hash are checks the release must pass (422 otherwise): release-of.ts.
  .with('manifest_hash', 'git_sha')
  .label('DeployRequest');

export const rollbackSchema = Joi.object({
  release_id: Joi.string().min(1).max(200),
  release_tag: Joi.string().min(1).max(200),
})
  .oxor('release_id', 'release_tag')
  .label('RollbackRequest');

export const suspendSchema = Joi.object({ reason: Joi.string().max(2000) }).label('EnvironmentSuspend');

const releaseSchema = Joi.object({
  id: Joi.string().allow(null).required(),
  tag: Joi.string().allow(null).required(),
  git_sha: Joi.string().allow(null).required(),
  manifest_hash: Joi.string().allow(null).required(),
  image_digests: Joi.object().pattern(Joi.string(), Joi.string()).required(),
  images: Joi.object()
    .pattern(Joi.string(), Joi.string())
    .description(
      "service → the image reference the release's build pushed (`host/ns/service@sha256:…`), or a tag deploy's `image:tag`: what the deployer runs",
    ),
  image_tag: Joi.string().description('the tag a direct deploy named (`image_tag`); its images are in `images`, `image_digests` stays empty'),
}).label('EnvironmentRelease');

const serviceHealth = Joi.object({
  service: Joi.string().required(),
  health: Joi.string().valid('healthy', 'degraded', 'unknown').required(),
  detail: Joi.string().allow('').required(),
}).label('ServiceHealth');

const reviewer = Joi.object({ user: Joi.string().description('e-mail or usr_ id'), group: Joi.string().description('access group name or grp_ id') })
  .xor('user', 'group')
  .label('ProtectionReviewer');

export const protectionSchema = Joi.object({
  required_reviewers: Joi.array().items(reviewer).description('users (e-mail or usr_ id) or access groups (name or grp_ id) who approve deploys'),
  required_approvals: Joi.number().integer().min(1).description('approvals a deploy needs; default 1 with reviewers'),
  allowed_refs: Joi.array().items(Joi.string()).description('branch or tag globs a deployed release must come from (`*` within a segment, `**` across)'),
  wait_seconds: Joi.number().integer().min(0).description('seconds from a deploy’s creation before it runs'),
}).label('EnvironmentProtection');

const deployReview = Joi.object({
  user_id: Joi.string().required(),
  decision: Joi.string().valid('approved', 'rejected').required(),
  comment: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
}).label('DeployReview');

export const environmentSchema = Joi.object({
  id: idSchema('env').required(),
  project_id: projectId.required(),
  name: Joi.string().required(),
  type: Joi.string().valid('persistent', 'temporary').required(),
  namespace: Joi.string().allow(null).required(),
  db_ref: Joi.string().allow(null).required(),
  kind: Joi.string().allow(null).required(),
  pipeline: Joi.string().allow(null).required(),
  pipeline_inputs: Joi.object().unknown(true).required(),
  source: Joi.string().valid('manifest', 'ensured').required(),
  health: Joi.string().valid('healthy', 'degraded', 'unknown').required(),
  health_detail: Joi.array().items(serviceHealth).required(),
  health_checked_at: timestamp.allow(null).required(),
  suspended: Joi.boolean().required(),
  suspended_reason: Joi.string().allow(null).required(),
  suspended_at: timestamp.allow(null).required(),
  current_release: releaseSchema.allow(null).required(),
  protection: protectionSchema.allow(null).required().description("the manifest's protection rules; null when unprotected"),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('Environment');

export const deploySchema = Joi.object({
  id: idSchema('dep').required(),
  environment_id: idSchema('env').required(),
  project_id: projectId.required(),
  status: Joi.string()
    .valid(...DEPLOY_STATUSES)
    .required()
    .description('awaiting_approval and waiting: held by the environment’s protection; rejected: a reviewer refused it'),
  release: releaseSchema.required(),
  previous_release: releaseSchema.allow(null).required(),
  rollback_of: Joi.string().allow(null).required(),
  direct: Joi.boolean().required(),
  pipeline_run_id: Joi.string().allow(null).required(),
  error_message: Joi.string().allow(null).required(),
  services: Joi.array().items(serviceHealth).required(),
  protection: protectionSchema.allow(null).required().description('the protection the deploy was created under'),
  run_after: timestamp.allow(null).required().description('a waiting deploy runs from then'),
  pipeline_request: Joi.object({ inputs: Joi.object().unknown(true).required(), image_tag: Joi.string().allow(null).required() })
    .allow(null)
    .required()
    .description('what a held deploy through a pipeline starts it with'),
  reviews: Joi.array().items(deployReview).required().description('approvals and rejections, oldest first'),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  completed_at: timestamp.allow(null).required(),
}).label('Deploy');
