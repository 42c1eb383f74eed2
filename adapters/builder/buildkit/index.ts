import { defineAdapter } from '../../../core/sdk.ts';
import { BuildFailure, type Builder, type BuildRequest, type BuiltImage, type ServiceBuild } from '../../../core/ports/builder.ts';
import { failedStage } from '../failed-stage.ts';
import {
  CREDENTIALS_HINT,
  KubeBuilder,
  kubeApiFor,
  kubeBuilderSchema,
  relativeInside,
  TERMINATION_LOG,
  type KubeBuilderOptions,
  type PodEnd,
  type ToolPod,
} from '../kube-build.ts';
import { lastMeaningful } from '../process.ts';

const DENIED = /401 Unauthorized|403 Forbidden|authentication required|denied|insufficient_scope|failed to authorize/i;
const GIT = /failed to fetch remote|repository does not contain ref|git stderr|failed to load cache key: .*git/i;
const GIT_DENIED = /Authentication failed|could not read Username|terminal prompts disabled|HTTP Basic: Access denied|returned error: 40[13]/i;

/**
 * BuildKit in the cluster, daemonless: one pod per service runs the rootless image's
 * `buildctl-daemonless.sh build` on the git context pinned to the build's commit
 * (`<repo>#<sha>:<context>`), pushes to the target with the per-build docker-config Secret, and
 * writes its metadata (`containerimage.digest`) to the termination log, read back when the pod ends.
 * A private HTTPS repository's token reaches BuildKit's git source as the build secret
 * GIT_AUTH_TOKEN, from the pod's env, which reads it from the per-build git Secret.
 */
class BuildkitBuilder extends KubeBuilder {
  readonly name = 'buildkit';
  protected readonly discardNote = 'the registry is none, so each image is built in the pod and discarded with it';

  protected pod(request: BuildRequest, service: ServiceBuild, token: string | null): ToolPod {
    return {
      command: ['buildctl-daemonless.sh'],
      args: buildctlArgs(request, service, token !== null),
      env: { BUILDKITD_FLAGS: '--oci-worker-no-process-sandbox' },
      gitTokenEnv: token === null ? [] : [GIT_AUTH_TOKEN],
      dockerConfigDir: '/home/user/.docker',
      scratch: ['/home/user/.local/share/buildkit'],
      // As moby/buildkit's rootless examples: its own user, and no seccomp or AppArmor profile in the way of its user namespaces.
      securityContext: { runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'Unconfined' }, appArmorProfile: { type: 'Unconfined' } },
    };
  }

  protected result(service: ServiceBuild, request: BuildRequest, end: PodEnd): BuiltImage {
    if (end.exitCode !== 0) {
      const text = end.lines.join('\n');
      const why = `${service.service}: ${lastMeaningful(end.lines)}`;
      if (GIT.test(text)) throw new BuildFailure('clone_error', GIT_DENIED.test(text) ? `${why} ${CREDENTIALS_HINT}` : why);
      if (/failed to push/i.test(text)) throw new BuildFailure(DENIED.test(text) ? 'auth_error' : 'registry_error', why);
      throw new BuildFailure('build_error', why, failedStage(end.lines));
    }
    let digest: unknown;
    try {
      digest = (JSON.parse(end.message) as Record<string, unknown>)['containerimage.digest'];
    } catch {
      digest = undefined;
    }
    if (typeof digest !== 'string' || !/^sha256:[0-9a-f]{64}$/.test(digest))
      throw new BuildFailure('build_error', `${service.service}: buildctl wrote no containerimage.digest to its metadata file (${TERMINATION_LOG})`);
    return { service_name: service.service, image_ref: service.image_ref, digest, platforms: request.platforms, size_bytes: null };
  }
}

/** The build secret BuildKit's git source authenticates HTTPS clones with (as `x-access-token:<token>`). */
const GIT_AUTH_TOKEN = 'GIT_AUTH_TOKEN';

/** `buildctl build` for one service: the Dockerfile frontend on the git context at the exact commit, with the git token as a build secret read from the env. */
export function buildctlArgs(request: BuildRequest, service: ServiceBuild, withToken = false): string[] {
  const context = relativeInside(service.context, `services.${service.service}.build.context`);
  const dockerfile = relativeInside(service.dockerfile, `services.${service.service}.build.dockerfile`);
  const gitContext = `${request.repoUrl}#${request.gitSha}${context ? `:${context}` : ''}`;
  return [
    'build',
    '--frontend',
    'dockerfile.v0',
    '--opt',
    `context=${gitContext}`,
    '--opt',
    `filename=${dockerfile || 'Dockerfile'}`,
    ...(request.platforms.length ? ['--opt', `platform=${request.platforms.join(',')}`] : []),
    ...(withToken ? ['--secret', `id=${GIT_AUTH_TOKEN},env=${GIT_AUTH_TOKEN}`] : []),
    '--output',
    `type=image,name=${service.image_ref},push=${request.push ? 'true' : 'false'}`,
    '--metadata-file',
    TERMINATION_LOG,
    '--progress',
    'plain',
  ];
}

export default defineAdapter<Builder, KubeBuilderOptions>({
  kind: 'builder',
  name: 'buildkit',
  options: kubeBuilderSchema('moby/buildkit:rootless', { requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '4Gi' } }),
  create: (options, deps) =>
    new BuildkitBuilder(options, kubeApiFor(options, deps, 'builds.builders.buildkit'), deps.logger, deps.config?.builds?.timeout_seconds ?? null),
});
