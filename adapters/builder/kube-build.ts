/**
 * What the in-cluster builders (buildkit, kaniko) share: their options, the per-build docker-config
 * Secret and git-token Secret, one Pod per service run to its end with its log streamed line by line, the digest read
 * back from the container's termination message, and the Pod and Secret deleted on every path.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import Joi from 'joi';
import type { Logger } from 'pino';
import type { AdapterDeps } from '../../core/adapters.ts';
import { GitAccessError, redactUrl, repoKind } from '../../core/git-access.ts';
import { BuildFailure, type Builder, type BuildRequest, type BuiltImage, type PushTarget, type ServiceBuild } from '../../core/ports/builder.ts';
import { CONNECTION_KEYS, connectionRules, connectionSchema, kubeConfigOf, type KubeConnection } from '../kube/connection.ts';
import { KubeApi } from '../kube/kube-api.ts';
import { PodProcess, terminatedOf } from '../kube/pod-process.ts';
import { podStarted, PodStartError } from '../kube/pod-start.ts';

export const BUILD_CONTAINER = 'build';
/** Where the tool writes what the builder reads back (its digest file / metadata file); the kubelet hands it over as `terminated.message`. */
export const TERMINATION_LOG = '/dev/termination-log';

export type KubeBuilderOptions = KubeConnection & {
  namespace: string;
  image: string;
  image_pull_policy: 'Always' | 'IfNotPresent' | 'Never' | null;
  image_pull_secrets: string[];
  service_account: string | null;
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  node_selector: Record<string, string>;
  labels: Record<string, string>;
  pending_timeout_ms: number;
  unschedulable: 'fail' | 'wait';
  kill_grace_seconds: number;
};

const quantity = Joi.alternatives(Joi.string().pattern(/^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/), Joi.number().min(0));
const resources = Joi.object().pattern(Joi.string().pattern(/^[a-z0-9./-]+$/), quantity);

