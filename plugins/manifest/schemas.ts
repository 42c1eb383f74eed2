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
  warnings: Joi.array()
    .items(problem)
    .description("on a sync: keys svc accepted but ignores (another tool's manifest keys), each with its path; they are not in `parsed`"),
}).label('Manifest');

export const validationSchema = Joi.object({
  valid: Joi.boolean().required(),
  errors: Joi.array().items(problem).required(),
  warnings: Joi.array().items(problem).required().description('keys svc accepts but ignores'),
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

/** One declared pipeline input (manifest `pipelines.<name>.inputs.<input>`, docs/pipelines.md "Declared inputs"). */
const pipelineInputSchema = Joi.object({
  required: Joi.boolean().description('a run without it (and without a default) is refused with 422'),
  default: Joi.string().allow('').description('fills the input when a run is not given it'),
  description: Joi.string().allow(''),
})
  .unknown(true)
  .label('PipelineInputDeclaration');

/** What a kind's definitions carry besides their name and steps, for clients to read (a pipeline's declared inputs). */
export const definitionKeys = {
  workflows: {},
  pipelines: {
    inputs: Joi.object()
      .pattern(Joi.string(), pipelineInputSchema)
      .description('the inputs a run may be given, by name; absent when the pipeline declares none (then any input passes)'),
  },
};

/** A workflow or pipeline definition from the manifest, with its name. */
export const definitionSchema = (label: string, keys: Record<string, Joi.Schema> = {}) =>
  Joi.object({ name: Joi.string().required(), steps: Joi.array().items(Joi.object().unknown(true)).required(), ...keys })
    .unknown(true)
    .label(label);
