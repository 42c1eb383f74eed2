import { BadRequest, Invalid, NotFound } from '../../core/errors.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import { releaseName, type ReleaseRef } from '../../core/ports/environments.ts';
import type { Releases } from '../../core/ports/releases.ts';
import type { DeployRequest } from './service.ts';
import type { Manifest } from '../../domain/manifest/types.ts';
import { refuseDisagreement } from './release-agreement.ts';

/**
 * The release a Deploy request names: a release of the builds domain by tag or id (its digests, the
 * request's `image_digests` over them), or `git_sha` with its `manifest_hash` (the request's digests,
 * or `image_tag` on each built service's image). 400 without either, 404 for an unknown release, 422 for
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
    refuseDisagreement(request, record);
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
  const base = { id: null, tag: null, git_sha: request.git_sha, manifest_hash: request.manifest_hash };
  if (request.image_digests || !request.image_tag) return { ...base, image_digests: request.image_digests ?? {} };
  return { ...base, image_digests: {}, images: taggedImages(manifest.parsed.services ?? {}, request.image_tag), image_tag: request.image_tag };
}

/**
 * `image_tag` names pre-built images of the services a build of the commit makes (those with build
 * config: what a release of it would hold), never a service that runs a third-party image as it is
 * (`postgres:16` stays as the manifest says). A built service without an `image` name cannot be
 * found by tag: 422 naming it.
 */
function taggedImages(services: NonNullable<Manifest['services']>, tag: string): Record<string, string> {
  const built = Object.entries(services).filter(([, def]) => def.build);
  const unnamed = built.filter(([, def]) => !def.image).map(([name]) => name);
  if (unnamed.length > 0)
    throw new Invalid(`"image_tag" needs each built service's "image" in the manifest, and ${unnamed.join(', ')} has none: give "image_digests" instead`, {
      fields: ['image_tag'],
    });
  return Object.fromEntries(built.map(([name, def]) => [name, `${def.image}:${tag}`]));
}

/**
 * Why a direct deploy without images is refused, and how to go on. A direct deploy builds nothing
 * (it bypasses the pipeline); the build the spec implies when no `image_digests` are given is the
 * environment pipeline's build step.
 */
export function nothingToDeploy(env: { name: string; pipeline: string | null }, release: ReleaseRef): string {
  const what = release.id ? `release ${releaseName(release)} has no image digests` : `git_sha ${release.git_sha} comes without images`;
  const viaPipeline = env.pipeline
    ? `deploy without "direct" so environment ${env.name}'s pipeline ${env.pipeline} builds it`
    : `give environment ${env.name} a pipeline with a build step (its "pipeline" in the manifest) and deploy through it`;
  return `nothing to deploy: ${what}, and a direct deploy does not build; give "image_digests" (skips the build) or "image_tag", deploy a release of a build ("release_tag"), or ${viaPipeline}`;
}
