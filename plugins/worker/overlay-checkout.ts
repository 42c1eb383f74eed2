import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { refNameProblem } from '../../core/git-refs.ts';
import { copyIndex } from '../../core/prepared-checkouts.ts';
import type { GitSetup } from './git.ts';
import { configText, run, syncRemoteRefs } from './mirror.ts';

/**
 * The checkout as an overlay (overlay.ts) over the repository cache's prepared checkout of `head`:
 * a git dir of its own in the attempt's layer (its objects borrowed from the mirror, as
 * cloneCheckout's; its index the prepared one, so `git status` reads no file), on `branch` (made
 * at `head`) or a detached HEAD. The git dir is written as `git init --template=` writes one, its
 * refs from the mirror's packed refs, as syncRemoteRefs would set them: the one process is the
 * mount. False, with the reason in the log, when the overlay cannot be mounted: then nothing is
 * left behind and the caller checks out in full.
 */
export async function overlayCheckout(s: GitSetup, head: string, branch: string | null): Promise<boolean> {
  // A name git would refuse goes the full way, for git checkout to say why.
  if (!s.cache || !s.overlay || (branch && refNameProblem(branch))) return false;
  const prepared = await run('preparing the checkout failed', s.cache.checkout(s.url, head, s.owner, s.signal));
  try {
    await s.overlay.mount(prepared.tree);
  } catch (err) {
    await s.log(`no copy-on-write checkout (${(err as Error).message}): checking out in full`);
    await s.overlay.unmount();
    s.overlay = null;
    return false;
  }
  const gitDir = path.join(s.dir, '.git');
  for (const dir of [
    ['objects', 'info'],
    ['objects', 'pack'],
    ['refs', 'heads'],
    ['refs', 'tags'],
  ])
    await mkdir(path.join(gitDir, ...dir), { recursive: true });
  const config =
    '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n' +
    configText({
      core: { fsync: 'none' },
      user: { name: s.author.name, email: s.author.email },
      'remote "origin"': { url: s.url, fetch: '+refs/heads/*:refs/remotes/origin/*' },
    });
  await writeFile(path.join(gitDir, 'config'), config);
  await writeFile(path.join(gitDir, 'objects', 'info', 'alternates'), `${path.join(s.mirror, 'objects')}\n`);
  // A shallow mirror (git.depth): the checkout knows where its history stops, as clone --shared copies it.
  await copyFile(path.join(s.mirror, 'shallow'), path.join(gitDir, 'shallow')).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  const branchRef = branch ? `${head} refs/heads/${branch}\n` : '';
  const packed = await remotePackedRefs(s.mirror);
  if (packed !== null) await writeFile(path.join(gitDir, 'packed-refs'), `# pack-refs with: peeled fully-peeled \n${branchRef}${packed}`);
  await writeFile(path.join(gitDir, 'HEAD'), branch ? `ref: refs/heads/${branch}\n` : `${head}\n`);
  // A mirror with loose refs (none after a local clone) goes through git.
  if (packed === null) await syncRemoteRefs(s, branch ? `update refs/heads/${branch} ${head}\n` : '');
  await copyIndex(prepared, gitDir);
  return true;
}

/**
 * The mirror's branches as `refs/remotes/origin/*` and its tags (with their peeled lines), in
 * packed-refs form; null when the mirror has loose refs or its packed refs are not fully peeled.
 */
async function remotePackedRefs(mirror: string): Promise<string | null> {
  const loose = async (dir: string): Promise<boolean> => {
    for (const entry of await readdir(path.join(mirror, dir), { withFileTypes: true }).catch(() => [])) {
      if (!entry.isDirectory() || (await loose(path.join(dir, entry.name)))) return true;
    }
    return false;
  };
  if ((await loose('refs/heads')) || (await loose('refs/tags'))) return null;
  const text = await readFile(path.join(mirror, 'packed-refs'), 'utf8').catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? '' : null));
  if (text === null) return null;
  const [header, ...lines] = text.split('\n');
  if (text && !/^# pack-refs with:.* fully-peeled/.test(header)) return null;
  const out: string[] = [];
  let kept = false;
  for (const line of text ? lines : []) {
    if (!line) continue;
    if (line.startsWith('^')) {
      if (kept) out.push(line);
      continue;
    }
    const match = /^([0-9a-f]{40,64}) (refs\/(heads|tags)\/\S+)$/.exec(line);
    kept = !!match;
    if (match) out.push(`${match[1]} ${match[2].replace(/^refs\/heads\//, 'refs/remotes/origin/')}`);
  }
  return out.map((l) => `${l}\n`).join('');
}
