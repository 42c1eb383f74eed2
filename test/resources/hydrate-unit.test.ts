import test from 'ava';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AttemptControl, AttemptWork } from '../../core/ports/attempts.ts';
import type { FetchedResource, ResourceStore } from '../../core/ports/resources.ts';
import { hydrateResources } from '../../plugins/worker/resources.ts';
import { WorkerFailure } from '../../plugins/worker/failure.ts';

/** hydrateResources on its own: a workspace from a checkout that plants links, and a worker without the resources plugin. */
const work = (refs: Record<string, unknown>[]): AttemptWork => ({
  job: {
    id: 'unit-00000001',
    project_id: 'proj_x',
    parent_id: null,
    title: 't',
    description: null,
    phase: 'active',
    hints: {},
    git: null,
    workspace: null,
    env_name: null,
    harness: {},
    env_overrides: null,
    resource_refs: refs,
    created_by: null,
  },
  attempt: { id: 'a1', attempt_number: 1, status: 'running', failed_before: 0 },
  project: { id: 'proj_x', org_id: 'org_x', slug: 'unit', repo_url: null, branch: 'main' },
  run: null,
});

function recorder() {
  const events: [string, Record<string, unknown>][] = [];
  const control = {
    systemEvent: async (_lease: unknown, type: string, payload: Record<string, unknown>) => void events.push([type, payload]),
  } as unknown as AttemptControl;
  return { events, control };
}

const doc: FetchedResource = { content: Buffer.from('hello'), size_bytes: 5, content_hash: 'sha256:x', mime_type: 'text/plain', version: 1 };
const store: ResourceStore = { orgDoc: async () => doc, jobAttachment: async () => null };
const lease = { jobId: 'unit-00000001', attemptId: 'a1', leaseToken: 'l' };

let dir = '';
let outside = '';
test.beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'svc-hydrate-'));
  outside = await mkdtemp(path.join(tmpdir(), 'svc-hydrate-outside-'));
});
test.afterEach.always(async () => {
  await rm(dir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

test.serial('a checked-out .svc/resources that is a symbolic link is refused; nothing is written through it', async (t) => {
  await mkdir(path.join(dir, '.svc'));
  await symlink(outside, path.join(dir, '.svc', 'resources'));
  const { control } = recorder();
  const err = await t.throwsAsync(hydrateResources({ work: work([{ uri: 'org_docs:/a.md' }]), dir, store, control, lease, log: async () => undefined }));
  t.true(err instanceof WorkerFailure);
  t.is(err!.message, 'cannot prepare .svc/resources: .svc/resources is a symbolic link');
  t.false(existsSync(path.join(outside, 'index.json')));
});

test.serial('a link inside .svc/resources on the way to a file makes that ref missing; a planted index.json link is replaced, not followed', async (t) => {
  await mkdir(path.join(dir, '.svc', 'resources'), { recursive: true });
  await symlink(outside, path.join(dir, '.svc', 'resources', 'org_docs'));
  await writeFile(path.join(outside, 'victim'), 'untouched');
  await symlink(path.join(outside, 'victim'), path.join(dir, '.svc', 'resources', 'index.json'));
  const { control, events } = recorder();
  const index = await hydrateResources({ work: work([{ uri: 'org_docs:/a.md', required: false }]), dir, store, control, lease, log: async () => undefined });
  t.is(await readFile(path.join(outside, 'victim'), 'utf8'), 'untouched');
  const written = JSON.parse(await readFile(index, 'utf8'));
  t.like(written.resources[0], { status: 'missing', reason: 'could not be written at org_docs/a.md: org_docs is a symbolic link' });
  t.false(existsSync(path.join(outside, 'a.md')));
  t.deepEqual(
    events.map(([type]) => type),
    ['system.resource.hydration.started', 'system.resource.hydration.completed'],
  );
});

test.serial('without a resource store (the resources plugin not loaded) every ref is missing, and a required one fails', async (t) => {
  const { control, events } = recorder();
  const err = await t.throwsAsync(hydrateResources({ work: work([{ uri: 'org_docs:/a.md' }]), dir, store: null, control, lease, log: async () => undefined }));
  t.is(err!.message, 'required resource missing: org_docs:/a.md (no resource store is loaded (the resources plugin))');
  t.deepEqual(events.at(-1), [
    'system.resource.hydration.failed',
    {
      resolved_count: 0,
      failed_required_count: 1,
      resources: [
        {
          uri: 'org_docs:/a.md',
          label: null,
          required: true,
          status: 'missing',
          kind: 'org_docs',
          mount_path: null,
          version: null,
          content_hash: null,
          mime_type: null,
          size_bytes: null,
          reason: 'no resource store is loaded (the resources plugin)',
        },
      ],
    },
  ]);
});
