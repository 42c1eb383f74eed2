import Joi from 'joi';
import { inject, injectable } from '../../../core/di.ts';
import { Tokens } from '../../../core/tokens.ts';
import type { Db } from '../../../core/db/knex.ts';
import { newId } from '../../../core/ids.ts';
import { paginate, type ListQuery, type Page } from '../../../core/http/lists.ts';
import { isUniqueViolation } from '../../../core/http/unique.ts';
import type { Principal } from '../../../core/auth/principal.ts';
import { BadRequest, Conflict, NotFound, TooLarge } from '../../../core/errors.ts';

/** Files attached to a job: a name unique per job, an optional MIME type, and the bytes (at most 5 MiB). */
export const MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024;
export const DEFAULT_MIME_TYPE = 'application/octet-stream';
export const ENCODINGS = ['utf8', 'base64'] as const;
export type Encoding = (typeof ENCODINGS)[number];

/** The attachment's name: a file name, never a path (it is hydrated under `.svc/resources/`). */
export const attachmentName = Joi.string()
  .min(1)
  .max(255)
  .custom((name: string, helpers) => {
    if (name.includes('/')) return helpers.message({ custom: '{{#label}} must not contain "/"' });
    if (name.includes('..') || name === '.') return helpers.message({ custom: '{{#label}} must not contain ".." or be "."' });
    if (/\p{Cc}/u.test(name)) return helpers.message({ custom: '{{#label}} must not contain control characters' });
    return name;
  })
  .description('1-255 characters; no "/", no "..", no control characters')
  .example('notes.md');

/** A media type as Content-Type carries it (served back as is, so nothing that could break the header). */
const TOKEN = '[A-Za-z0-9!#$&^_.+-]+';
export const mimeType = Joi.string()
  .max(255)
  .pattern(new RegExp(`^${TOKEN}/${TOKEN}(\\s*;\\s*${TOKEN}=(${TOKEN}|"[^"\\\\\\p{Cc}]*"))*$`, 'u'), 'type/subtype[; parameter=value]')
  .example('text/markdown');

export interface Attachment {
  id: string;
  job_id: string;
  name: string;
  mime_type: string | null;
  size_bytes: number;
  created_at: Date;
}

export interface AttachmentContent {
  mime_type: string;
  size_bytes: number;
  content: Buffer;
}

export interface NewAttachment {
  name: string;
  mime_type?: string;
  content: string;
  encoding?: Encoding;
}

const META = ['id', 'job_id', 'name', 'mime_type', 'size_bytes', 'created_at'] as const;

@injectable()
export class AttachmentRepository {
  constructor(@inject(Tokens.Db) private readonly db: Db) {}

  async insert(row: Omit<Attachment, 'created_at'> & { content: Buffer; created_by: string }): Promise<Attachment> {
    const [created] = await this.db('job_attachments')
      .insert(row)
      .returning([...META]);
    return created;
  }

  /** Metadata only: the content column is left out of the page query altogether. */
  list(jobId: string, query: Pick<ListQuery, 'limit' | 'offset'>): Promise<Page<Attachment>> {
    const meta = this.db('job_attachments')
      .select([...META])
      .where({ job_id: jobId })
      .as('job_attachments');
    return paginate<Attachment, Attachment>(this.db.from(meta), query, (r) => r, 'job_attachments');
  }

  byName(jobId: string, name: string): Promise<Attachment | undefined> {
    return this.db('job_attachments')
      .where({ job_id: jobId, name })
      .first([...META]);
  }

  content(jobId: string, name: string): Promise<{ mime_type: string | null; size_bytes: number; content: Buffer } | undefined> {
    return this.db('job_attachments').where({ job_id: jobId, name }).first('mime_type', 'size_bytes', 'content');
  }

  /** The bytes of an attachment of a job of this project, or undefined. */
  contentInProject(projectId: string, jobId: string, name: string): Promise<{ mime_type: string | null; size_bytes: number; content: Buffer } | undefined> {
    return this.db('job_attachments as a')
      .join('jobs as j', 'j.id', 'a.job_id')
      .where({ 'a.job_id': jobId, 'a.name': name, 'j.project_id': projectId })
      .first('a.content', 'a.size_bytes', 'a.mime_type');
  }

  /** The number of rows removed (0 or 1). */
  remove(jobId: string, name: string): Promise<number> {
    return this.db('job_attachments').where({ job_id: jobId, name }).delete();
  }
}

/** Strict base64 (standard alphabet, padding optional, line breaks allowed); null when it is not. */
export function decodeBase64(text: string): Buffer | null {
  const s = text.replace(/[\r\n\t ]+/g, '');
  if (/[^A-Za-z0-9+/=]/.test(s)) return null;
  const pad = s.indexOf('=');
  const body = pad === -1 ? s : s.slice(0, pad);
  if (pad !== -1 && (s.length - pad > 2 || /[^=]/.test(s.slice(pad)) || s.length % 4 !== 0)) return null;
  if (body.length % 4 === 1) return null;
  return Buffer.from(body, 'base64');
}

const tooLarge = (size: number) => new TooLarge(`attachment content is ${size} bytes; the limit is ${MAX_ATTACHMENT_BYTES} bytes (5 MiB) after decoding`);

@injectable()
export class AttachmentService {
  constructor(@inject(AttachmentRepository) private readonly attachments: AttachmentRepository) {}

  async create(jobId: string, principal: Principal, input: NewAttachment): Promise<Attachment> {
    const content = decodeContent(input.content, input.encoding ?? 'utf8');
    if (content.length > MAX_ATTACHMENT_BYTES) throw tooLarge(content.length);
    try {
      return await this.attachments.insert({
        id: newId('att'),
        job_id: jobId,
        name: input.name,
        mime_type: input.mime_type ?? null,
        size_bytes: content.length,
        content,
        created_by: principal.id,
      });
    } catch (e) {
      if (isUniqueViolation(e, 'job_attachments_job_id_name_unique')) throw new Conflict(`job ${jobId} already has an attachment named "${input.name}"`);
      if ((e as { code?: string }).code === '23503') throw new NotFound(`job ${jobId} not found`); // deleted meanwhile
      throw e;
    }
  }

  list(jobId: string, query: ListQuery): Promise<Page<Attachment>> {
    return this.attachments.list(jobId, query);
  }

  async get(jobId: string, name: string): Promise<Attachment> {
    return (await this.attachments.byName(jobId, name)) ?? notFound(jobId, name);
  }

  async content(jobId: string, name: string): Promise<AttachmentContent> {
    const row = (await this.attachments.content(jobId, name)) ?? notFound(jobId, name);
    return { ...row, mime_type: row.mime_type ?? DEFAULT_MIME_TYPE };
  }

  async remove(jobId: string, name: string): Promise<void> {
    if ((await this.attachments.remove(jobId, name)) === 0) notFound(jobId, name);
  }
}

function decodeContent(content: string, encoding: Encoding): Buffer {
  if (encoding === 'utf8') return Buffer.from(content, 'utf8');
  const bytes = decodeBase64(content);
  if (!bytes) throw new BadRequest('"content" is not valid base64 (encoding "base64")');
  return bytes;
}

function notFound(jobId: string, name: string): never {
  throw new NotFound(`attachment "${name}" not found on job ${jobId}`);
}

/** `Content-Disposition` for a download: an ASCII fallback plus the exact UTF-8 name (RFC 6266 / 5987). */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}
