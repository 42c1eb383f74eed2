import { BadRequest, Invalid, NotFound } from '../../core/errors.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import type { ReleaseRef } from '../../core/ports/environments.ts';
import type { Releases } from '../../core/ports/releases.ts';
import type { DeployRequest } from './service.ts';

/**
 * The release a Deploy request names: a release of the builds domain by tag or id (its digests, the
 * request's `image_digests` over them), or `git_sha` with its `manifest_hash` (the request's digests,
 * or `image_tag` on each service's image). 400 without either, 404 for an unknown release, 422 for
 * a hash that is not the SHA's.
 */
export async function releaseOf(
  d: { releases: () => Releases | null; manifests: ManifestReader },
  projectId: string,
  request: DeployRequest,
): Promise<ReleaseRef> {
  const tag = request.release_tag ?? (typeof request.inputs?.release_tag === 'string' ? request.inputs.release_tag : undefined);
  const id = typeof request.inputs?.release_id === 'string' ? request.inputs.release_id : undefined;
  if (tag !== undefined || id !== undefined) {
    const releases = d.releases();
    const record = !releases ? null : id !== undefined ? await releases.byId(projectId, id) : await releases.byTag(projectId, tag!);
    if (!record) throw new NotFound(`release ${id ?? tag} not found in project ${projectId}`);
    const release: ReleaseRef = {
      id: record.id,
      tag: record.tag,
      git_sha: record.git_sha,
      manifest_hash: record.manifest_hash,
      image_digests: record.image_digests,
      ...(record.images && Object.keys(record.images).length > 0 ? { images: record.images } : {}),
    };
    return request.image_digests ? { ...release, image_digests: { ...release.image_digests, ...request.image_digests } } : release;
  }
  if (!request.git_sha || !request.manifest_hash)
    throw new BadRequest('a deploy needs "git_sha" with "manifest_hash", or "release_tag"', { fields: ['git_sha', 'manifest_hash', 'release_tag'] });
  const manifest = await d.manifests.byHash(projectId, request.manifest_hash);
  if (!manifest || (manifest.git_sha !== null && manifest.git_sha !== request.git_sha))
    throw new Invalid(
      `manifest_hash ${request.manifest_hash} does not match git_sha ${request.git_sha}: ${manifest ? `that manifest was synced from ${manifest.git_sha}` : 'no manifest with that hash was synced'}`,
      { fields: ['git_sha', 'manifest_hash'] },
    );
  const services = manifest.parsed.services ?? {};
  const digests = request.image_digests ?? {};
  if (!request.image_digests && request.image_tag)
    for (const [service, def] of Object.entries(services)) if (def.image) digests[service] = `${def.image}:${request.image_tag}`;
  return { id: null, tag: null, git_sha: request.git_sha, manifest_hash: request.manifest_hash, image_digests: digests };
}
