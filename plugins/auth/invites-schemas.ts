import Joi from 'joi';
import { emailSchema } from '../../core/http/schemas.ts';
import { idSchema, orgId, projectId, roleSchema, timestamp, userId } from '../../core/http/schemas.ts';
import { TYPEID_SUFFIX } from '../../core/ids.ts';
import { publicKey, ttlDays } from './schemas.ts';

export const inviteId = Joi.string().pattern(new RegExp(`^inv_${TYPEID_SUFFIX}$`), 'inv_<base32> id');
export const accessRequestId = idSchema('req');
export const inviteCode = Joi.string()
  .pattern(/^svcinv_[A-Za-z0-9_-]{32}$/, 'svcinv_<code>')
  .description('the code shown once at creation');
const nostrPubkey = Joi.string()
  .pattern(/^[0-9a-fA-F]{64}$/, '64 hex characters')
  .description('hex nostr public key (64 hex characters)');
const reason = Joi.string().trim().min(1).max(1000);
const redirectUrl = Joi.string()
  .uri({ scheme: ['https', 'http'] })
  .max(2048)
  .description('where the web client sends the invitee after accepting');

export const exchangeRequest = Joi.object({
  token: Joi.string().max(8192).required().description('the identity provider token (HS256 JWT)'),
  ttl_days: ttlDays,
}).label('ExchangeRequest');

const expiry = {
  expires_in_days: Joi.number().integer().min(1).max(90).description('days until the code expires (default 7)'),
  expires_at: timestamp.greater('now').description('when the code expires (instead of expires_in_days)'),
};

export const inviteRequest = Joi.object({
  org_id: orgId.required(),
  role: roleSchema.default('member'),
  email: emailSchema.description('the invite applies by itself when this account signs in'),
  provider_hint: Joi.string().trim().min(1).max(200).description('the identity provider or code host the invitee uses (recorded only)'),
  identity_hint: Joi.string()
    .trim()
    .min(1)
    .max(16_384)
    .description('SSH public key, SSH fingerprint or hex nostr key: that key gets the membership when it first logs in'),
  code_host_user: Joi.string()
    .trim()
    .pattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, 'a code-host user name')
    .description("the invitee's user on the code host (adapters.vcshost): its public SSH keys are fetched now and registered to whoever accepts"),
  redirect_url: redirectUrl,
  ...expiry,
})
  .oxor('expires_in_days', 'expires_at')
  .label('InviteRequest');

const appBranding = Joi.object({
  app_name: Joi.string().trim().min(1).max(200).required(),
  primary_color: Joi.string().pattern(/^#[0-9a-fA-F]{6}$/, '#rrggbb'),
  support_email: emailSchema,
}).label('AppBranding');

export const appInviteRequest = Joi.object({
  org_id: orgId.required(),
  email: emailSchema.required(),
  role: roleSchema.description("default member, or the app's x-svc.auth.org_access.invite.invited_role"),
  project_id: projectId.description("the app: its manifest's x-svc.auth.org_access.invite must list the org; its x-svc.branding brands the mail"),
  app: appBranding,
  redirect_url: redirectUrl,
  ...expiry,
})
  .or('app', 'project_id')
  .oxor('expires_in_days', 'expires_at')
  .label('AppInviteRequest');

export const inviteResponse = Joi.object({
  id: inviteId.required(),
  org_id: orgId.required(),
  role: roleSchema.required(),
  status: Joi.string().valid('pending', 'accepted', 'revoked', 'expired').required(),
  email: Joi.string().allow(null).required(),
  provider_hint: Joi.string().allow(null).required(),
  identity_hint: Joi.string().allow(null).required(),
  redirect_url: Joi.string().allow(null).required(),
  app: Joi.object().unknown(true).allow(null).required(),
  source: Joi.string().allow(null).required().description('what made the invite when not a person: domain_signup'),
  code_host_user: Joi.string().allow(null).required(),
  code_host_keys: Joi.number().integer().min(0).required().description("how many of the code-host user's public keys the invite registers"),
  created_by: userId.allow(null).required(),
  expires_at: timestamp.required(),
  accepted_at: timestamp.allow(null).required(),
  accepted_by: userId.allow(null).required(),
  revoked_at: timestamp.allow(null).required(),
  created_at: timestamp.required(),
}).label('Invite');

export const createdInviteResponse = inviteResponse
  .keys({
    code: inviteCode.required(),
    email_sent: Joi.boolean().required().description('whether mail with the code went out (adapters.mailer); false: pass the code on yourself'),
  })
  .label('CreatedInvite');

export const acceptResponse = Joi.object({
  invite: inviteResponse.required(),
  membership: Joi.object({ org_id: orgId.required(), role: roleSchema.required() }).required().label('InviteMembership'),
}).label('AcceptedInvite');

export const accessRequestCreate = Joi.object({
  org_id: orgId.required(),
  email: emailSchema.required(),
  ssh_public_key: publicKey,
  nostr_pubkey: nostrPubkey,
  message: Joi.string().trim().max(1000).description('a note to the admins'),
})
  .xor('ssh_public_key', 'nostr_pubkey')
  .label('AccessRequestCreate');

const status = Joi.string().valid('pending', 'approved', 'rejected');

export const accessRequestResponse = Joi.object({
  id: accessRequestId.required(),
  org_id: orgId.required(),
  email: Joi.string().required(),
  status: status.required(),
  key_type: Joi.string().valid('ssh', 'nostr').required(),
  ssh_fingerprint: Joi.string().allow(null).required(),
  nostr_pubkey: Joi.string().allow(null).required(),
  message: Joi.string().allow(null).required(),
  role: roleSchema.allow(null).required(),
  reason: Joi.string().allow(null).required(),
  user_id: userId.allow(null).required(),
  decided_by: userId.allow(null).required(),
  decided_at: timestamp.allow(null).required(),
  created_at: timestamp.required(),
}).label('AccessRequest');

export const accessRequestStatus = Joi.object({
  id: accessRequestId.required(),
  org_id: orgId.required(),
  status: status.required(),
  reason: Joi.string().allow(null).required(),
  decided_at: timestamp.allow(null).required(),
  created_at: timestamp.required(),
}).label('AccessRequestStatus');

export const accessRequestListQuery = Joi.object({ status });
export const approveRequest = Joi.object({ role: roleSchema.default('member') }).label('AccessRequestApprove');
export const rejectRequest = Joi.object({ reason: reason.required() }).label('AccessRequestReject');
