/**
 * Writing into a folder that hostile code controls (a workspace) without ever following a link out
 * of it: every folder on the way is checked with lstat, and a file is created with O_NOFOLLOW.
 */
import { constants as fsConstants } from 'node:fs';
import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** A path svc would write that the workspace made a link (or something else it must not be). */
export class UnsafePath extends Error {
  override name = 'UnsafePath';
  constructor(
    readonly relative: string,
    what: string,
  ) {
    super(`${relative} ${what}`);
  }
}

const lstatOrNull = (p: string) =>
  lstat(p).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return null;
    throw e;
  });

/** `base/segments…` as real folders, made where missing; a symbolic link or a file on the way is refused. */
export async function directoryIn(base: string, segments: readonly string[], mode?: number): Promise<string> {
  let current = base;
  for (const segment of segments) {
    current = path.join(current, segment);
    const info = await lstatOrNull(current);
    if (!info) await mkdir(current, mode === undefined ? undefined : { mode });
    else if (info.isSymbolicLink()) throw new UnsafePath(path.relative(base, current), 'is a symbolic link');
    else if (!info.isDirectory()) throw new UnsafePath(path.relative(base, current), 'is not a folder');
  }
  return current;
}

/** Written afresh (a link a checked-out repository put there is replaced, never followed). */
export async function writeFresh(file: string, content: string): Promise<void> {
  await rm(file, { force: true });
  await writeFile(file, content, { flag: 'wx' });
}

/** Writes `base/relative` (folders made as needed); a link anywhere on the way, or at the file itself, is refused. */
export async function writeContained(base: string, relative: string, content: string): Promise<string> {
  const segments = relative.split(/[\\/]+/).filter(Boolean);
  const dir = await directoryIn(base, segments.slice(0, -1));
  const file = path.join(dir, segments.at(-1)!);
  const info = await lstatOrNull(file);
  if (info && !info.isFile()) throw new UnsafePath(relative, info.isSymbolicLink() ? 'is a symbolic link' : 'is not a regular file');
  const { O_WRONLY, O_CREAT, O_TRUNC, O_NOFOLLOW } = fsConstants;
  await writeFile(file, content, { flag: O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW });
  return file;
}
