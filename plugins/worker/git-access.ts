import * as access from '../../core/git-access.ts';
import { WorkerFailure } from './failure.ts';

export { redactUrl, type AccessSecrets, type RepoAccess } from '../../core/git-access.ts';

/** core/git-access.ts, with its refusals as the attempt's failure. */
function asWorkerFailure(err: unknown): never {
  throw err instanceof access.GitAccessError ? new WorkerFailure(err.message) : err;
}

export function repoKind(url: string): access.RepoAccess['kind'] {
  try {
    return access.repoKind(url);
  } catch (err) {
    return asWorkerFailure(err);
  }
}

export function repoAccess(url: string, secrets: access.AccessSecrets, purpose: string): Promise<access.RepoAccess> {
  return access.repoAccess(url, secrets, purpose).catch(asWorkerFailure);
}

export function checkPushRemote(remote: string, repoUrl: string | null): void {
  try {
    access.checkPushRemote(remote, repoUrl);
  } catch (err) {
    asWorkerFailure(err);
  }
}
