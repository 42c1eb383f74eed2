import Joi from 'joi';
import { idSchema, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { BUILD_ERROR_CLASSES } from '../../core/ports/builder.ts';

export const buildId = idSchema('bld');
export const runId = idSchema('brun');
export const releaseId = idSchema('rel');

export const RUN_STATUSES = ['pending', 'building', 'completed', 'failed', 'cancelled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const ACTIVE_STATUSES: RunStatus[] = ['pending', 'building'];

const gitSha = Joi.string()
  .lowercase()
  .pattern(/^[0-9a-f]{40}$/, '40 hex characters')
  .description('the commit, 40 hex characters');
const manifestHash = Joi.string()
  .pattern(/^sha256:[0-9a-f]{64}$/, 'sha256:<64 hex>')
  .description('hash of the manifest synced for git_sha');
const serviceName = Joi.string().pattern(/^[a-z0-9][a-z0-9_.-]{0,62}$/, 'service name');
const digest = Joi.string().pattern(/^sha256:[0-9a-f]{64}$/, 'sha256:<64 hex>');
/** A release tag: what a registry accepts as an image tag. */
export const releaseTag = Joi.string().pattern(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/, 'tag (letters, digits, _ . -; at most 128)');

const registryOverride = Joi.alternatives()
  .try(
    Joi.string().valid('svc', 'none'),
    Joi.object({
      host: Joi.string().min(1).max(253).required(),
      namespace: Joi.string().min(1).max(200),
      auth: Joi.object({ username_secret: Joi.string().min(1), token_secret: Joi.string().min(1) }),
    }),
  )
  .description("where the images go: 'svc' (native), 'none' (stay in the engine) or {host, namespace, auth}; default: the manifest's registry");

export const projectParams = Joi.object({ project_id: projectId.required() });
export const buildParams = Joi.object({ build_id: buildId.required() });
export const releaseParams = Joi.object({ tag: Joi.alternatives().try(releaseId, releaseTag).required().description('a release tag, or a rel_ id') });

export const createBuildSchema = Joi.object({
  git_sha: gitSha.required(),
  manifest_hash: manifestHash.required(),
  services: Joi.array().items(serviceName).min(1).max(100).unique().allow(null).default(null).description('null: every service with build config'),
  inputs: Joi.object({
    platforms: Joi.array()
      .items(Joi.string().pattern(/^[a-z0-9]+\/[a-z0-9]+(\/[a-z0-9]+)?$/, 'os/arch[/variant]'))
      .max(8)
      .unique(),
    version: Joi.string().max(128).description('tag the images with this version instead of sha-<sha>'),
  })
    .unknown(true)
    .default({}),
  registry: registryOverride.allow(null).default(null),
  cache: Joi.object().unknown(true).default({}),
  force_rebuild: Joi.boolean().default(false).description('build even when a successful build of the same commit, manifest and services exists'),
}).label('BuildCreate');

export const rerunSchema = Joi.object({ force_rebuild: Joi.boolean().default(false) })
  .allow(null)
  .default({})
  .label('BuildRunCreate');

export const listBuildsQuery = listQuerySchema.keys({ git_sha: gitSha });
export const runsQuery = listQuerySchema.keys({ status: Joi.string().valid(...RUN_STATUSES) });

export const runSchema = Joi.object({
  id: runId.required(),
  build_id: buildId.required(),
  status: Joi.string()
    .valid(...RUN_STATUSES)
    .required(),
  backend: Joi.string().required(),
  force_rebuild: Joi.boolean().required(),
  runner_ref: Joi.string().allow(null).required(),
  logs_ref: Joi.string().allow(null).required(),
  error_class: Joi.string()
    .valid(...BUILD_ERROR_CLASSES)
    .allow(null)
    .required(),
  error_message: Joi.string().allow(null).required(),
  failed_stage: Joi.string().allow(null).required(),
  log_tail: Joi.array().items(Joi.string().allow('')).allow(null).required().description('last 30 lines of builder output of a failed run'),
  reused_from: runId.allow(null).required().description('the earlier run whose artifacts this run reused'),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  started_at: timestamp.allow(null).required(),
  completed_at: timestamp.allow(null).required(),
}).label('BuildRun');

export const buildSchema = Joi.object({
  id: buildId.required(),
  project_id: projectId.required(),
  git_sha: Joi.string().required(),
  manifest_hash: Joi.string().required(),
  services: Joi.array().items(Joi.string()).allow(null).required(),
  inputs: Joi.object().unknown(true).required(),
  registry: Joi.alternatives().try(Joi.string(), Joi.object().unknown(true)).allow(null).required(),
  cache: Joi.object().unknown(true).required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  status: Joi.string()
    .valid(...RUN_STATUSES)
    .required()
    .description('status of the latest run'),
  latest_run: runSchema.allow(null).required(),
}).label('BuildSpec');

export const artifactSchema = Joi.object({
  run_id: runId.required(),
  service_name: Joi.string().required(),
  image_ref: Joi.string().required(),
  digest: digest.required(),
  platforms: Joi.array().items(Joi.string()).required(),
  size_bytes: Joi.number().integer().allow(null).required(),
  created_at: timestamp.required(),
}).label('BuildArtifact');

export const createReleaseSchema = Joi.object({
  build_id: buildId.required(),
  tag: releaseTag.description('unique in the project; default: the version, else sha-<first 12 of the sha>'),
  version: Joi.string().max(128),
}).label('ReleaseCreate');

export const releaseQuery = Joi.object({
  project_id: projectId
    .when('$params.tag', { is: Joi.string().pattern(/^rel_/), then: Joi.optional(), otherwise: Joi.required() })
    .description('the project the tag belongs to; optional when a rel_ id is given'),
}).label('ReleaseQuery');
export const listReleasesQuery = listQuerySchema;

export const releaseSchema = Joi.object({
  id: releaseId.required(),
  project_id: projectId.required(),
  git_sha: Joi.string().required(),
  manifest_hash: Joi.string().required(),
  image_digests: Joi.object().pattern(Joi.string(), digest).required(),
  build_id: buildId.required(),
  version: Joi.string().allow(null).required(),
  tag: Joi.string().required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
}).label('Release');
