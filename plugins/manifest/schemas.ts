import Joi from 'joi';
import { projectId, timestamp } from '../../core/http/schemas.ts';
import { MAX_LIMIT } from '../../core/http/lists.ts';
import { REF_PATTERN } from './git-source.ts';

export const projectParams = Joi.object({ project_id: projectId.required() });
export const namedParams = projectParams.keys({ name: Joi.string().min(1).max(200).required() });

export const manifestSource = Joi.object({
  yaml: Joi.string()
    .allow('')
    .max(512 * 1024)
    .description('the manifest text; omit to read .svc/manifest.yaml from the project repository'),
  ref: Joi.string().pattern(REF_PATTERN, 'branch, tag or commit SHA').description("git ref to read (default: the project's branch)"),
})
  .oxor('yaml', 'ref')
  .label('ManifestSource');

const problem = Joi.object({ path: Joi.string().allow('').required(), message: Joi.string().required() }).label('ManifestProblem');

export const manifestSchema = Joi.object({
  project_id: projectId.required(),
  manifest_hash: Joi.string()
    .pattern(/^sha256:[0-9a-f]{64}$/)
    .required(),
  git_sha: Joi.string().length(40).allow(null).required(),
  ref: Joi.string().allow(null).required(),
  yaml: Joi.string().allow('').required(),
  parsed: Joi.object().unknown(true).required(),
  synced_at: timestamp.required(),
  synced_by: Joi.string().allow(null).required(),
}).label('Manifest');

export const validationSchema = Joi.object({
  valid: Joi.boolean().required(),
  errors: Joi.array().items(problem).required(),
  manifest_hash: Joi.string().allow(null).required().description('the hash the manifest would get when synced'),
}).label('ManifestValidation');

export const invalidManifestSchema = Joi.object({
  statusCode: Joi.number().valid(422).required(),
  error: Joi.string().required(),
  message: Joi.string().required(),
  errors: Joi.array().items(problem).required(),
}).label('InvalidManifest');

export const pageQuery = Joi.object({
  limit: Joi.number().integer().min(1).max(MAX_LIMIT).default(10),
  offset: Joi.number().integer().min(0).default(0),
});

/** A workflow or pipeline definition from the manifest, with its name. */
export const definitionSchema = (label: string) =>
  Joi.object({ name: Joi.string().required(), steps: Joi.array().items(Joi.object().unknown(true)).required() })
    .unknown(true)
    .label(label);
