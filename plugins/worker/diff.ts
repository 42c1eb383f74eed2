import { constants as fsConstants } from 'node:fs';
import { lstat, open, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { AttemptDiff, DiffFile } from '../../core/ports/attempts.ts';
import { UnsafePath } from '../../core/contained-fs.ts';
import { WorkerFailure } from './failure.ts';
import type { GitSetup } from './git.ts';
import { run } from './mirror.ts';

/**
 * What an attempt changed, read from its checkout when it ends (docs/diffs.md). The checkout is the
 * job's by then, so every git command here is the sandboxed one (git-exec.ts checkoutGit): as the
 * attempt's user, no network, whatever the checkout's config makes git run runs as the job. The
 * working tree is staged into a copy of the checkout's index in the exchange folder (`git add -A`,
 * as git.commit auto would take it: ignored files and the worker's own files left out), so the
 * checkout's own index, and what the next attempt of a reused workspace finds staged, stay as the
 * job left them. Git writes the patch to a file there; the worker reads at most the limit of it.
 */

/** worker.diff: patch text kept per attempt (0: counts only), files listed per attempt. */
export interface DiffLimits {
  max_patch_bytes: number;
  max_files: number;
}

/** config/default.yaml's worker.diff. */
export const DEFAULT_DIFF_LIMITS: DiffLimits = { max_patch_bytes: 1024 * 1024, max_files: 3000 };

/** A copy of the checkout's index larger than this is not made (staging then hashes every file instead). */
const MAX_INDEX_BYTES = 256 * 1024 * 1024;

/** Settings on the command line that outrank anything the checkout's config says about the output parsed here. */
const CONFIG = [
  'diff.noprefix=false',
  'diff.mnemonicPrefix=false',
  'diff.relative=false',
  'color.ui=false',
  'color.diff=false',
  'core.quotePath=false',
].flatMap((c) => ['-c', c]);
/** The index (the staged working tree) against the base; renames found; no external diff or text conversion. */
const DIFF = ['diff', '--cached', '--no-color', '--no-ext-diff', '--no-textconv', '-M'];

const SHA = /^[0-9a-f]{40,64}$/;

/** The working tree of the checkout against `base`: files with their counts, and the patch up to `limits.max_patch_bytes`. */
export async function readDiff(s: GitSetup, base: string, limits: DiffLimits): Promise<AttemptDiff> {
  if (!SHA.test(base)) throw new WorkerFailure(`recording the diff failed: the base ${base} is not a commit id`);
  // After the process: only the sandboxed git runs in the checkout from now on.
  s.touched = true;
  const index = path.join(s.exchange, 'diff.index');
  const patchFile = path.join(s.exchange, 'diff.patch');
  const clear = () => Promise.all([index, `${index}.lock`, patchFile].map((f) => rm(f, { force: true })));
  await clear();
  try {
    await copyIndex(s.dir, index);
    const git = (what: string, args: string[]) =>
      run(`recording the diff failed: ${what}`, s.checkoutGit([...CONFIG, ...args], { cwd: s.dir, signal: s.signal, env: { GIT_INDEX_FILE: index } }));
    await git('staging the working tree', ['add', '--all']);
    const head = await s
      .checkoutGit(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: s.dir, signal: s.signal })
      .then((sha) => (SHA.test(sha) ? sha : null))
      .catch(() => null);
    const uncommitted = head
      ? await s.checkoutGit([...CONFIG, ...DIFF, '--quiet', head, '--'], { cwd: s.dir, signal: s.signal, env: { GIT_INDEX_FILE: index } }).then(
          () => false,
          () => true,
        )
      : true;
    const statuses = parseNameStatus(await git('listing the files', [...DIFF, '-z', '--name-status', base, '--']));
    const counts = parseNumstat(await git('counting the lines', [...DIFF, '-z', '--numstat', base, '--']));
    const all = mergeFiles(statuses, counts);
    let patch = { text: '', bytes: 0, truncated: all.length > 0 };
    if (limits.max_patch_bytes > 0) {
      await git('writing the patch', [...DIFF, '-U3', '--src-prefix=a/', '--dst-prefix=b/', `--output=${patchFile}`, base, '--']);
      patch = await readBounded(patchFile, limits.max_patch_bytes);
    }
    return {
      base_sha: base,
      head_sha: head,
      uncommitted,
      files: all.slice(0, limits.max_files),
      files_total: all.length,
      additions: all.reduce((n, f) => n + f.additions, 0),
      deletions: all.reduce((n, f) => n + f.deletions, 0),
      patch: patch.text,
      patch_bytes: patch.bytes,
      patch_truncated: patch.truncated,
      max_patch_bytes: limits.max_patch_bytes,
      max_files: limits.max_files,
    };
  } finally {
    await clear().catch(() => undefined);
  }
}

/**
 * Opens a file the workspace's side may have placed: never through a link, never blocking on a
 * FIFO; null when there is none; UnsafePath when it is not a regular file.
 */
