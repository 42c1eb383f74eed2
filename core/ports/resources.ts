import type { InjectionToken } from 'tsyringe';
import type { Principal } from '../auth/principal.ts';

/**
 * What a job can reference in `resource_refs` (docs/resources.md): an org document, at its current
 * or a given version, or an attachment of a job in the same project. The resources domain registers
 * the store; the worker reads through it to hydrate `.svc/resources/`.
 */
export type ResourceUri = { kind: 'org_docs'; path: string; version: number | null } | { kind: 'job_attachments'; jobId: string; name: string };

/** One fetched resource: the bytes and what the index says about them. */
export interface FetchedResource {
  content: Buffer;
  size_bytes: number;
  content_hash: string;
  mime_type: string | null;
  /** The document version (org docs); null for attachments. */
  version: number | null;
}

export interface ResourceStore {
  /**
   * A live org document by path, at `version` or its current one; null when there is none, or when
   * the document belongs to another project than `projectId` (an org-wide one is visible to all).
   */
  orgDoc(where: { orgId: string; projectId: string }, path: string, version: number | null): Promise<FetchedResource | null>;
  /** An attachment of a job of `projectId`; a job of another project is null (tenant isolation). */
  jobAttachment(projectId: string, jobId: string, name: string): Promise<FetchedResource | null>;
}

export const ResourceStoreToken = Symbol('ResourceStore') as InjectionToken<ResourceStore>;

/** Who writes a document from another domain: the caller (it needs `orgdocs:write` in the org) and the request. */
export interface DocWriteContext {
  principal: Principal;
  requestId: string;
}

/**
 * Writes an org document for another domain (a thread's distillation): the document at `path` gets
 * a new version, or is created at version 1. Registered by the resources domain.
 */
export interface OrgDocuments {
  write(
    orgId: string,
    doc: { path: string; content: string; metadata: Record<string, unknown>; project_id: string | null },
    ctx: DocWriteContext,
  ): Promise<{ id: string; path: string; version: number; created: boolean }>;
}

export const OrgDocumentsToken = Symbol('OrgDocuments') as InjectionToken<OrgDocuments>;

export const MAX_DOC_PATH = 1024;
const MAX_SEGMENT = 255;
const CONTROL = /\p{Cc}/u;
const VERSION_SUFFIX = /@v(\d+)$/;

/**
 * A document path as stored: `/a/b.md`. A missing leading `/` is added; empty, `.` and `..`
 * segments, control characters, a trailing `@v<N>` (which a resource uri reads as a version) are
 * refused with the reason.
 */
export function normalizeDocPath(input: string): { path: string } | { error: string } {
  const path = input.startsWith('/') ? input : `/${input}`;
  if (path.length > MAX_DOC_PATH) return { error: `must be at most ${MAX_DOC_PATH} characters` };
  if (CONTROL.test(path)) return { error: 'must not contain control characters' };
  const segments = path.slice(1).split('/');
  if (segments.some((s) => s === '')) return { error: 'must not have empty segments (a trailing "/" or "//")' };
  if (segments.some((s) => s === '.' || s === '..')) return { error: 'must not have "." or ".." segments' };
  if (segments.some((s) => s.length > MAX_SEGMENT)) return { error: `segments must be at most ${MAX_SEGMENT} characters` };
  if (VERSION_SUFFIX.test(path)) return { error: 'must not end with "@v<N>" (a resource uri reads that as a version)' };
  return { path };
}

/** An attachment name: a file name, never a path (the jobs domain validates names the same way). */
export function attachmentNameProblem(name: string): string | null {
  if (name.length === 0 || name.length > MAX_SEGMENT) return `must be 1-${MAX_SEGMENT} characters`;
  if (name.includes('/')) return 'must not contain "/"';
  if (name === '.' || name.includes('..')) return 'must not contain ".." or be "."';
  if (CONTROL.test(name)) return 'must not contain control characters';
  return null;
}

/** `org_docs:/<path>[@v<N>]` or `job_attachments:/<job_id>/<name>`, or the reason it is neither. */
export function parseResourceUri(uri: string): ResourceUri | { error: string } {
  if (uri.startsWith('org_docs:/')) {
    let rest = uri.slice('org_docs:'.length);
    let version: number | null = null;
    const v = VERSION_SUFFIX.exec(rest);
    if (v) {
      version = Number(v[1]);
      if (!Number.isSafeInteger(version) || version < 1) return { error: 'version must be @v1 or later' };
      rest = rest.slice(0, v.index);
    }
    const doc = normalizeDocPath(rest);
    if ('error' in doc) return { error: `document path ${doc.error}` };
    return { kind: 'org_docs', path: doc.path, version };
  }
  if (uri.startsWith('job_attachments:/')) {
    const rest = uri.slice('job_attachments:/'.length);
    const slash = rest.indexOf('/');
    if (slash <= 0) return { error: 'must be job_attachments:/<job_id>/<name>' };
    const jobId = rest.slice(0, slash);
    const name = rest.slice(slash + 1);
    if (!/^[a-z0-9]{4,8}-[0-9a-f]{8}(\.[1-9][0-9]*){0,2}$/.test(jobId)) return { error: `"${jobId}" is not a job id` };
    const problem = attachmentNameProblem(name);
    if (problem) return { error: `attachment name ${problem}` };
    return { kind: 'job_attachments', jobId, name };
  }
  return { error: 'must be org_docs:/<path>[@v<N>] or job_attachments:/<job_id>/<name>' };
}

/**
 * A `mount_path`: relative, under `.svc/resources/`, normalized (`a//b/./c` is `a/b/c`); absolute
 * paths, `..` segments, control characters and the index's own name are refused with the reason.
 */
export function normalizeMountPath(input: string): { path: string } | { error: string } {
  if (input.startsWith('/')) return { error: 'must be relative (under .svc/resources/)' };
  if (CONTROL.test(input)) return { error: 'must not contain control characters' };
  const segments = input.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.some((s) => s === '..')) return { error: 'must not contain ".." segments' };
  if (segments.length === 0) return { error: 'must name a file under .svc/resources/' };
  if (segments.some((s) => s.length > MAX_SEGMENT)) return { error: `segments must be at most ${MAX_SEGMENT} characters` };
  const path = segments.join('/');
  if (path === 'index.json') return { error: 'must not be index.json (the resource index)' };
  return { path };
}
