import { defineAdapter } from '../../../core/sdk.ts';
import { BuildFailure, type Builder, type BuildRequest, type BuiltImage, type ServiceBuild } from '../../../core/ports/builder.ts';
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

const DENIED = /UNAUTHORIZED|authentication required|DENIED|insufficient_scope|403 Forbidden/i;

/**
 * The kaniko executor in the cluster, the fallback where BuildKit cannot run: one pod per service
 * with `--context=git://<repo>#<sha>` (the exact commit), `--context-sub-path`, `--dockerfile`,
 * `--destination` and `--digest-file` on the termination log, read back when the pod ends. The
 * push credentials are the per-build docker-config Secret, mounted at /kaniko/.docker. A private
 * HTTPS repository's token is kaniko's GIT_PASSWORD (GIT_USERNAME x-access-token), read from the
 * per-build git Secret.
 */
class KanikoBuilder extends KubeBuilder {
  readonly name = 'kaniko';
  protected readonly discardNote = 'the registry is none, so each image is built in the pod and discarded with it (--no-push)';

  protected pod(request: BuildRequest, service: ServiceBuild, token: string | null): ToolPod {
    const { args, env } = executorArgs(request, service);
    return {
      command: ['/kaniko/executor'],
      args,
      env: token === null ? env : { ...env, GIT_USERNAME: 'x-access-token' },
      gitTokenEnv: token === null ? [] : ['GIT_PASSWORD'],
      dockerConfigDir: '/kaniko/.docker',
      scratch: [],
      // kaniko unpacks the base image's file system over its own, so it runs as root (no privilege escalation beyond that).
      securityContext: { runAsUser: 0, allowPrivilegeEscalation: false },
    };
  }

  protected result(service: ServiceBuild, request: BuildRequest, end: PodEnd): BuiltImage {
    if (end.exitCode !== 0) {
      const text = end.lines.join('\n');
      const why = `${service.service}: ${lastMeaningful(end.lines)}`;
      if (/error resolving source context/i.test(text))
        throw new BuildFailure('clone_error', /authentication required|authorization failed/i.test(text) ? `${why} ${CREDENTIALS_HINT}` : why);
      if (/error pushing image|checking push permission/i.test(text)) throw new BuildFailure(DENIED.test(text) ? 'auth_error' : 'registry_error', why);
      throw new BuildFailure('build_error', why, failedInstruction(end.lines));
    }
    const digest = end.message;
    if (!/^sha256:[0-9a-f]{64}$/.test(digest))
      throw new BuildFailure('build_error', `${service.service}: kaniko wrote no digest to its digest file (${TERMINATION_LOG})`);
    return { service_name: service.service, image_ref: service.image_ref, digest, platforms: request.platforms, size_bytes: null };
  }
}

/** The step kaniko was running when it failed: the last instruction it logged, with its stage. */
function failedInstruction(lines: string[]): string | null {
  let stage: string | null = null;
  let step: string | null = null;
  for (const line of lines) {
    const s = /^INFO\[\d+\] Building stage '([^']+)'/.exec(line);
    if (s) stage = s[1];
    const i = /^INFO\[\d+\] ((?:RUN|COPY|ADD|WORKDIR|USER|ENV|ARG|LABEL|EXPOSE|CMD|ENTRYPOINT|VOLUME|SHELL) .*)$/.exec(line);
    if (i) step = i[1];
  }
  return step ? (stage ? `[${stage}] ${step}` : step) : null;
}

/** The executor's arguments for one service (kaniko builds one platform per run), and GIT_PULL_METHOD for the repository's scheme. */
export function executorArgs(request: BuildRequest, service: ServiceBuild): { args: string[]; env: Record<string, string> } {
  const context = relativeInside(service.context, `services.${service.service}.build.context`);
  const dockerfile = relativeInside(service.dockerfile, `services.${service.service}.build.dockerfile`);
  if (request.platforms.length > 1)
    throw new BuildFailure(
      'build_error',
      `kaniko builds one platform per image; asked for ${request.platforms.join(', ')} (use the buildkit builder for several)`,
    );
  // kaniko's git context is git://<host/path>, cloned with GIT_PULL_METHOD (http or https; file only in the tests' stand-in).
  const m = /^(https?|file):\/\/(.+)$/.exec(request.repoUrl);
  if (!m) throw new BuildFailure('clone_error', `kaniko clones over http(s) only; the repository is ${request.repoUrl}`);
  return {
    args: [
      `--context=git://${m[2]}#${request.gitSha}`,
      ...(context ? [`--context-sub-path=${context}`] : []),
      `--dockerfile=${dockerfile || 'Dockerfile'}`,
      `--destination=${service.image_ref}`,
      ...(request.push ? [] : ['--no-push']),
      `--digest-file=${TERMINATION_LOG}`,
      ...(request.platforms.length ? [`--custom-platform=${request.platforms[0]}`] : []),
    ],
    env: { GIT_PULL_METHOD: m[1] },
  };
}

export default defineAdapter<Builder, KubeBuilderOptions>({
  kind: 'builder',
  name: 'kaniko',
  options: kubeBuilderSchema('gcr.io/kaniko-project/executor:latest', { requests: { cpu: '1', memory: '2Gi' }, limits: { memory: '4Gi' } }),
  create: (options, deps) =>
    new KanikoBuilder(options, kubeApiFor(options, deps, 'builds.builders.kaniko'), deps.logger, deps.config?.builds?.timeout_seconds ?? null),
});
