import { rm } from 'node:fs/promises';
import path from 'node:path';
import { redactUrl } from '../../core/git-access.ts';
import type { RepoCache } from '../../core/repo-cache.ts';
import { maskSecrets } from '../../core/secrets/mask.ts';
import { BuildFailure, type BuildRequest } from '../../core/ports/builder.ts';
import { lastMeaningful } from './process.ts';
import { trustedGit } from '../../core/git-run.ts';

// Prompts and askpass are off already (core/git-hardening.ts gitEnv); ssh must not ask either.
const GIT_ENV = { GIT_SSH_COMMAND: 'ssh -o BatchMode=yes' };

/**
 * A clean checkout of `sha` from `repoUrl` into `dir` (which must not exist), with the project's
 * credentials in git's environment (`access`); clone_error when the repository or the commit is
 * not there. Output and messages carry neither the credentials nor a user:password in the URL.
 * With the worker's repository cache (`cache`), the clone is a local one from the cache's mirror
 * of the URL, fetched first when it lacks `sha`; a mirror found broken after a failure is rebuilt
 * and the checkout made once more.
 */
export async function checkout(
  repoUrl: string,
  access: BuildRequest['access'],
  sha: string,
  dir: string,
  signal: AbortSignal,
  log: (line: string) => void,
  cache: RepoCache | null = null,
): Promise<void> {
  try {
    await checkoutFrom(repoUrl, access, sha, dir, signal, cache);
  } catch (err) {
    if (!cache || !(err instanceof BuildFailure) || (await cache.verify(repoUrl, signal))) throw err;
    log(`the repository cache's mirror of ${redactUrl(repoUrl)} is broken (git fsck): removed, cloning again`);
    await rm(dir, { recursive: true, force: true });
    await checkoutFrom(repoUrl, access, sha, dir, signal, cache);
  }
}

async function checkoutFrom(
  repoUrl: string,
  access: BuildRequest['access'],
  sha: string,
  dir: string,
  signal: AbortSignal,
  cache: RepoCache | null,
): Promise<void> {
  const env = { ...GIT_ENV, ...access.env };
  const mask = (text: string) => maskSecrets(text, access.secrets);
  const url = redactUrl(repoUrl);
  const why = (err: { stderr?: string; message: string }) => lastMeaningful((err.stderr || err.message).split('\n'));
  let source = repoUrl;
  if (cache) {
    source = await cache
      .prepare(repoUrl, sha, () => Promise.resolve(env), signal)
      .catch((err: { stderr?: string; message: string }) => {
        throw new BuildFailure('clone_error', mask(`could not clone ${url}: ${why(err)}`));
      });
  }
  // svc's own hardened git (core/git-run.ts): none of the server's environment, no global config, no hooks.
  const git = (args: string[], cwd: string) => trustedGit(args, { cwd, env, signal });
  await git(['clone', '--quiet', '--no-checkout', '--', source, dir], path.dirname(dir)).catch((err) => {
    if (signal.aborted) throw err;
    throw new BuildFailure('clone_error', mask(`could not clone ${url}: ${why(err)}`));
  });
  await git(['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', sha], dir).catch((err) => {
    if (signal.aborted) throw err;
    throw new BuildFailure('clone_error', mask(`${url} has no commit ${sha}: ${why(err)}`));
  });
}
