import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { AttemptWork } from '../../core/ports/attempts.ts';
import { openWorkspace, sweepWorkspaces } from '../../plugins/worker/workspaces.ts';

/** openWorkspace and sweepWorkspaces on a real directory tree. */
const work = (over: { org?: string; project?: string; job?: string; workspace?: Record<string, unknown> | null; attempt?: string }): AttemptWork => ({
  job: {
    id: over.job ?? 'unit-00000001',
    project_id: over.project ?? 'proj_a',
    parent_id: null,
    title: 't',
    description: null,
    phase: 'active',
    hints: {},
    git: null,
    workspace: over.workspace ?? null,
    env_name: null,
    harness: {},
    env_overrides: null,
    resource_refs: [],
    created_by: null,
  },
  attempt: { id: over.attempt ?? '00000000-0000-4000-8000-000000000001', attempt_number: 1, status: 'running', failed_before: 0 },
  project: { id: over.project ?? 'proj_a', org_id: over.org ?? 'org_a', slug: 'unit', repo_url: null, branch: 'main' },
  run: null,
});

let root: string;
test.beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'svc-ws-unit-'));
});
test.afterEach.always(() => rmSync(root, { recursive: true, force: true }));
const never = new AbortController().signal;
const noWait = async () => undefined;

test.serial('the same session key in another project or org is another directory; a key cannot leave its folder', async (t) => {
  const session = { mode: 'session', key: '../../etc' };
  const dirs = [];
  for (const w of [work({ workspace: session }), work({ workspace: session, project: 'proj_b' }), work({ workspace: session, org: 'org_b' })]) {
    const ws = await openWorkspace(root, w, never, noWait);
    dirs.push(ws.dir);
    await ws.release();
  }
  t.is(new Set(dirs).size, 3);
  t.true(dirs.every((d) => d.startsWith(path.join(root, 'reuse') + path.sep) && path.dirname(d).endsWith(`${path.sep}session`)));
  t.true(dirs[0].startsWith(path.join(root, 'reuse', 'org_a', 'proj_a', 'session')));
});

test.serial("job mode: the second attempt gets the first one's directory back, marked reused; isolated is fresh and not kept", async (t) => {
  const first = await openWorkspace(root, work({ workspace: { mode: 'job' } }), never, noWait);
  writeFileSync(path.join(first.dir, 'cache'), 'x');
  await first.release();
  const second = await openWorkspace(root, work({ workspace: { mode: 'job' }, attempt: '00000000-0000-4000-8000-000000000002' }), never, noWait);
  t.like(second, { dir: first.dir, mode: 'job', reused: true, kept: true });
  t.true(existsSync(path.join(second.dir, 'cache')));
  await second.release();
  const isolated = await openWorkspace(root, work({ workspace: { mode: 'isolated' } }), never, noWait);
  t.like(isolated, { mode: 'isolated', reused: false, kept: false });
});

test.serial('a held session waits (told once who holds it) until released', async (t) => {
  const session = { mode: 'session', key: 'k' };
  const held = await openWorkspace(root, work({ workspace: session, job: 'unit-00000001' }), never, noWait);
  const told: string[] = [];
  let got = false;
  const waiting = openWorkspace(root, work({ workspace: session, job: 'unit-00000002' }), never, async (holder) => {
    told.push(holder);
  }).then((ws) => {
    got = true;
    return ws;
  });
  await new Promise((r) => setTimeout(r, 400));
  t.false(got, 'not while the first job holds it');
  t.deepEqual(told, ['unit-00000001']);
  await held.release();
  const second = await waiting;
  t.is(second.dir, held.dir);
  await second.release();
});

test.serial('a waiting attempt stops when aborted', async (t) => {
  const session = { mode: 'session', key: 'k' };
  const held = await openWorkspace(root, work({ workspace: session }), never, noWait);
  const abort = new AbortController();
  const waiting = openWorkspace(root, work({ workspace: session, job: 'unit-00000002' }), abort.signal, noWait);
  abort.abort('cancelled');
  await t.throwsAsync(waiting, { message: 'cancelled' });
  await held.release();
});

test.serial('the sweep removes reused workspaces idle too long, and never one in use', async (t) => {
  const idle = await openWorkspace(root, work({ workspace: { mode: 'job' }, job: 'unit-0000000a' }), never, noWait);
  await idle.release();
  const busy = await openWorkspace(root, work({ workspace: { mode: 'job' }, job: 'unit-0000000b' }), never, noWait);
  const recent = await openWorkspace(root, work({ workspace: { mode: 'job' }, job: 'unit-0000000c' }), never, noWait);
  await recent.release();
  const old = new Date(Date.now() - 7_200_000);
  for (const dir of [idle.dir, busy.dir]) utimesSync(`${dir}.used`, old, old);
  mkdirSync(path.join(root, 'unit-00000001-a1-00000000'));
  t.deepEqual(await sweepWorkspaces(root, 3_600_000), [idle.dir]);
  t.false(existsSync(idle.dir));
  t.true(existsSync(busy.dir) && existsSync(recent.dir));
  t.true(existsSync(path.join(root, 'unit-00000001-a1-00000000')), "per-attempt directories are not the sweep's");
  await busy.release();
});
