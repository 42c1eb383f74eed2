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
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('Secret');

export const createSecret = Joi.object({ name: name.required(), value: value.required(), type: type.default('env') }).label('CreateSecret');
export const replaceSecret = Joi.object({ value: value.required(), type: type.description('unchanged when omitted') }).label('ReplaceSecret');
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
