import Joi from 'joi';
import { idSchema, orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { MANAGED_PREFIX, PROVIDER_KINDS } from '../../core/ports/inference.ts';
import { PRICE_KEYS, type ModelWithTarget, type TargetRow } from './repository.ts';

export const targetId = idSchema('itgt');
const scopeSchema = Joi.string().valid('org', 'system').required().description('org entries belong to org_id; system ones (org_id null) serve every org');
const secretName = Joi.string()
  .max(128)
  .pattern(/^[A-Z][A-Z0-9_]*$/, 'secret name (upper-case letters, digits, _)');
const timeoutMs = Joi.number().integer().min(100).max(3_600_000);
const modelId = Joi.string().min(1).max(200).pattern(/^\S+$/, 'no whitespace');
/** Names of targets and managed models: the part after `managed/`, and the `<target>/` of a target's model. */
const entryName = Joi.string()
  .max(64)
  .pattern(/^[a-z0-9][a-z0-9._-]*$/, 'lower-case letters, digits, ".", "_" and "-", starting with a letter or digit');
/** A base URL without user:password (a credential belongs in a secret, never in a URL anyone can read). */
const baseUrl = Joi.string()
  .uri({ scheme: ['http', 'https'] })
  .max(2000)
  .custom((value: string, helpers) =>
    new URL(value).username || new URL(value).password
      ? helpers.message({ custom: '"base_url" must not carry a user or password; name a credential_secret instead' })
      : value,
  );

export const orgQuery = listQuerySchema.keys({
  org_id: orgId.description("the org's entries; without it, the system's (system administrator)"),
});

export const targetParams = Joi.object({ target_id: targetId.required() });

export const createTarget = Joi.object({
  org_id: orgId.allow(null).description('the owning org; null or absent: a system target (system administrator)'),
  name: entryName.required().description('unique in its scope; `<name>/<model>` addresses its models in the proxy'),
  kind: Joi.string()
    .valid(...PROVIDER_KINDS)
    .required()
    .description('wire format: openai (chat completions) or anthropic (messages)'),
  base_url: baseUrl.required().description('openai: including /v1 (https://api.openai.com/v1); anthropic: without it (https://api.anthropic.com)'),
  credential_secret: secretName.allow(null).description('name of the secret holding the key (org, then system secrets); never a value'),
  allowed_models: Joi.array().items(modelId).max(500).unique().default([]).description('upstream model ids this target serves; empty: any'),
  request_timeout_ms: timeoutMs.allow(null).description('until response headers (504 after); default inference.request_timeout_ms'),
  idle_timeout_ms: timeoutMs.allow(null).description('longest silence inside an answer or stream; default inference.idle_timeout_ms'),
  responses_api: Joi.boolean()
    .default(false)
    .description(
      'openai only: the upstream also serves the Responses API ({base_url}/responses), so Responses calls pass through instead of being translated to chat completions',
    ),
}).label('CreateInferenceTarget');

export const updateTarget = Joi.object({
  kind: Joi.string().valid(...PROVIDER_KINDS),
  base_url: baseUrl,
  credential_secret: secretName.allow(null),
  allowed_models: Joi.array().items(modelId).max(500).unique(),
  request_timeout_ms: timeoutMs.allow(null),
  idle_timeout_ms: timeoutMs.allow(null),
  responses_api: Joi.boolean(),
})
  .min(1)
  .label('UpdateInferenceTarget');

export const targetSchema = Joi.object({
  id: targetId.required(),
  org_id: orgId.allow(null).required(),
  scope: scopeSchema,
  name: Joi.string().required(),
  kind: Joi.string()
    .valid(...PROVIDER_KINDS)
    .required(),
  base_url: Joi.string().required(),
  credential_secret: Joi.string().allow(null).required().description('the secret name; its value is never returned'),
  allowed_models: Joi.array().items(Joi.string()).required(),
  request_timeout_ms: Joi.number().integer().allow(null).required(),
  idle_timeout_ms: Joi.number().integer().allow(null).required(),
  responses_api: Joi.boolean().required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('InferenceTarget');

export const toTarget = (t: TargetRow) => ({
  id: t.id,
  org_id: t.org_id,
  scope: t.org_id ? 'org' : 'system',
  name: t.name,
  kind: t.kind,
  base_url: t.base_url,
  credential_secret: t.credential_secret,
  allowed_models: t.allowed_models,
  request_timeout_ms: t.request_timeout_ms,
  idle_timeout_ms: t.idle_timeout_ms,
  responses_api: t.responses_api,
  created_by: t.created_by,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

const price = Joi.number().min(0).max(1_000_000).allow(null).messages({ 'number.min': '{{#label}} must be a non-negative price' });
const pricesSchema = Joi.object(Object.fromEntries(PRICE_KEYS.map((k) => [k, price])));

export const managedListQuery = listQuerySchema.keys({
  org_id: orgId.description("the org's entries with the system's; default: the token's org or project"),
  project_id: projectId.description('only what that project may use (implies its org)'),
});

export const createManagedModel = Joi.object({
  org_id: orgId.allow(null).description('the owning org; null or absent: a system entry (system administrator)'),
  name: Joi.alternatives(entryName, Joi.string().pattern(new RegExp(`^${MANAGED_PREFIX}[a-z0-9][a-z0-9._-]{0,63}$`)))
    .required()
    .description('the name after managed/ (or the full managed/<name>)'),
  target_id: targetId.required().description('a target of the same org or of the system'),
  upstream_model: modelId.required().description('the model id the target knows'),
  description: Joi.string().max(1000).allow(null),
  prices: pricesSchema.description('USD per million tokens: input, output, cache_read, cache_write, reasoning (non-negative)'),
  project_ids: Joi.array().items(projectId).min(1).max(1000).unique().allow(null).description('only these projects of the org may use it; absent: all'),
}).label('CreateManagedModel');

export const managedParams = Joi.object({
  canonical_model_id: Joi.string().max(200).required().description('managed/<name> (URL-encoded or not) or the bare name'),
});
export const managedDeleteQuery = Joi.object({ org_id: orgId.description("the org's entry; without it, the system's") });

export const managedModelSchema = Joi.object({
  canonical_model_id: Joi.string().required(),
  id: idSchema('imod').required(),
  name: Joi.string().required(),
  org_id: orgId.allow(null).required(),
  scope: scopeSchema,
  target: Joi.object({ id: targetId.required(), name: Joi.string().required(), kind: Joi.string().required() }).required(),
  upstream_model: Joi.string().required(),
  description: Joi.string().allow(null).required(),
  prices: Joi.object(Object.fromEntries(PRICE_KEYS.map((k) => [k, Joi.number().allow(null).required()]))).required(),
  currency: Joi.string().valid('USD').required(),
  project_ids: Joi.array().items(Joi.string()).allow(null).required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('ManagedModel');

const priceOf = (v: string | null) => (v === null ? null : Number(v));

export const toManagedModel = (m: ModelWithTarget) => ({
  canonical_model_id: `${MANAGED_PREFIX}${m.name}`,
  id: m.id,
  name: m.name,
  org_id: m.org_id,
  scope: m.org_id ? 'org' : 'system',
  target: { id: m.target.id, name: m.target.name, kind: m.target.kind },
  upstream_model: m.upstream_model,
  description: m.description,
  prices: Object.fromEntries(PRICE_KEYS.map((k) => [k, priceOf(m[`${k}_price`])])),
  currency: 'USD',
  project_ids: m.project_ids,
  created_by: m.created_by,
  created_at: m.created_at,
  updated_at: m.updated_at,
});

export const providerSchema = Joi.object({
  name: Joi.string().required(),
  kind: Joi.string()
    .valid(...PROVIDER_KINDS)
    .required(),
  description: Joi.string().required(),
  base_url: Joi.string().required(),
  credential_secret: Joi.string().allow(null).required().description('the system secret holding its key; never the value'),
  models_endpoint: Joi.string().required(),
}).label('Provider');

export const providerParams = Joi.object({
  name: Joi.string()
    .max(64)
    .pattern(/^[a-z][a-z0-9_-]*$/)
    .required(),
});

export const pageQuery = listQuerySchema;

export const modelSchema = Joi.object({
  id: Joi.string().required().description('what to send as `model` to the proxy'),
  object: Joi.string().valid('model').required(),
  source: Joi.string()
    .valid('provider', 'config', 'managed')
    .required()
    .description("provider: from the provider's models endpoint; config: configured; managed: the catalog"),
  kind: Joi.string()
    .valid(...PROVIDER_KINDS)
    .required(),
  provider: Joi.string().allow(null).required().description('the configured provider (provider models)'),
  target: Joi.string().allow(null).required().description('the inference target (managed models)'),
  upstream_model: Joi.string().required(),
  org_id: Joi.string()
    .allow(null)
    .required()
    .description(
      "the org whose catalog holds a managed entry (null: the system's, and for provider models); without org_id or project_id the list covers every org the caller can see",
    ),
}).label('Model');

export const modelsQuery = listQuerySchema.keys({
  org_id: orgId.description("include the org's managed models"),
  project_id: projectId.description('managed models that project may use'),
  source: Joi.string().valid('provider', 'managed').description('only provider models, or only managed ones'),
});

const message = Joi.object({ role: Joi.string().required() }).unknown(true);

/** Only what the proxy must read is checked; everything else goes to the upstream as sent. */
export const chatRequest = Joi.object({
  model: Joi.string().min(1).max(300).required(),
  messages: Joi.array().items(message).min(1).required(),
  stream: Joi.boolean(),
  stream_options: Joi.object().unknown(true).allow(null),
  max_tokens: Joi.number().integer().min(1).allow(null),
  max_completion_tokens: Joi.number().integer().min(1).allow(null),
  tools: Joi.array().items(
    Joi.object({ type: Joi.string().valid('function').required(), function: Joi.object({ name: Joi.string().required() }).unknown(true).required() }).unknown(
      true,
    ),
  ),
})
  .unknown(true)
  .label('ChatCompletionRequest');

/** The answer as the upstream gave it (OpenAI-compatible) or as translated; with stream: true, server-sent chat.completion.chunk events ending in [DONE]. */
export const chatResponse = Joi.object({
  id: Joi.string(),
  object: Joi.string().valid('chat.completion'),
  model: Joi.string(),
  choices: Joi.array().items(Joi.object().unknown(true)),
  usage: Joi.object().unknown(true),
})
  .unknown(true)
  .label('ChatCompletion')
  .description('application/json: a chat.completion; with stream: true, text/event-stream of chat.completion.chunk events and data: [DONE]');