export function kubeBuilderSchema(defaultImage: string, defaultResources: KubeBuilderOptions['resources']): Joi.ObjectSchema {
  return connectionRules(
    Joi.object({
      ...connectionSchema,
      namespace: Joi.string()
        .pattern(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
        .max(63)
        .default('default')
        .description('Namespace the build pods and their docker-config secrets are created in.'),
      image: Joi.string().default(defaultImage).description('The builder image.'),
      image_pull_policy: Joi.string().valid('Always', 'IfNotPresent', 'Never').allow(null).default(null),
      image_pull_secrets: Joi.array().items(Joi.string()).default([]),
      service_account: Joi.string().allow(null).default(null).description('Service account of the build pods; null mounts no token.'),
      resources: Joi.object({ requests: resources.default({}), limits: resources.default({}) }).default(defaultResources),
      node_selector: Joi.object().pattern(Joi.string(), Joi.string()).default({}),
      labels: Joi.object().pattern(Joi.string(), Joi.string()).default({}).description('Extra labels on every build pod and secret.'),
      pending_timeout_ms: Joi.number().integer().min(1).default(300_000).description('How long a build pod may stay Pending (scheduling, image pull).'),
      unschedulable: Joi.string().valid('fail', 'wait').default('fail'),
      kill_grace_seconds: Joi.number().integer().min(0).default(5).description('Grace period of the pod deletion that cancels a build.'),
    }),
  );
}

/**
 * The cluster connection: the builder's own connection options, or, when it names none and the
 * runtime is `kubernetes`, the runtime's (one cluster configured once).
 */
export function kubeApiFor(options: KubeBuilderOptions, deps: AdapterDeps, where: string): KubeApi {
  let connection: KubeConnection = options;
  const runtime = deps.config?.adapters?.runtime;
  const own = CONNECTION_KEYS.some((k) => k !== 'insecure_skip_tls_verify' && options[k] !== undefined);
  if (!own && runtime?.use === 'kubernetes' && runtime.options) {
    connection = Object.fromEntries(CONNECTION_KEYS.filter((k) => k in runtime.options!).map((k) => [k, runtime.options![k]])) as KubeConnection;
    where = 'adapters.runtime.options';
  }
  return new KubeApi(kubeConfigOf(connection, where), options.namespace);
}

/** A path of the manifest inside the repository (`context`) or the context (`dockerfile`); one that leaves it is a build_error naming the field. */
export function relativeInside(relative: string, field: string): string {
  const clean = path.posix.normalize(relative.replace(/\\/g, '/'));
  if (path.posix.isAbsolute(clean) || clean === '..' || clean.startsWith('../'))
    throw new BuildFailure('build_error', `${field} '${relative}' leaves the repository`);
  return clean === '.' ? '' : clean.replace(/\/$/, '');
}

/** Label value form of a run id. */
const labelValue = (v: string) =>
  v
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');

/** The key of the per-build git Secret that holds the repository's HTTPS token. */
export const GIT_TOKEN_KEY = 'token';

/**
 * The repository's HTTPS token for a tool that clones it itself, or null (a public repository, or
 * file:// in the tests). The tools take tokens only: an SSH repository is refused here, before
 * anything is created in the cluster (build it with the buildx builder, or give the project an
 * https:// URL and a token).
 */
export function gitToken(request: BuildRequest, backend: string): string | null {
  let kind;
  try {
    kind = repoKind(request.repoUrl);
  } catch (err) {
    if (err instanceof GitAccessError) throw new BuildFailure('clone_error', err.message);
    throw err;
  }
  if (kind === 'ssh')
    throw new BuildFailure(
      'clone_error',
      `the ${backend} builder clones over HTTPS with a token only, and ${redactUrl(request.repoUrl)} is an SSH repository: ` +
        'give the project an https:// repository URL (its token secret is used), or build with the buildx builder',
    );
  return kind === 'https' && request.access.token ? request.access.token : null;
}

/** Appended to a clone the repository refused: where the token comes from. */
export const CREDENTIALS_HINT =
  "(the repository asks for credentials: a private HTTPS repository needs the project's token secret, worker.git.token_secret, with read access)";

export interface ToolPod {
  /** The container's command and args, and extra env. */
  command: string[];
  args: string[];
  env: Record<string, string>;
  /** Env variables whose value is the git token, read from the per-build git Secret (a secretKeyRef: never in the pod spec in clear). */
  gitTokenEnv: string[];
  /** Where the tool reads the docker config (the Secret is mounted there as config.json). */
  dockerConfigDir: string;
  /** The emptyDir volumes the tool needs (its state directory). */
  scratch: string[];
  /** Container securityContext. */
  securityContext: Record<string, unknown>;
}

/** Lines of a pod's output kept for classing its failure (the log itself streams whole to request.log). */
const KEPT_LINES = 2000;

/** How a pod's run ended: exit code (null: killed or vanished), the container's terminated reason, the termination message, the last lines. */
export interface PodEnd {
  exitCode: number | null;
  reason: string | null;
  message: string;
  lines: string[];
}

/** A pod that ended for reasons of the cluster, not of the build: resource_error. */
export function podFailure(backend: string, service: ServiceBuild, end: PodEnd): BuildFailure | null {
  if (end.exitCode === null)
    return new BuildFailure('resource_error', `${service.service}: the ${backend} pod ended without an exit status (deleted or evicted)`);
  if (end.reason === 'OOMKilled')
    return new BuildFailure('resource_error', `${service.service}: the ${backend} pod ran out of memory (builds.builders.${backend}.resources.limits.memory)`);
  if (end.reason === 'StartError' || end.reason === 'ContainerCannotRun')
    return new BuildFailure('resource_error', `${service.service}: the ${backend} image could not run its command: ${lastLine(end)}`);
  return null;
}

const lastLine = (end: PodEnd) => end.message || end.lines.at(-1) || 'no output';

/**
 * Runs builds as pods in one namespace: one docker-config Secret per build, one pod per service,
 * everything it created deleted whatever happens.
 */
export class KubeBuildRun {
  private readonly secretName: string;
  private readonly gitSecretName: string;
  private readonly base: string;
  private readonly secretsCreated: string[] = [];
  private readonly pods = new Set<string>();

  constructor(
    private readonly backend: string,
    private readonly api: KubeApi,
    private readonly options: KubeBuilderOptions,
    private readonly request: BuildRequest,
    private readonly logger: Logger,
    /** activeDeadlineSeconds of the pods (builds.timeout_seconds): the cluster ends a build whose worker is gone. */
    private readonly deadlineSeconds: number | null,
  ) {
    const run = request.runId
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '-')
      .slice(0, 30)
      .replace(/^-+|-+$/g, '');
    this.base = `svc-${backend}-${run || 'build'}-${randomBytes(3).toString('hex')}`;
    this.secretName = `${this.base}-docker`;
    this.gitSecretName = `${this.base}-git`;
  }

  private labels(): Record<string, string> {
    return {
      ...this.options.labels,
      'app.kubernetes.io/managed-by': 'svc',
      'app.kubernetes.io/component': 'build',
      'svc/builder': this.backend,
      'svc/build-run': labelValue(this.request.runId),
    };
  }

  /** A cluster error as the run reports it: resource_error naming the backend. */
  private clusterError(err: unknown): BuildFailure {
    if (err instanceof BuildFailure) return err;
    return new BuildFailure('resource_error', `builder ${this.backend}: ${(err as Error).message}`);
  }

  /** The docker-config Secret with the push credentials (an empty config without a push target). Its content is never logged. */
  async createSecret(push: PushTarget | null): Promise<string> {
    const auths = push ? { [push.host]: { auth: Buffer.from(`${push.username}:${push.password}`).toString('base64') } } : {};
    await this.secret(this.secretName, 'kubernetes.io/dockerconfigjson', { '.dockerconfigjson': JSON.stringify({ auths }) });
    return this.secretName;
  }

  /** The git Secret with the repository's token, which the pods read as env through secretKeyRef; none without a token. */
  async createGitSecret(token: string | null): Promise<void> {
    if (token !== null) await this.secret(this.gitSecretName, 'Opaque', { [GIT_TOKEN_KEY]: token });
  }

  private async secret(name: string, type: string, data: Record<string, string>): Promise<void> {
    const body: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, labels: this.labels() },
      type,
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    };
    try {
      await this.api.call(`creating secret ${name}`, () => this.api.core.createNamespacedSecret({ namespace: this.api.namespace, body }));
    } catch (err) {
      throw this.clusterError(err);
    }
    this.secretsCreated.push(name);
  }

  podManifest(name: string, service: ServiceBuild, tool: ToolPod): V1Pod {
    const o = this.options;
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, labels: { ...this.labels(), 'svc/service': labelValue(service.service) } },
      spec: {
        restartPolicy: 'Never',
        ...(this.deadlineSeconds ? { activeDeadlineSeconds: this.deadlineSeconds } : {}),
        terminationGracePeriodSeconds: o.kill_grace_seconds,
        enableServiceLinks: false,
        automountServiceAccountToken: o.service_account !== null,
        ...(o.service_account ? { serviceAccountName: o.service_account } : {}),
        ...(Object.keys(o.node_selector).length ? { nodeSelector: o.node_selector } : {}),
        ...(o.image_pull_secrets.length ? { imagePullSecrets: o.image_pull_secrets.map((n) => ({ name: n })) } : {}),
        containers: [
          {
            name: BUILD_CONTAINER,
            image: o.image,
            ...(o.image_pull_policy ? { imagePullPolicy: o.image_pull_policy } : {}),
            command: tool.command,
            args: tool.args,
            env: [
              ...Object.entries({ ...tool.env, DOCKER_CONFIG: tool.dockerConfigDir }).map(([n, value]) => ({ name: n, value })),
              ...tool.gitTokenEnv.map((n) => ({ name: n, valueFrom: { secretKeyRef: { name: this.gitSecretName, key: GIT_TOKEN_KEY } } })),
            ],
            resources: { requests: o.resources.requests, limits: o.resources.limits },
            securityContext: tool.securityContext,
            terminationMessagePath: TERMINATION_LOG,
            terminationMessagePolicy: 'File',
            volumeMounts: [
              { name: 'docker-config', mountPath: tool.dockerConfigDir, readOnly: true },
              ...tool.scratch.map((mountPath, i) => ({ name: `scratch-${i}`, mountPath })),
            ],
          },
        ],
        volumes: [
          { name: 'docker-config', secret: { secretName: this.secretName, items: [{ key: '.dockerconfigjson', path: 'config.json' }] } },
          ...tool.scratch.map((_, i) => ({ name: `scratch-${i}`, emptyDir: {} })),
        ],
      },
    };
  }

  /** Runs one service's build pod to its end, its log to request.log; cancelled by request.signal (the pod is deleted). */
  async runPod(service: ServiceBuild, tool: ToolPod): Promise<PodEnd> {
    const { api, request } = this;
    request.signal.throwIfAborted();
    const name = `${this.base}-${this.pods.size}`;
    const body = this.podManifest(name, service, tool);
    try {
      this.pods.add(name);
      await api.call(`creating pod ${name}`, () => api.core.createNamespacedPod({ namespace: api.namespace, body }));
      request.log(`${this.backend}: pod ${name} in namespace ${api.namespace} builds ${service.service}`, 'system');
      await podStarted(api, name, {
        container: BUILD_CONTAINER,
        pendingTimeoutMs: this.options.pending_timeout_ms,
        unschedulable: this.options.unschedulable,
        signal: request.signal,
      });
    } catch (err) {
      request.signal.throwIfAborted();
      if (err instanceof PodStartError) throw new BuildFailure('resource_error', `builder ${this.backend}: ${err.message}`);
      throw this.clusterError(err);
    }
    const proc = new PodProcess(
      {
        api,
        name,
        container: BUILD_CONTAINER,
        secretName: null,
        graceSeconds: this.options.kill_grace_seconds,
        logger: this.logger,
        who: `builder ${this.backend}`,
      },
      undefined,
    );
    const onAbort = () => void proc.kill();
    request.signal.addEventListener('abort', onAbort, { once: true });
    const lines: string[] = [];
    try {
      for await (const l of proc.lines()) {
        const line = l.line.replace(/\x1b\[[0-9;]*m/g, '');
        lines.push(line);
        if (lines.length > KEPT_LINES) lines.shift();
        request.log(line, l.stream === 'stderr' ? 'system' : 'stdout');
      }
      const exit = await proc.exited;
      request.signal.throwIfAborted();
      const term = terminatedOf(proc.lastSeen, BUILD_CONTAINER);
      return { exitCode: exit.exitCode, reason: term?.reason ?? null, message: (term?.message ?? '').trim(), lines };
    } finally {
      request.signal.removeEventListener('abort', onAbort);
    }
  }

  /** Deletes every pod and Secret it created; run on every path. */
  async cleanup(): Promise<void> {
    for (const name of this.pods)
      await this.api.remove('pod', name, 0).catch((err: Error) => this.logger.error({ err, pod: name }, `builder ${this.backend}: pod left behind`));
    for (const name of this.secretsCreated)
      await this.api.remove('secret', name).catch((err: Error) => this.logger.error({ err, secret: name }, `builder ${this.backend}: secret left behind`));
  }
}

