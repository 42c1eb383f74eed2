import Joi from 'joi';
import { userResponseSchema } from './users.ts';
import { emailSchema } from '../../core/http/schemas.ts';
import { orgId, projectId, roleSchema, timestamp } from '../../core/http/schemas.ts';
import { TYPEID_SUFFIX } from '../../core/ids.ts';

export const ttlDays = Joi.number().integer().min(1).max(90).description('token lifetime in days, 1 to 90 (default 1)');
export const publicKey = Joi.string().trim().max(16_384).description('OpenSSH public key line: "<type> <base64> [comment]"');
export const keyId = Joi.string().pattern(new RegExp(`^key_${TYPEID_SUFFIX}$`), 'key_<base32> id');
export const challengeId = Joi.string().pattern(new RegExp(`^chl_${TYPEID_SUFFIX}$`), 'chl_<base32> id');

export const tokenResponse = Joi.object({
  access_token: Joi.string().required(),
  token_type: Joi.string().valid('Bearer').required(),
  expires_at: timestamp.required(),
  user: userResponseSchema.required(),
}).label('TokenResponse');

export const bootstrapStatus = Joi.object({
  completed: Joi.boolean().required().description('a system administrator exists'),
  window_open: Joi.boolean().required(),
  window_closes_at: timestamp.allow(null).required(),
  requires_token: Joi.boolean().required(),
  mode: Joi.string().valid('auto-open', 'recovery', 'secure', 'closed').required(),
}).label('BootstrapStatus');

export const bootstrapRequest = Joi.object({
  email: emailSchema.required(),
  token: Joi.string().max(1024),
  public_key: publicKey,
  display_name: Joi.string().trim().min(1).max(200),
  ttl_days: ttlDays,
}).label('BootstrapRequest');

export const challengeRequest = Joi.object({ email: emailSchema.required() }).label('ChallengeRequest');

export const challengeResponse = Joi.object({
  challenge_id: challengeId.required(),
  nonce: Joi.string().required().description('sign these exact bytes: ssh-keygen -Y sign -n <namespace>'),
  namespace: Joi.string().required(),
  expires_at: timestamp.required(),
}).label('Challenge');

export const verifyRequest = Joi.object({
  challenge_id: challengeId.required(),
  signature: Joi.string().max(16_384).required().description('armored SSH signature (-----BEGIN SSH SIGNATURE-----)'),
  ttl_days: ttlDays,
}).label('VerifyRequest');

export const keyRequest = Joi.object({ public_key: publicKey.required(), label: Joi.string().trim().max(200) }).label('SshKeyRequest');

export const keyResponse = Joi.object({
  id: keyId.required(),
  type: Joi.string().required(),
  fingerprint: Joi.string().required(),
  label: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
}).label('PublicKey');

export const mintRequest = Joi.object({
  email: emailSchema.required(),
  org_id: orgId,
  project_id: projectId,
  role: roleSchema.default('member'),
  ttl_days: ttlDays,
  display_name: Joi.string().trim().min(1).max(200),
  public_key: publicKey.description("registers this SSH public key on the user's account"),
})
  .xor('org_id', 'project_id')
  .label('MintRequest');

const scopeSchema = Joi.object({ type: Joi.string().valid('org', 'project').required(), id: Joi.string().required() }).label('TokenScope');

export const mintResponse = tokenResponse.keys({ scope: scopeSchema.required(), role: roleSchema.required() }).label('MintResponse');

export const meResponse = Joi.object({
  user: userResponseSchema.required(),
  token: Joi.object({ expires_at: timestamp.required(), scope: scopeSchema.allow(null).required(), role: roleSchema.allow(null).required() }).required(),
  orgs: Joi.array()
    .items(Joi.object({ id: Joi.string(), name: Joi.string(), slug: Joi.string(), role: roleSchema }).label('MyOrg'))
    .required(),
  projects: Joi.array()
    .items(Joi.object({ id: Joi.string(), org_id: Joi.string(), name: Joi.string(), slug: Joi.string(), role: roleSchema }).label('MyProject'))
    .required(),
}).label('Me');
