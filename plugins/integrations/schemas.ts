import Joi from 'joi';
import { idSchema, orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { recordedEventSchema } from '../../core/events/schema.ts';

export const routeId = idSchema('route');
/** Team and channel ids as the chat app writes them (T0123ABCD, C0456EFGH). */
const chatId = Joi.string().pattern(/^[A-Za-z0-9_-]{1,64}$/, 'chat app id (letters, digits, _ and -)');

export const projectParams = Joi.object({ project_id: projectId.required() });
export const routeParams = projectParams.keys({ route_id: routeId.required() });

export const createRouteSchema = Joi.object({
  team_id: chatId.required().description("the chat team (workspace) id, as in the app's events"),
  channel: chatId.allow(null).default(null).description('a channel id; null or absent routes every channel of the team not routed on its own'),
}).label('CreateChatRoute');

export const routesQuery = listQuerySchema.keys({ include_deleted: Joi.forbidden(), team_id: chatId });

export const routeSchema = Joi.object({
  id: routeId.required(),
  org_id: orgId.required(),
  project_id: projectId.required(),
  team_id: Joi.string().required(),
  channel: Joi.string().allow(null).required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
}).label('ChatRoute');

/** An event as stored by an inbound delivery (the spine's fields). */
export const eventSchema = recordedEventSchema.keys({ source: Joi.string().valid('vcshost', 'chatapp').required() }).label('InboundEvent');

export const ignoredSchema = Joi.object({
  ignored: Joi.boolean().valid(true).required(),
  message: Joi.string().required(),
}).label('IgnoredDelivery');

export const challengeSchema = Joi.object({ challenge: Joi.string().required() }).label('ChatChallenge');

export const orgParams = Joi.object({ org_id: orgId.required() });
export const chatTeamParams = orgParams.keys({ team_id: chatId.required() });

export const bindingsQuery = listQuerySchema.keys({ include_deleted: Joi.forbidden() });

export const requestBindingSchema = Joi.object({
  team_id: chatId.required().description("the chat team (workspace) id, as in the app's events"),
}).label('RequestChatTeamBinding');

export const bindingCodeSchema = Joi.object({
  team_id: Joi.string().required(),
  org_id: orgId.required(),
  status: Joi.string().valid('pending').required(),
  code: Joi.string().required().description('post "bind <code>" in the team (a message or a mention of the app) before expires_at; shown once, single use'),
  expires_at: timestamp.required(),
}).label('ChatTeamBindingCode');

export const bindingStatusSchema = Joi.object({
  team_id: Joi.string().required(),
  org_id: orgId.required(),
  status: Joi.string().valid('pending', 'active').required(),
  bound_at: timestamp.allow(null).required(),
  expires_at: timestamp.allow(null).required().description("the newest pending code's expiry; null once active"),
}).label('ChatTeamBinding');

export const boundSchema = Joi.object({
  bound: Joi.boolean().valid(true).required(),
  team_id: Joi.string().required(),
  message: Joi.string().required(),
}).label('ChatTeamBound');
