import { lstat, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { directoryIn, UnsafePath, writeContained } from '../../core/contained-fs.ts';
import { WorkerFailure } from './failure.ts';
import { Aborted } from '../../core/aborted.ts';
import { trustedGit } from '../../core/git-run.ts';
import { redactUrl, type RepoAccess } from './git-access.ts';
import type { GitSetup } from './git.ts';

/**
 * The git operations of an attempt, split by where they run (git-exec.ts): the worker's mirror
 * (network and credentials) and the checkout (local only; once touched, as the job in the sandbox).
 */

/** Files the worker writes into the workspace; never committed. */
const WORKER_FILES = ['.svc/resources/', '.svc/coordination-inbox.md', '.svc/home/', '.svc/prompt.md', '.svc/steps/'];

/** `git <args>` in the checkout, stdout trimmed: the worker's own git until a job may have touched it, then the sandboxed one. */
export function git(s: GitSetup, args: string[], input?: string): Promise<string> {
  const runner = s.touched ? s.checkoutGit : trustedGit;
  return runner(args, { cwd: s.dir, signal: s.signal, ...(input === undefined ? {} : { input }) });
}

/** `git <args>` in the mirror, with the credentials of `access` when it reaches a remote (its host checked again and pinned: connectEnv). */
export async function mirrorGit(s: GitSetup, args: string[], access?: RepoAccess): Promise<string> {
  return trustedGit(args, { cwd: s.mirror, signal: s.signal, ...(access ? { env: await connectEnv(access) } : {}) });
}

/** The environment of one connection to the remote: the outbound address policy checks its host right before it (core/git-addresses.ts). */
const connectEnv = (access: RepoAccess): Promise<Record<string, string>> => (access.connect ? access.connect() : Promise.resolve(access.env));

/** Runs a git step; a failure is the attempt's, with git's own last lines (credentials masked). */
export async function run<T>(what: string, step: Promise<T>, access?: RepoAccess | null): Promise<T> {
  try {
    return await step;
  } catch (err) {
    if (err instanceof Aborted) throw err;
    if (err instanceof UnsafePath) throw new WorkerFailure(`${what}: refused: ${err.message}`);
    let detail = ((err as { stderr?: string }).stderr || (err as Error).message).trim().split('\n').slice(-5).join(' | ');
    for (const secret of access?.secrets ?? []) detail = detail.split(secret).join('***');
    throw new WorkerFailure(`${what}: ${detail}`);
  }
}

/** The commit `rev` names in the mirror, or null. */
export const mirrorCommit = (s: GitSetup, rev: string) => mirrorGit(s, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]).catch(() => null);
/** The commit `rev` names in the checkout, or null. */
export const commitAt = (s: GitSetup, rev: string) => git(s, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]).catch(() => null);
/** A branch's tip on the remote as the mirror last fetched it, or null. */
export const remoteTip = (s: GitSetup, branch: string) => mirrorCommit(s, `refs/heads/${branch}`);

/**
 * Clones the remote into the mirror (bare; its branches kept as the mirror's own, so a fetch
 * updates them). With the repository cache, from the cache's mirror of the URL, fetched first so
 * it holds `want` as the remote has it now: a local clone, its objects hard links to the cache's
 * (git never writes into an object file, so nothing done here reaches the cache); `origin` then
 * names the real remote.
 */
export async function cloneMirror(s: GitSetup, want: string | null = null, depth: number | null = null): Promise<void> {
  await rm(s.mirror, { recursive: true, force: true });
  const cached = s.cache
    ? await run(
        `cloning ${redactUrl(s.url)} into the repository cache failed`,
        s.cache.prepare(s.url, want, () => connectEnv(s.access), s.signal),
        s.access,
      )
    : s.url;
  // A shallow clone (git.depth): git ignores --depth for a local path, so the cache's mirror is named by a file:// URL.
  const source = depth && s.cache ? `file://${cached}` : cached;
  const shallow = depth ? ['--depth', String(depth), '--no-single-branch'] : [];
  await run(
    s.cache ? 'cloning from the repository cache failed' : `cloning ${redactUrl(s.url)} failed`,
    (s.cache ? Promise.resolve({}) : connectEnv(s.access)).then((env) =>
      trustedGit(['clone', '--quiet', '--bare', '--template=', '--config', 'core.fsync=none', ...shallow, '--', source, s.mirror], {
        cwd: path.dirname(s.mirror),
        signal: s.signal,
        env,
      }),
    ),
    s.access,
  );
  // The clone's config names the cache's mirror as origin: it becomes the real remote, as `git remote set-url` would make it.
  if (s.cache && (await pointOrigin(s.mirror, source, s.url))) return;
  if (s.cache) await run('preparing the mirror failed', mirrorGit(s, ['remote', 'set-url', 'origin', s.url]));
  await run('preparing the mirror failed', mirrorGit(s, ['config', 'remote.origin.fetch', '+refs/heads/*:refs/heads/*']));
}

