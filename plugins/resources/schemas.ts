import Joi from 'joi';
import { idSchema, orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { listQuerySchema } from '../../core/http/lists.ts';
import { MAX_DOC_PATH, normalizeDocPath } from '../../core/ports/resources.ts';
import type { DocRow, DocWithVersion, VersionMeta } from './repository.ts';
import { MAX_DOC_BYTES } from './service.ts';

export const docId = idSchema('doc');
const docVersionId = idSchema('docv');

/** `/guides/style.md`; a missing leading `/` is added. */
export const docPath = Joi.string()
  .max(MAX_DOC_PATH)
  .custom((value: string, helpers) => {
    const checked = normalizeDocPath(value);
    return 'error' in checked ? helpers.message({ custom: `{{#label}} ${checked.error}` }) : checked.path;
  })
  .description('an absolute-like path such as /guides/style.md: no empty, "." or ".." segments')
  .example('/guides/style.md');

const pathPrefix = Joi.string()
  .max(MAX_DOC_PATH)
  .pattern(/^[^\p{Cc}]*$/u, 'no control characters')
  .custom((value: string) => (value.startsWith('/') ? value : `/${value}`))
  .description('only documents whose path starts with this (a leading "/" is added)');

const version = Joi.number().integer().min(1);
const mutationId = Joi.string().trim().min(1).max(200).description("the caller's id for this change, carried into the system.doc.* event");
const metadata = Joi.object().unknown(true).description('free-form JSON stored with the version');

export const orgParams = Joi.object({ org_id: orgId.required() });
export const docParams = Joi.object({ org_id: orgId.required(), doc_id: docId.required() });

export const listQuery = listQuerySchema.keys({
  path: pathPrefix,
  project_id: projectId.description('only documents of this project'),
});
export const versionsQuery = listQuerySchema.keys({ include_deleted: Joi.forbidden() });
export const getQuery = Joi.object({ version: version.description('an older version (default: the current one)') });
export const byPathQuery = Joi.object({ path: docPath.required(), version: version.description('an older version (default: the current one)') });
export const deleteQuery = Joi.object({
  expected_version: version.description('refuse (409) unless this is the current version'),
  mutation_id: mutationId,
});

const content = Joi.string().allow('').required().description(`UTF-8 text, at most ${MAX_DOC_BYTES} bytes (1 MiB)`);

export const createSchema = Joi.object({
  path: docPath.required(),
  content,
  metadata,
  project_id: projectId.allow(null).description('the project the document belongs to (its events are recorded there); none: org-wide'),
  mutation_id: mutationId,
}).label('CreateDoc');

export const updateSchema = Joi.object({
  content,
  metadata: metadata.description("stored with the new version; left out, the previous version's carries over"),
  expected_version: version.description('refuse (409) unless this is the current version'),
  mutation_id: mutationId,
}).label('UpdateDoc');

const docFields = {
  id: docId.required(),
  org_id: orgId.required(),
  project_id: projectId.allow(null).required(),
  path: Joi.string().required(),
  current_version: version.required(),
  version: version.required().description('the version shown'),
  version_id: docVersionId.required(),
  content_hash: Joi.string()
    .pattern(/^sha256:[0-9a-f]{64}$/)
    .required(),
  size_bytes: Joi.number().integer().min(0).required(),
  metadata: Joi.object().unknown(true).required(),
  deleted: Joi.boolean().required(),
  deleted_at: timestamp.allow(null).required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
  updated_at: timestamp.required(),
  version_created_by: Joi.string().allow(null).required(),
  version_created_at: timestamp.required(),
};

export const docSummarySchema = Joi.object(docFields).label('DocSummary');
export const docSchema = Joi.object({ ...docFields, content: Joi.string().allow('').required() }).label('Doc');

export const versionSchema = Joi.object({
  id: docVersionId.required(),
  doc_id: docId.required(),
  version: version.required(),
  size_bytes: Joi.number().integer().min(0).required(),
  content_hash: Joi.string().required(),
  metadata: Joi.object().unknown(true).required(),
  created_by: Joi.string().allow(null).required(),
  created_at: timestamp.required(),
}).label('DocVersion');

/** The API's view: the document and the shown version's fields side by side (content only when read). */
export function toDoc(row: (DocRow & { version: VersionMeta; content?: string }) | DocWithVersion): Record<string, unknown> {
  const { version: v, content: text, ...doc } = row;
  return {
    id: doc.id,
    org_id: doc.org_id,
    project_id: doc.project_id,
    path: doc.path,
    current_version: doc.current_version,
    version: v.version,
    version_id: v.id,
    content_hash: v.content_hash,
    size_bytes: v.size_bytes,
    metadata: v.metadata,
    deleted: doc.deleted,
    deleted_at: doc.deleted_at,
    created_by: doc.created_by,
    created_at: doc.created_at,
    updated_at: doc.updated_at,
    version_created_by: v.created_by,
    version_created_at: v.created_at,
    ...(text === undefined ? {} : { content: text }),
  };
}
