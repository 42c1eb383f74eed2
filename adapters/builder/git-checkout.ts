import { redactUrl } from '../../core/git-access.ts';
import { maskSecrets } from '../../core/secrets/mask.ts';
import { BuildFailure, type BuildRequest } from '../../core/ports/builder.ts';
import { lastMeaningful, runLines } from './process.ts';

const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', GIT_SSH_COMMAND: 'ssh -o BatchMode=yes' };

/**
 * A clean checkout of `sha` from `repoUrl` into `dir` (which must not exist), with the project's
 * credentials in git's environment (`access`); clone_error when the repository or the commit is
 * not there. Output and messages carry neither the credentials nor a user:password in the URL.
 */
export async function checkout(
  repoUrl: string,
  access: BuildRequest['access'],
  sha: string,
  dir: string,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<void> {
  const env = { ...process.env, ...GIT_ENV, ...access.env };
  const mask = (text: string) => maskSecrets(text, access.secrets);
  const onLine = (line: string) => log(mask(line));
  const url = redactUrl(repoUrl);
  const cloned = await runLines('git', ['clone', '--quiet', '--no-checkout', '--', repoUrl, dir], { env, signal, onLine });
  if (cloned.code !== 0) throw new BuildFailure('clone_error', mask(`could not clone ${url}: ${lastMeaningful(cloned.lines)}`));
  const checked = await runLines('git', ['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', sha], { cwd: dir, env, signal, onLine });
  if (checked.code !== 0) throw new BuildFailure('clone_error', mask(`${url} has no commit ${sha}: ${lastMeaningful(checked.lines)}`));
}