/** Rewrites the origin a local clone wrote last in `mirror`'s config (`url = <from>`) to `url` with the mirror's refspec; false when the config is not as expected. */
async function pointOrigin(mirror: string, from: string, url: string): Promise<boolean> {
  const file = path.join(mirror, 'config');
  const text = await readFile(file, 'utf8');
  const written = `[remote "origin"]\n\turl = ${from}\n`;
  if (!text.endsWith(written) || text.indexOf('[remote ') !== text.length - written.length) return false;
  await writeFile(file, text.slice(0, -written.length) + configText({ 'remote "origin"': { url, fetch: '+refs/heads/*:refs/heads/*' } }));
  return true;
}

/** Sections of a git config file, each value quoted (backslash, quote, newline and tab escaped). */
export function configText(sections: Record<string, Record<string, string>>): string {
  const quote = (v: string) => `"${v.replace(/[\\"\n\t]/g, (c) => ({ '\\': '\\\\', '"': '\\"', '\n': '\\n', '\t': '\\t' })[c]!)}"`;
  return Object.entries(sections)
    .map(
      ([section, values]) =>
        `[${section}]\n${Object.entries(values)
          .map(([k, v]) => `\t${k} = ${quote(v)}\n`)
          .join('')}`,
    )
    .join('');
}

/** Removes what a failed clone left in the checkout's folder (nothing of a job has run there yet) and the mirror. */
export async function emptyCheckout(s: GitSetup): Promise<void> {
  await s.overlay?.unmount();
  for (const entry of await readdir(s.dir)) await rm(path.join(s.dir, entry), { recursive: true, force: true });
  await rm(s.mirror, { recursive: true, force: true });
}

/** Brings the mirror up to date with the remote. */
export const fetchMirror = (s: GitSetup) => run('git fetch failed', mirrorGit(s, ['fetch', '--quiet', '--prune', 'origin'], s.access), s.access);

/**
 * The checkout, made from the mirror before any job has touched the folder: its objects are
 * borrowed from the mirror (read-only to the job), `origin` names the real remote, the author is in
 * its config. Nothing is checked out yet.
 */
export async function cloneCheckout(s: GitSetup): Promise<void> {
  const config = ['core.fsync=none', `user.name=${s.author.name}`, `user.email=${s.author.email}`].flatMap((c) => ['--config', c]);
  await run(
    'preparing the checkout failed',
    trustedGit(['clone', '--quiet', '--shared', '--no-checkout', '--template=', ...config, s.mirror, s.dir], { cwd: path.dirname(s.dir), signal: s.signal }),
  );
  await run('preparing the checkout failed', git(s, ['remote', 'set-url', 'origin', s.url]));
}

/** Points the checkout's `origin/*` branches and its tags at what the mirror holds now (a reused checkout, after fetchMirror); `more`: further updates in the same transaction. */
export async function syncRemoteRefs(s: GitSetup, more = ''): Promise<void> {
  const refs = await run('reading the mirror failed', mirrorGit(s, ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads', 'refs/tags']));
  const updates = refs
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [sha, ref] = line.split(' ');
      return `update ${ref.replace(/^refs\/heads\//, 'refs/remotes/origin/')} ${sha}\n`;
    })
    .join('');
  if (updates || more) await run('updating the checkout from the mirror failed', git(s, ['update-ref', '--stdin'], updates + more));
}

