import { lstat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { AttemptControl, AttemptLease, AttemptWork } from '../../core/ports/attempts.ts';
import { normalizeMountPath, parseResourceUri, type FetchedResource, type ResourceStore, type ResourceUri } from '../../core/ports/resources.ts';
import { WorkerFailure } from './failure.ts';
import { directoryIn, writeFresh } from '../../core/contained-fs.ts';

/** Where resources land, relative to the workspace; `index.json` there lists them (SVC_RESOURCE_INDEX). */
export const RESOURCES_DIR = ['.svc', 'resources'] as const;

interface Ref {
  uri: string;
  label: string | null;
  required: boolean;
  mount_path: string | null;
}

/** One line of index.json. */
export interface IndexEntry {
  uri: string;
  label: string | null;
  required: boolean;
  status: 'resolved' | 'missing';
  kind: ResourceUri['kind'] | null;
  /** Absolute path of the hydrated file, as the job sees it; null when missing. */
  path: string | null;
  /** The same, relative to the index's folder. */
  mount_path: string | null;
  version: number | null;
  content_hash: string | null;
  mime_type: string | null;
  size_bytes: number | null;
  /** Why a missing resource is missing. */
  reason?: string;
}

export interface HydrationDeps {
  work: AttemptWork;
  /** The workspace (the job's cwd). */
  dir: string;
  store: ResourceStore | null;
  control: AttemptControl;
  lease: AttemptLease;
  log(line: string): Promise<void>;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

function refsOf(work: AttemptWork): Ref[] {
  return (work.job.resource_refs ?? []).map((r) => ({
    uri: String(r.uri ?? ''),
    label: text(r.label),
    required: r.required !== false,
    mount_path: text(r.mount_path),
  }));
}

/**
 * Hydrates the job's `resource_refs` into `<workspace>/.svc/resources/` (at each `mount_path`, else
 * at `org_docs/<path>` or `job_attachments/<job_id>/<name>`) and writes `index.json` there, one
 * entry per ref, resolved or missing. Org documents come from the job's org (a project's own
 * documents only to its jobs), attachments from jobs of the job's project. A missing required ref
 * fails provisioning naming its uri; a missing optional one is listed as missing. Returns the
 * index's path. Emits system.resource.hydration.started, then .completed or .failed, unless the
 * job has no refs.
 */
export async function hydrateResources(deps: HydrationDeps): Promise<string> {
  const root = await directoryIn(deps.dir, [...RESOURCES_DIR]).catch((err: Error) => {
    throw new WorkerFailure(`cannot prepare ${RESOURCES_DIR.join('/')}: ${err.message}`);
  });
  const indexPath = path.join(root, 'index.json');
  const refs = refsOf(deps.work);
  if (refs.length === 0) {
    await writeIndex(indexPath, []);
    return indexPath;
  }
  await deps.control.systemEvent(deps.lease, 'system.resource.hydration.started', {
    resource_count: refs.length,
    resources: refs.map(({ uri, label, required, mount_path }) => ({ uri, label, required, mount_path })),
  });
  const entries: IndexEntry[] = [];
  for (const ref of refs) entries.push(await hydrateOne(deps, root, ref, entries));
  await writeIndex(indexPath, entries);

  const resources = entries.map(({ path: _absolute, ...entry }) => entry);
  const resolved = entries.filter((e) => e.status === 'resolved').length;
  const failed = entries.filter((e) => e.status === 'missing' && e.required);
  if (failed.length > 0) {
    await deps.control.systemEvent(deps.lease, 'system.resource.hydration.failed', {
      resolved_count: resolved,
      failed_required_count: failed.length,
      resources,
    });
    const list = failed.map((e) => `${e.uri} (${e.reason})`).join('; ');
    throw new WorkerFailure(`required resource${failed.length > 1 ? 's' : ''} missing: ${list}`);
  }
  const missingOptional = entries.length - resolved;
  await deps.control.systemEvent(deps.lease, 'system.resource.hydration.completed', {
    resolved_count: resolved,
    missing_optional_count: missingOptional,
    resources,
  });
  await deps.log(`resources: ${resolved} hydrated into ${RESOURCES_DIR.join('/')}${missingOptional ? `, ${missingOptional} optional missing` : ''}`);
  return indexPath;
}

async function hydrateOne(deps: HydrationDeps, root: string, ref: Ref, earlier: IndexEntry[]): Promise<IndexEntry> {
  const entry: IndexEntry = {
    uri: ref.uri,
    label: ref.label,
    required: ref.required,
    status: 'missing',
    kind: null,
    path: null,
    mount_path: null,
    version: null,
    content_hash: null,
    mime_type: null,
    size_bytes: null,
  };
  const missing = (reason: string): IndexEntry => ({ ...entry, reason });
  const parsed = parseResourceUri(ref.uri);
  if ('error' in parsed) return missing(`uri ${parsed.error}`);
  entry.kind = parsed.kind;
  const target = ref.mount_path === null ? { path: defaultMount(parsed) } : normalizeMountPath(ref.mount_path);
  if ('error' in target) return missing(`mount_path ${target.error}`);
  const clash = earlier.find((e) => e.mount_path && overlaps(e.mount_path, target.path));
  if (clash) return missing(`it would be written at ${target.path}, where ${clash.uri} is: give one of them a mount_path`);

  let fetched: FetchedResource | string;
  try {
    fetched = await fetchResource(deps, parsed);
  } catch (err) {
    return missing(`could not be fetched: ${(err as Error).message}`);
  }
  if (typeof fetched === 'string') return missing(fetched);
  const file = path.join(root, ...target.path.split('/'));
  try {
    await directoryIn(root, target.path.split('/').slice(0, -1));
    if (
      await lstat(file).then(
        () => true,
        () => false,
      )
    )
      throw new Error('something is already there');
    await writeFile(file, fetched.content, { flag: 'wx' });
  } catch (err) {
    return missing(`could not be written at ${target.path}: ${(err as Error).message}`);
  }
  return {
    ...entry,
    status: 'resolved',
    path: file,
    mount_path: target.path,
    version: fetched.version,
    content_hash: fetched.content_hash,
    mime_type: fetched.mime_type,
    size_bytes: fetched.size_bytes,
  };
}

/** The resource, or why there is none. */
async function fetchResource(deps: HydrationDeps, uri: ResourceUri): Promise<FetchedResource | string> {
  if (!deps.store) return 'no resource store is loaded (the resources plugin)';
  const { project } = deps.work;
  if (uri.kind === 'org_docs') {
    const doc = await deps.store.orgDoc({ orgId: project.org_id, projectId: project.id }, uri.path, uri.version);
    return doc ?? `no document at ${uri.path}${uri.version ? ` with version ${uri.version}` : ''} in the org`;
  }
  const file = await deps.store.jobAttachment(project.id, uri.jobId, uri.name);
  return file ?? `no attachment "${uri.name}" on job ${uri.jobId} in this project`;
}

const defaultMount = (uri: ResourceUri): string => (uri.kind === 'org_docs' ? `org_docs${uri.path}` : `job_attachments/${uri.jobId}/${uri.name}`);

/** Two files at the same place, or one where the other needs a folder. */
const overlaps = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

const writeIndex = (file: string, resources: IndexEntry[]) => writeFresh(file, `${JSON.stringify({ resources }, null, 2)}\n`);
