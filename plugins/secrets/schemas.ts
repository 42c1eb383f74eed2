import Joi from 'joi';
import { orgId, projectId, timestamp, userId } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';

export const SECRET_NAME = /^[A-Z][A-Z0-9_]*$/;
export const SECRET_TYPES = ['env', 'file', 'code_host_token', 'ssh_key'] as const;
export const SECRET_SCOPES = ['project', 'org', 'user', 'system'] as const;
/** Room for an SSH key or a small file; the request body limit (1 MB) is far above it. */
export const MAX_VALUE_CHARS = 64 * 1024;

export type SecretType = (typeof SECRET_TYPES)[number];
export type SecretScope = (typeof SECRET_SCOPES)[number];

const name = Joi.string().max(128).pattern(SECRET_NAME, 'upper-case letters, digits and underscores, starting with a letter');
const value = Joi.string().min(1).max(MAX_VALUE_CHARS).description('never returned once written');
const type = Joi.string().valid(...SECRET_TYPES);

export const secretSchema = Joi.object({
  name: Joi.string().required(),
  type: type.required(),
  scope: Joi.string()
    .valid(...SECRET_SCOPES)
    .required(),
  shared_with_jobs: Joi.boolean().description(
    'system secrets only: whether it resolves into jobs of every org (absent for the other scopes, which reach their own jobs)',
  ),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('Secret');

export const createSecret = Joi.object({ name: name.required(), value: value.required(), type: type.default('env') }).label('CreateSecret');
export const replaceSecret = Joi.object({ value: value.required(), type: type.description('unchanged when omitted') }).label('ReplaceSecret');

const sharedWithJobs = Joi.boolean().description(
  "whether jobs of every org may resolve it (`${secret.NAME}`, git, harness and deploy credentials); default false. svc's own integration secrets (CHATAPP_SIGNING_SECRET, VCSHOST_WEBHOOK_SECRET, REGISTRY_USERNAME, REGISTRY_PASSWORD) cannot be shared (422)",
);
/** System secrets carry `shared_with_jobs`; a replacement may change only it (the value stays). */
export const createSystemSecret = createSecret.keys({ shared_with_jobs: sharedWithJobs.default(false) }).label('CreateSystemSecret');
export const replaceSystemSecret = Joi.object({
  value: value.description('never returned once written; unchanged when omitted'),
  type: type.description('unchanged when omitted'),
  shared_with_jobs: sharedWithJobs.description('unchanged when omitted'),
})
  .or('value', 'shared_with_jobs')
  .with('type', 'value')
  .label('ReplaceSystemSecret');
export const listSecretsQuery = listQuerySchema.keys({ include_deleted: Joi.forbidden() });

const secretName = { name: name.required() };
export const params = {
  project: Joi.object({ project_id: projectId.required() }),
  org: Joi.object({ org_id: orgId.required() }),
  user: Joi.object({ user_id: userId.required() }),
  system: undefined,
};
export const namedParams = {
  project: params.project.keys(secretName),
  org: params.org.keys(secretName),
  user: params.user.keys(secretName),
  system: Joi.object(secretName),
};
