import Joi from 'joi';
import { orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { PROJECT_SLUG } from '../../core/slugs.ts';
import { checkSshUrl, GitAccessError, repoKind } from '../../core/git-access.ts';

/** HTTPS, SSH (ssh:// or scp-like user@host:path) and file:// with an absolute path. */
const REPO_URL = /^(https:\/\/[^\s/]+\/\S+|ssh:\/\/\S+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:\S+|file:\/\/\/\S+)$/;
const BRANCH = /^(?!\/|.*\/$|.*\.\.|.*@\{|.*\.lock$)[A-Za-z0-9._\/-]{1,200}$/;

const name = Joi.string().trim().min(1).max(200);
const slug = Joi.string().trim().lowercase().pattern(PROJECT_SLUG, '4 to 8 letters and digits');
/** An SSH URL has no user, host or path git would hand to ssh as an option (core/git-access.ts checkSshUrl). */
const repoUrl = Joi.string()
  .trim()
  .max(2000)
  .pattern(REPO_URL, 'https://, ssh:// or user@host:path, or file:///absolute/path')
  .custom((url: string, helpers) => {
    try {
      if (repoKind(url) === 'ssh') checkSshUrl(url);
      return url;
    } catch (e) {
      if (e instanceof GitAccessError) return helpers.message({ custom: '{{#label}} {#why}' }, { why: e.message });
      throw e;
    }
  })
  .allow(null);
const branch = Joi.string().trim().pattern(BRANCH, 'git branch name');

export const projectSchema = Joi.object({
  id: projectId.required(),
  org_id: orgId.required(),
  name: Joi.string().required(),
  slug: Joi.string().required(),
  repo_url: Joi.string().allow(null).required(),
  branch: Joi.string().required(),
  deleted: Joi.boolean().required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
}).label('Project');

export const createProject = Joi.object({ org_id: orgId.required(), name: name.required(), slug, repo_url: repoUrl, branch }).label('CreateProject');
export const ensureProject = createProject.keys({ id: projectId }).label('EnsureProject');
export const updateProject = Joi.object({
  name,
  repo_url: repoUrl,
  branch,
  deleted: Joi.boolean(),
  slug: slug.description('immutable: accepted only when equal to the current slug'),
})
  .min(1)
  .label('UpdateProject');
export const projectParams = Joi.object({ project_id: projectId.required() });
export const listProjectsQuery = listQuerySchema.keys({ org_id: orgId.description('only projects of this org') });
