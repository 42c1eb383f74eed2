import { BuildFailure } from '../../core/ports/builder.ts';
import { lastMeaningful, runLines } from './process.ts';

const GIT_ENV = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true', GIT_SSH_COMMAND: 'ssh -o BatchMode=yes' };

/** A clean checkout of `sha` from `repoUrl` into `dir` (which must not exist); clone_error when the repository or the commit is not there. */
export async function checkout(repoUrl: string, sha: string, dir: string, signal: AbortSignal, log: (line: string) => void): Promise<void> {
  const env = { ...process.env, ...GIT_ENV };
  const onLine = (line: string) => log(line);
  const cloned = await runLines('git', ['clone', '--quiet', '--no-checkout', '--', repoUrl, dir], { env, signal, onLine });
  if (cloned.code !== 0) throw new BuildFailure('clone_error', `could not clone ${repoUrl}: ${lastMeaningful(cloned.lines)}`);
  const checked = await runLines('git', ['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', sha], { cwd: dir, env, signal, onLine });
  if (checked.code !== 0) throw new BuildFailure('clone_error', `${repoUrl} has no commit ${sha}: ${lastMeaningful(checked.lines)}`);
}
