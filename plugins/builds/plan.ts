import { BuildFailure, type ServiceBuild } from '../../core/ports/builder.ts';
import type { RegistryTarget } from '../../core/ports/registry.ts';
import type { ServiceDefinition } from '../../domain/manifest/types.ts';
import type { BuildSpec } from './repository.ts';

/**
 * The image tag of a build (spec: tags): its version input; else `local` when the images stay in
 * the local engine (registry `none`: local development, where `<slug>/<service>:local` is the
 * latest build); else `sha-<sha>`. Releases and deploys name images by digest, so a newer local
 * build taking the tag leaves earlier releases runnable.
 */
export function tagOf(spec: Pick<BuildSpec, 'git_sha' | 'inputs'>, target: Pick<RegistryTarget, 'host'>): string {
  if (typeof spec.inputs.version === 'string' && spec.inputs.version) return spec.inputs.version;
  return target.host === null ? 'local' : `sha-${spec.git_sha}`;
}

/**
 * The services a spec builds: those it names (or all) that have build config, each with its context,
 * Dockerfile and image reference. None with build config is a failure that says what to add.
 */
export function servicesToBuild(
  declared: Record<string, ServiceDefinition>,
  spec: Pick<BuildSpec, 'git_sha' | 'inputs' | 'services'>,
  target: RegistryTarget,
): ServiceBuild[] {
  const names = spec.services ?? Object.keys(declared).sort();
  const out: ServiceBuild[] = [];
  for (const name of names) {
    const build = declared[name]?.build;
    if (!build) continue;
    const context = build.context ?? '.';
    const image = (build as { image?: string }).image ?? declared[name].image;
    out.push({
      service: name,
      context,
      dockerfile: build.dockerfile ?? 'Dockerfile',
      image_ref: `${target.repository(name, image?.replace(/:[^:/]+$/, ''))}:${tagOf(spec, target)}`,
    });
  }
  if (out.length === 0) {
    throw new BuildFailure(
      'build_error',
      `none of the services ${names.length ? names.join(', ') : '(none declared)'} has build config: add services.<name>.build.context (and build.dockerfile) to the manifest`,
    );
  }
  return out;
}
