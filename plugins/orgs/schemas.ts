import Joi from 'joi';
import { orgId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { ORG_SLUG } from '../../core/slugs.ts';

const name = Joi.string().trim().min(1).max(200);
const slug = Joi.string().trim().lowercase().pattern(ORG_SLUG, 'lower-case letters, digits and inner hyphens, at most 63');

export const orgSchema = Joi.object({
  id: orgId.required(),
  name: Joi.string().required(),
  slug: Joi.string().required(),
  deleted: Joi.boolean().required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('Org');

export const createOrg = Joi.object({ name: name.required(), slug }).label('CreateOrg');
export const ensureOrg = Joi.object({ name: name.required(), slug, id: orgId }).label('EnsureOrg');
export const updateOrg = Joi.object({ name, slug, deleted: Joi.boolean() }).min(1).label('UpdateOrg');
export const orgParams = Joi.object({ org_id: orgId.required() });
export const listOrgsQuery = listQuerySchema;
