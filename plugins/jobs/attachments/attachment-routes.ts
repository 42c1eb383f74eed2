import Boom from '@hapi/boom';
import { payloadFailed as jsonPayloadFailed } from '../../../core/http/server.ts';
import Joi from 'joi';
import type { Lifecycle, ServerRoute } from '@hapi/hapi';
import type { DependencyContainer } from '../../../core/di.ts';
import { principalOf, requires } from '../../../core/http/access.ts';
import { docs, timestamp } from '../../../core/http/schemas.ts';
import { listQuerySchema, pageSchema, type ListQuery } from '../../../core/http/lists.ts';
import { paramsOf, payloadOf, queryOf } from '../../../core/http/request.ts';
import {
  AttachmentService,
  DEFAULT_MIME_TYPE,
  ENCODINGS,
  MAX_ATTACHMENT_BYTES,
  attachmentName,
  contentDisposition,
  mimeType,
  type NewAttachment,
} from './attachments.ts';
import { jobId } from '../job/schemas.ts';

const tags = ['api', 'jobs'];

/** Room for 5 MiB of content as base64 (4/3 of it) plus the JSON around it. */
export const ATTACHMENT_PAYLOAD_MAX = 8 * 1024 * 1024;

const jobParams = Joi.object({ job_id: jobId.required() });
/** limit and offset; attachments are deleted outright, so there is nothing for include_deleted to show. */
const listQuery = listQuerySchema.keys({ include_deleted: Joi.forbidden() });
const fileParams = Joi.object({ job_id: jobId.required(), name: attachmentName.required() });

const createSchema = Joi.object({
  name: attachmentName.required(),
  mime_type: mimeType.description(`stored and served as Content-Type (${DEFAULT_MIME_TYPE} when none is given)`),
  content: Joi.string().allow('').required().description(`the file, at most ${MAX_ATTACHMENT_BYTES} bytes (5 MiB) once decoded`),
  encoding: Joi.string()
    .valid(...ENCODINGS)
    .default('utf8')
    .description('how content is written: utf8 text, or base64 for any bytes'),
}).label('CreateAttachment');

const attachmentSchema = Joi.object({
  id: Joi.string()
    .pattern(/^att_[0-7][0-9a-hjkmnp-tv-z]{25}$/, 'att_<base32> id')
    .required(),
  job_id: jobId.required(),
  name: Joi.string().required(),
  mime_type: Joi.string().allow(null).required(),
  size_bytes: Joi.number().integer().min(0).required(),
  created_at: timestamp.required(),
}).label('Attachment');

/** A body over the route's limit is refused while it is read; say what the limit is for. */
const payloadFailed: Lifecycle.Method = (request, h, err) => {
  if (Boom.isBoom(err) && err.output.statusCode === 413) {
    throw Boom.entityTooLarge(
      `request body is larger than ${ATTACHMENT_PAYLOAD_MAX} bytes; attachment content is limited to ${MAX_ATTACHMENT_BYTES} bytes (5 MiB) after decoding`,
    );
  }
  return jsonPayloadFailed(request, h, err);
};

export function attachmentRoutes(container: DependencyContainer): ServerRoute[] {
  const service = container.resolve(AttachmentService);

  return [
    {
      method: 'POST',
      path: '/jobs/{job_id}/attachments',
      options: {
        id: 'createJobAttachment',
        tags,
        description: 'Attach a file to the job (JSON: name, optional mime_type, content as utf8 or base64); a name is unique per job (409)',
        plugins: { svc: { ...requires('jobs:write', 'job').svc, bytes: ['content'] }, ...docs(400, 401, 403, 404, 409, 413) },
        payload: { maxBytes: ATTACHMENT_PAYLOAD_MAX, allow: 'application/json', failAction: payloadFailed },
        validate: { params: jobParams, payload: createSchema },
        response: { status: { 201: attachmentSchema } },
      },
      handler: async (request, h) =>
        h.response(await service.create(paramsOf(request).job_id, principalOf(request), payloadOf<NewAttachment>(request))).code(201),
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/attachments',
      options: {
        id: 'listJobAttachments',
        tags,
        description: "The job's attachments, newest first (metadata only)",
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) },
        validate: { params: jobParams, query: listQuery },
        response: { schema: pageSchema(attachmentSchema, 'AttachmentList') },
      },
      handler: (request) => service.list(paramsOf(request).job_id, queryOf<ListQuery>(request)),
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/attachments/{name}',
      options: {
        id: 'getJobAttachment',
        tags,
        description: "One attachment's metadata",
        plugins: { ...requires('jobs:read', 'job'), ...docs(400, 401, 404) },
        validate: { params: fileParams },
        response: { schema: attachmentSchema },
      },
      handler: (request) => service.get(paramsOf(request).job_id, paramsOf(request).name),
    },
    {
      method: 'GET',
      path: '/jobs/{job_id}/attachments/{name}/content',
      options: {
        id: 'getJobAttachmentContent',
        tags,
        description: "The attachment's bytes, with its stored Content-Type (application/octet-stream when none was given)",
        plugins: {
          ...requires('jobs:read', 'job'),
          'hapi-swagger': { ...docs(400, 401, 404)['hapi-swagger'], produces: ['application/octet-stream', 'application/json'] },
        },
        validate: { params: fileParams },
        // hapi validates objects only: the schema documents the bytes, sample 0 skips the check; an empty file is 200 too.
        response: { schema: Joi.binary().label('AttachmentContent'), sample: 0, emptyStatusCode: 200 },
      },
      handler: async (request, h) => {
        const { job_id, name } = paramsOf(request);
        const file = await service.content(job_id, name);
        const response = h
          .response(file.content)
          .type(file.mime_type)
          .bytes(file.size_bytes)
          .header('content-disposition', contentDisposition(name))
          .header('x-content-type-options', 'nosniff');
        response.charset(); // the stored type exactly: no charset added to text types
        return response;
      },
    },
    {
      method: 'DELETE',
      path: '/jobs/{job_id}/attachments/{name}',
      options: {
        id: 'deleteJobAttachment',
        tags,
        description: 'Remove the attachment',
        plugins: { ...requires('jobs:write', 'job'), ...docs(204, 400, 401, 403, 404) },
        validate: { params: fileParams },
      },
      handler: async (request, h) => {
        await service.remove(paramsOf(request).job_id, paramsOf(request).name);
        return h.response().code(204);
      },
    },
  ];
}