async function openPlain(file: string, label: string): Promise<FileHandle | null> {
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fsConstants;
  let handle: FileHandle;
  try {
    handle = await open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return null;
    if (code === 'ELOOP') throw new UnsafePath(label, 'is a symbolic link');
    throw err;
  }
  if (!(await handle.stat()).isFile()) {
    await handle.close();
    throw new UnsafePath(label, 'is not a regular file');
  }
  return handle;
}

/**
 * The checkout's index, copied where the sandboxed git may write (its stat data spares hashing every
 * unchanged file again). A `.git` that is not a real folder, or an index that is not a plain file or
 * is too large, is not copied: staging into an empty index gives the same tree, only slower.
 */
export async function copyIndex(dir: string, to: string): Promise<void> {
  const gitDir = await lstat(path.join(dir, '.git')).catch(() => null);
  if (!gitDir?.isDirectory()) return;
  const from = await openPlain(path.join(dir, '.git', 'index'), '.git/index').catch((err) => {
    if (err instanceof UnsafePath) return null;
    throw err;
  });
  if (!from) return;
  try {
    const { size } = await from.stat();
    if (size > MAX_INDEX_BYTES) return;
    // wx: created afresh, never through a link left in its place; readable by the attempt's user (the exchange folder is its own, 0700).
    const out = await open(to, 'wx', 0o644);
    try {
      const buffer = Buffer.alloc(Math.min(size, 1 << 20) || 1);
      for (;;) {
        const { bytesRead } = await from.read(buffer, 0, buffer.length, null);
        if (bytesRead === 0) break;
        await out.write(buffer, 0, bytesRead);
      }
    } finally {
      await out.close();
    }
  } finally {
    await from.close();
  }
}

/**
 * At most `max` bytes of the patch, cut after the last whole line; text decoded as UTF-8 (bytes
 * that are not become U+FFFD, and so does NUL, which PostgreSQL text cannot hold).
 */
export async function readBounded(file: string, max: number): Promise<{ text: string; bytes: number; truncated: boolean }> {
  const handle = await openPlain(file, 'diff.patch');
  if (!handle) throw new WorkerFailure('recording the diff failed: git wrote no patch');
  try {
    const { size } = await handle.stat();
    const want = Math.min(size, max);
    const buffer = Buffer.alloc(want);
    let got = 0;
    while (got < want) {
      const { bytesRead } = await handle.read(buffer, got, want - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const truncated = size > got;
    let end = got;
    if (truncated) {
      const newline = buffer.lastIndexOf(0x0a, got - 1);
      end = newline >= 0 ? newline + 1 : 0;
    }
    return { text: clean(buffer.subarray(0, end).toString('utf8')), bytes: size, truncated };
  } finally {
    await handle.close();
  }
}

const clean = (text: string) => text.replaceAll('\0', '\uFFFD');

type Status = { path: string; old_path?: string; status: DiffFile['status'] };

const STATUS: Record<string, DiffFile['status']> = { A: 'added', D: 'deleted', R: 'renamed', M: 'modified', T: 'modified', U: 'modified', C: 'added' };

/** `git diff -z --name-status`: `X\0path\0`, or `R086\0old\0new\0` for a rename (C for a copy). */
export function parseNameStatus(out: string): Status[] {
  const tokens = out.split('\0');
  const files: Status[] = [];
  for (let i = 0; i < tokens.length && tokens[i] !== '';) {
    const letter = tokens[i++][0];
    const status = STATUS[letter] ?? 'modified';
    if (letter === 'R' || letter === 'C') {
      const old_path = tokens[i++];
      const p = tokens[i++];
      if (!p) break;
      files.push(letter === 'R' ? { path: clean(p), old_path: clean(old_path), status } : { path: clean(p), status });
    } else {
      const p = tokens[i++];
      if (!p) break;
      files.push({ path: clean(p), status });
    }
  }
  return files;
}

type Counts = { path: string; additions: number; deletions: number; binary: boolean };

/** `git diff -z --numstat`: `added\tdeleted\tpath\0`, or `added\tdeleted\t\0old\0new\0` for a rename; `-\t-` for a binary file. */
export function parseNumstat(out: string): Counts[] {
  const tokens = out.split('\0');
  const files: Counts[] = [];
  for (let i = 0; i < tokens.length && tokens[i] !== '';) {
    const [added, deleted, ...rest] = tokens[i++].split('\t');
    let p = rest.join('\t');
    if (p === '') {
      i++; // the old path
      p = tokens[i++] ?? '';
    }
    if (!p) break;
    const binary = added === '-' && deleted === '-';
    files.push({ path: clean(p), additions: binary ? 0 : Number(added) || 0, deletions: binary ? 0 : Number(deleted) || 0, binary });
  }
  return files;
}

/** Both listings come from the same diff, in the same order; a path is matched by name when the order disagrees. */
export function mergeFiles(statuses: Status[], counts: Counts[]): DiffFile[] {
  const byPath = new Map(counts.map((c) => [c.path, c]));
  return statuses.map((s, i) => {
    const c = counts[i]?.path === s.path ? counts[i] : byPath.get(s.path);
    return { ...s, additions: c?.additions ?? 0, deletions: c?.deletions ?? 0, binary: c?.binary ?? false };
  });
}
