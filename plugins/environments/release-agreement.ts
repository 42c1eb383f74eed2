import { Invalid } from '../../core/errors.ts';

/**
 * A deploy naming a release may also give `git_sha` (and `manifest_hash`): they are what the caller
 * expects the release to be, so a release of another commit or manifest is 422 rather than a guess
 * at which one was meant.
 */
export function refuseDisagreement(
  request: { git_sha?: string; manifest_hash?: string },
  release: { tag: string | null; id: string; git_sha: string; manifest_hash: string },
): void {
  const name = release.tag ?? release.id;
  if (request.git_sha !== undefined && request.git_sha !== release.git_sha)
    throw new Invalid(`release ${name} is of commit ${release.git_sha}, not git_sha ${request.git_sha}: give one of them, or ones that agree`, {
      fields: ['release_tag', 'git_sha'],
    });
  if (request.manifest_hash !== undefined && request.manifest_hash !== release.manifest_hash)
    throw new Invalid(`release ${name} has manifest_hash ${release.manifest_hash}, not ${request.manifest_hash}`, { fields: ['release_tag', 'manifest_hash'] });
}
