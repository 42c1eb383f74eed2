import Joi from 'joi';
import { PERMISSIONS } from '../../core/auth/permissions.ts';
import { ROLE_NAMES } from '../../core/auth/permissions.ts';
import { idSchema, orgId, projectId, timestamp, userId } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';

export const roleId = idSchema('role');
export const groupId = idSchema('grp');
export const bindingId = idSchema('bnd');
export const serviceAccountId = idSchema('sa');
export const serviceTokenId = idSchema('sat');

const permission = Joi.string()
  .valid(...Object.keys(PERMISSIONS))
  .messages({ 'any.only': '{{#label}} is not a permission of the catalog' });
const name = Joi.string()
  .trim()
  .pattern(/^[a-z0-9][a-z0-9_.-]*$/, 'lower-case name')
  .max(100);
const description = Joi.string().max(2000).allow('', null);
const principalType = Joi.string().valid('user', 'service_account', 'group');
/** A principal id of the given type; checked against its prefix. */
const principalId = Joi.alternatives().conditional('principal_type', {
  switch: [
    { is: 'user', then: userId },
    { is: 'service_account', then: serviceAccountId },
    { is: 'group', then: groupId },
  ],
});

export const orgParams = Joi.object({ org_id: orgId.required() });

// ─── roles ───────────────────────────────────────────────────────────────
export const createRole = Joi.object({
  name: name.required(),
  scope: Joi.string().valid('org', 'project').default('org').description('org roles bind org-wide; project roles bind to one project'),
  permissions: Joi.array().items(permission).min(1).unique().required(),
  description,
}).label('CreateAccessRole');
export const updateRole = Joi.object({ permissions: Joi.array().items(permission).min(1).unique(), description })
  .min(1)
  .label('UpdateAccessRole');
export const roleParams = orgParams.keys({ role_id: roleId.required() });
export const roleSchema = Joi.object({
  id: roleId.required(),
  org_id: orgId.required(),
  name: Joi.string().required(),
  description: Joi.string().allow('', null).required(),
  scope: Joi.string().valid('org', 'project').required(),
  permissions: Joi.array().items(Joi.string()).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('AccessRole');

// ─── groups ──────────────────────────────────────────────────────────────
export const createGroup = Joi.object({ name: name.required(), description }).label('CreateAccessGroup');
export const groupParams = orgParams.keys({ group_id: groupId.required() });
export const groupSchema = Joi.object({
  id: groupId.required(),
  org_id: orgId.required(),
  name: Joi.string().required(),
  description: Joi.string().allow('', null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('AccessGroup');
export const groupMember = Joi.object({
  principal_type: Joi.string().valid('user', 'service_account').required(),
  principal_id: principalId.required(),
}).label('AccessGroupMember');
export const groupMemberSchema = groupMember.keys({ group_id: groupId.required(), created_at: timestamp.required() }).label('AccessGroupMemberRecord');
export const groupMemberParams = groupParams.keys({
  principal_type: Joi.string().valid('user', 'service_account').required(),
  principal_id: principalId.required(),
});

// ─── bindings ────────────────────────────────────────────────────────────
const roleRef = Joi.alternatives()
  .try(Joi.string().valid(...ROLE_NAMES), roleId)
  .description('a built-in role (owner, admin, member) or a custom role id');
export const createBinding = Joi.object({
  role: roleRef.required(),
  principal_type: principalType.required(),
  principal_id: principalId.required(),
  project_id: projectId.allow(null).description('bind for one project; omitted: org-wide'),
}).label('CreateAccessBinding');
export const bindingParams = orgParams.keys({ binding_id: bindingId.required() });
export const bindingSchema = Joi.object({
  id: bindingId.required(),
  org_id: orgId.required(),
  role: Joi.string().required(),
  principal_type: principalType.required(),
  principal_id: Joi.string().required(),
  project_id: projectId.allow(null).required(),
  created_at: timestamp.required(),
}).label('AccessBinding');
export const listBindingsQuery = listQuerySchema.keys({ principal_type: principalType, principal_id: Joi.string().max(100), project_id: projectId });

// ─── can / explain ───────────────────────────────────────────────────────
export const checkQuery = Joi.object({
  principal_type: principalType.required(),
  principal_id: principalId.required(),
  permission: permission.description('required unless resource_type is given'),
  project_id: projectId,
  resource_type: Joi.string().valid('orgfs', 'orgdocs', 'envdb'),
  resource: Joi.string().max(1000),
  action: Joi.string().valid('read', 'write', 'admin').when('resource_type', { is: Joi.exist(), then: Joi.required() }),
})
  .or('permission', 'resource_type')
  .label('AccessCheck');

// ─── service accounts ────────────────────────────────────────────────────
export const createServiceAccount = Joi.object({
  name: name.required(),
  description,
  role: roleRef.description('bind this role to the new account (org-wide, or on project_id)'),
  project_id: projectId.allow(null),
})
  .with('project_id', 'role')
  .label('CreateServiceAccount');
export const updateServiceAccount = Joi.object({ description }).min(1).label('UpdateServiceAccount');
export const serviceAccountParams = orgParams.keys({ sa_id: serviceAccountId.required() });
export const serviceAccountSchema = Joi.object({
  id: serviceAccountId.required(),
  org_id: orgId.required(),
  name: Joi.string().required(),
  description: Joi.string().allow('', null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('ServiceAccount');
export const mintServiceToken = Joi.object({
  name: Joi.string().max(200),
  scope: Joi.object({
    type: Joi.string().valid('org', 'project').required(),
    id: Joi.alternatives().conditional('type', { is: 'org', then: orgId, otherwise: projectId }).required(),
  }).description("default: the service account's org"),
  permissions: Joi.array().items(permission).min(1).unique().required(),
  ttl_days: Joi.number().integer().min(1).max(90).default(1),
}).label('MintServiceAccountToken');
export const serviceTokenParams = serviceAccountParams.keys({ token_id: serviceTokenId.required() });
export const serviceTokenSchema = Joi.object({
  id: serviceTokenId.required(),
  service_account_id: serviceAccountId.required(),
  name: Joi.string().allow(null).required(),
  scope: Joi.object({ type: Joi.string().required(), id: Joi.string().required() }).required(),
  permissions: Joi.array().items(Joi.string()).required(),
  created_at: timestamp.required(),
  expires_at: timestamp.required(),
  revoked_at: timestamp.allow(null).required(),
}).label('ServiceAccountToken');
export const mintedServiceTokenSchema = serviceTokenSchema
  .keys({ token: Joi.string().required().description('shown once') })
  .label('MintedServiceAccountToken');
