import { execFile } from 'node:child_process';
import { lchown, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { mounts } from '../../core/prepared-checkouts.ts';
import { processExists } from '../../core/process.ts';
import type { RunAs } from './run-as.ts';
import { isRoot } from './run-as.ts';

/**
 * A copy-on-write working tree (docs/workspaces.md, "Copy-on-write working trees"): the kernel's
 * overlayfs mounted on the attempt's workspace folder, its lower layer a prepared checkout of the
 * repository cache (read-only: overlayfs never writes a lower layer), its upper and work layers the
 * attempt's own (`<dir>.overlay/`), removed with it. Everything the attempt writes lands in its
 * upper layer; the prepared tree, the cache and every other attempt never see it. Mounting needs
 * root and overlayfs; where either is missing the worker checks out in full, and says so once.
 */

const SUFFIX = '.overlay';
/** Characters mount's option string gives a meaning to: a path holding one is never mounted. */
const UNSAFE = /[,:\\\n]/;

export const overlayOf = (dir: string) => `${dir}${SUFFIX}`;

/** Why overlays cannot be mounted here, or null when they can (root, and overlayfs in the kernel). */
export async function overlayUnavailable(): Promise<string | null> {
  if (!isRoot()) return 'the worker is not root';
  const filesystems = await readFile('/proc/filesystems', 'utf8').catch(() => '');
  if (!/\boverlay\b/.test(filesystems)) return 'the kernel has no overlayfs (modprobe overlay)';
  return null;
}

export class WorkspaceOverlay {
  mounted = false;

  constructor(readonly dir: string) {}

  get upper(): string {
    return path.join(overlayOf(this.dir), 'upper');
  }

  /** Mounts `lower` copy-on-write on the (empty) workspace folder. */
  async mount(lower: string): Promise<void> {
    const base = overlayOf(this.dir);
    if ([lower, base, this.dir].some((p) => UNSAFE.test(p))) throw new Error(`a path holds one of , : \\ (${this.dir})`);
    await rm(base, { recursive: true, force: true });
    await mkdir(path.join(base, 'upper'), { recursive: true, mode: 0o755 });
    await mkdir(path.join(base, 'work'), { mode: 0o700 });
    await writeFile(path.join(base, 'pid'), String(process.pid));
    const options = `lowerdir=${lower},upperdir=${base}/upper,workdir=${base}/work`;
    // volatile: no sync of the upper filesystem, on unmount either (which otherwise flushes the whole disk's dirty pages); the layers never outlive the attempt.
    await command('mount', ['-t', 'overlay', 'overlay', '-o', `${options},volatile`, '--', this.dir]).catch(() =>
      command('mount', ['-t', 'overlay', 'overlay', '-o', options, '--', this.dir]),
    );
    this.mounted = true;
  }

  /** Unmounts (lazily if busy) and removes the attempt's layers; `keepChanges` leaves its upper layer (worker.keep_workspaces). */
  async unmount(keepChanges = false): Promise<void> {
    if (this.mounted) await unmount(this.dir);
    this.mounted = false;
    const base = overlayOf(this.dir);
    await rm(keepChanges ? path.join(base, 'work') : base, { recursive: true, force: true });
  }

  /** Hands what the attempt's side holds (the worker's writes so far) to `user`: the lower layer is that user's already. */
  async handOver(user: RunAs): Promise<void> {
    await lchown(this.dir, user.uid, user.gid);
    const walk = async (rel: string): Promise<void> => {
      for (const entry of await readdir(path.join(this.upper, rel), { withFileTypes: true })) {
        const child = path.join(rel, entry.name);
        // Through the mount (a whiteout in the upper layer is no file there: ENOENT).
        await lchown(path.join(this.dir, child), user.uid, user.gid).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err;
        });
        if (entry.isDirectory()) await walk(child);
      }
    };
    await walk('');
  }
}

/**
 * Overlays under `root` left mounted by a worker process that is gone (a crash; the owner's pid is
 * in `<dir>.overlay/pid`): unmounted, their layers removed. Returns the folders unmounted.
 */
export async function sweepOverlays(root: string): Promise<string[]> {
  const inside = path.resolve(root) + path.sep;
  const orphaned = async (dir: string) => {
    const pid = Number(await readFile(path.join(overlayOf(dir), 'pid'), 'utf8').catch(() => '0'));
    return !(pid > 0 && processExists(pid));
  };
  const points = (await mounts()).filter((m) => m.type === 'overlay' && m.point.startsWith(inside)).map((m) => m.point);
  const swept: string[] = [];
  for (const p of points.sort((a, b) => b.length - a.length)) {
    if (!(await orphaned(p))) continue;
    await unmount(p).catch(() => undefined);
    swept.push(p);
  }
  const still = new Set(points.filter((p) => !swept.includes(p)));
  for (const name of (await readdir(root).catch(() => [])).filter((n) => n.endsWith(SUFFIX))) {
    const dir = path.join(root, name.slice(0, -SUFFIX.length));
    if (!still.has(dir) && (await orphaned(dir))) await rm(path.join(root, name), { recursive: true, force: true });
  }
  return swept;
}

/** Unmounts `dir` (lazily when busy); one unmounted already (swept) is fine. */
async function unmount(dir: string): Promise<void> {
  await command('umount', ['--', dir])
    .catch(() => command('umount', ['-l', '--', dir]))
    .catch(async (err: Error) => {
      if (await isMountPoint(dir)) throw err;
    });
}

const isMountPoint = async (dir: string): Promise<boolean> => (await mounts()).some((m) => m.point === dir);

function command(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { env: { PATH: '/usr/bin:/bin:/usr/sbin:/sbin', LC_ALL: 'C' } }, (err, _out, stderr) =>
      err ? reject(new Error(`${cmd} failed: ${String(stderr).trim() || err.message}`)) : resolve(),
    ),
  );
}