/**
 * An in-cluster builder: every service's pod planned first (bad input refused before anything is
 * created), the Secrets created, one pod per service run in turn and its end read as the tool
 * reports it, everything deleted on every path. A tool says how its pod runs and what its end means.
 */
export abstract class KubeBuilder implements Builder {
  abstract readonly name: string;

  constructor(
    private readonly options: KubeBuilderOptions,
    private readonly api: KubeApi,
    private readonly logger: Logger,
    private readonly deadlineSeconds: number | null,
  ) {}

  /** The tool's pod for one service; `token`: the repository's git token, when it needs one. */
  protected abstract pod(request: BuildRequest, service: ServiceBuild, token: string | null): ToolPod;
  /** Logged when there is no registry to push to. */
  protected abstract readonly discardNote: string;
  /** The image a pod that ran to its end (not ended by the cluster) built, else the failure its output names. */
  protected abstract result(service: ServiceBuild, request: BuildRequest, end: PodEnd): BuiltImage;

  available() {
    return clusterAnswers(this.api, this.name);
  }

  async build(request: BuildRequest): Promise<BuiltImage[]> {
    const run = new KubeBuildRun(this.name, this.api, this.options, request, this.logger, this.deadlineSeconds);
    try {
      const token = gitToken(request, this.name);
      const planned = request.services.map((service) => ({ service, pod: this.pod(request, service, token) }));
      await run.createSecret(request.push);
      await run.createGitSecret(token);
      if (!request.push) request.log(`${this.name}: ${this.discardNote}`, 'system');
      const images: BuiltImage[] = [];
      for (const { service, pod } of planned) {
        const end = await run.runPod(service, pod);
        const cluster = podFailure(this.name, service, end);
        if (cluster) throw cluster;
        images.push(this.result(service, request, end));
      }
      return images;
    } finally {
      await run.cleanup();
    }
  }
}

/** Whether the cluster answers in the namespace (a get of a pod that does not exist: 404 is an answer). */
export async function clusterAnswers(api: KubeApi, backend: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  try {
    await api.readPod('svc-builder-availability-probe');
    return { ok: true };
  } catch (err) {
    return { ok: false, reason: `${backend}: the cluster does not answer in namespace ${api.namespace}: ${(err as Error).message}` };
  }
}