/** The commit a branch, tag or (abbreviated) SHA names on the remote (as the mirror has it), or null. */
export async function resolveRef(s: GitSetup, ref: string): Promise<{ sha: string; remoteBranch: string | null } | null> {
  const remoteBranch = await remoteTip(s, ref);
  const sha = remoteBranch ?? (await mirrorCommit(s, `refs/tags/${ref}`)) ?? (/^[0-9a-f]{4,40}$/i.test(ref) ? await mirrorCommit(s, ref) : null);
  return sha ? { sha, remoteBranch } : null;
}

/**
 * The checkout's HEAD, copied into the mirror (so it can be pushed, diffed and compared there), or
 * null when the checkout has no commit. The sandboxed git writes a bundle of what the mirror lacks
 * (`known`: commits it may have, beside its branch tips) into the exchange folder; the mirror fetches it, checking every
 * object. Nothing of the checkout's configuration reaches the mirror.
 */
export async function importHead(s: GitSetup, known: string[]): Promise<string | null> {
  const head = await commitAt(s, 'HEAD');
  if (!head || !/^[0-9a-f]{40,64}$/.test(head)) return null;
  if (await mirrorCommit(s, head)) return head;
  const bundle = path.join(await directoryIn(s.exchange, []), 'head.bundle');
  await rm(bundle, { force: true });
  // Everything the mirror holds is visible to the checkout (it borrows the mirror's objects), so its branch tips are prerequisites too.
  const tips = (await mirrorGit(s, ['for-each-ref', '--format=%(objectname)', 'refs/heads']).catch(() => '')).split('\n');
  const present = await Promise.all(known.map((k) => mirrorCommit(s, k)));
  const prerequisites = [...new Set([...present, ...tips])].filter((k): k is string => !!k && /^[0-9a-f]{40,64}$/.test(k)).map((k) => `^${k}\n`);
  await run('reading the checkout failed', git(s, ['bundle', 'create', bundle, '--stdin'], `HEAD\n${prerequisites.join('')}`));
  const info = await lstat(bundle).catch(() => null);
  if (!info?.isFile()) throw new WorkerFailure('reading the checkout failed: the bundle of its HEAD is not a regular file');
  await run(
    'copying the checkout into the mirror failed',
    mirrorGit(s, ['-c', 'transfer.fsckObjects=true', 'fetch', '--quiet', '--no-tags', bundle, `+HEAD:refs/svc/head`]),
  );
  await rm(bundle, { force: true });
  const fetched = await mirrorCommit(s, 'refs/svc/head');
  if (fetched !== head) throw new WorkerFailure(`copying the checkout into the mirror failed: its HEAD is ${head}, the bundle held ${fetched}`);
  return head;
}

/** A workspace-relative path as an exclude pattern that matches exactly that path (anchored, wildcards escaped). */
export const exactPattern = (file: string): string =>
  `/${file
    .split(path.sep)
    .join('/')
    .replace(/^\/+/, '')
    .replace(/[\\*?[\]!#]/g, (c) => `\\${c}`)}`;

/**
 * Keeps the worker's own files, and `extra` (the files a harness wrote for its run: plugin dirs,
 * tool server config), out of every commit (`.git/info/exclude`; a link there is refused, never
 * followed). Only untracked files are excluded, so a file the repository already holds stays its own.
 */
export async function excludeWorkerFiles(s: GitSetup, extra: string[] = []): Promise<void> {
  const relative = path.join('.git', 'info', 'exclude');
  const file = path.join(await run('preparing the checkout failed', directoryIn(s.dir, ['.git', 'info'])), 'exclude');
  const info = await lstat(file).catch(() => null);
  if (info && !info.isFile()) throw new WorkerFailure(`preparing the checkout failed: refused: ${new UnsafePath(relative, 'is not a regular file').message}`);
  const current = info ? await readFile(file, 'utf8') : '';
  const missing = [...new Set([...WORKER_FILES, ...extra.map(exactPattern)])].filter((f) => !current.split('\n').includes(f));
  if (missing.length)
    await run(
      'preparing the checkout failed',
      writeContained(s.dir, relative, `${current}${current && !current.endsWith('\n') ? '\n' : ''}${missing.join('\n')}\n`),
    );
}
