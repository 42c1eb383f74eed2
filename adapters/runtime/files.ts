/** Writing a ProcessSpec's `files` into its working directory, shared by the runtimes. */
import { constants as fsConstants } from 'node:fs';
import { chown, mkdir, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';

export function isInside(root: string, target: string): boolean {
  const rel = path.relative(root, target);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** The real path of `dir` or of its nearest existing ancestor, so symlinks are resolved before anything is created. */
async function realExisting(dir: string): Promise<string> {
  const real = await realpath(dir).catch(() => null);
  return real ?? realExisting(path.dirname(dir));
}

/** Writes spec.files under cwd, refusing any path (including through a symlink) that leads outside it. */
export async function writeFiles(cwd: string, files: Record<string, string>, owner: { uid: number; gid: number } | null): Promise<void> {
  const root = await realpath(cwd);
  for (const [name, content] of Object.entries(files)) {
    const target = path.resolve(root, name);
    const parent = path.dirname(target);
    const realParent = await realExisting(parent);
    if (path.isAbsolute(name) || !isInside(root, target) || (realParent !== root && !isInside(root, realParent))) {
      throw new Error(`runtime: file path '${name}' escapes the working directory`);
    }
    const firstCreated = await mkdir(parent, { recursive: true });
    for (let dir = parent; owner && firstCreated && isInside(path.dirname(firstCreated), dir); dir = path.dirname(dir)) {
      await chown(dir, owner.uid, owner.gid);
    }
    // O_NOFOLLOW: a symlink planted at the target itself must not redirect the write.
    const { O_WRONLY, O_CREAT, O_TRUNC, O_NOFOLLOW } = fsConstants;
    await writeFile(target, content, { flag: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode: 0o644 });
    if (owner) await chown(target, owner.uid, owner.gid);
  }
}
