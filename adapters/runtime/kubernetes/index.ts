/**
 * Runtime port on Kubernetes (docs/runtime-kubernetes.md): one Pod per attempt, its environment in
 * a per-attempt Secret, the worker's workspace shared through a volume, the log followed, and the
 * Pod and Secret deleted at the end whatever happened.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ProcessSpec, RunningProcess, Runtime } from '../../../core/ports/runtime.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { writeFiles } from '../files.ts';
import { KubeApi } from './kube-api.ts';
import { CONTAINER, labelsOf, podManifest, runName, secretManifest } from './manifests.ts';
import { DEFAULT_RESOURCE_CLASSES, kubeConfigOf, optionsSchema, workspaceRoot, type KubernetesOptions, type ResourceClass } from './options.ts';
import { PodProcess } from './pod-process.ts';
import { filesOwner, podUser, serverUser, workspaceNotHandedOver } from './user.ts';

/** Waiting reasons that will not resolve by waiting. */
const CANNOT_START = ['ImagePullBackOff', 'ErrImageNeverPull', 'InvalidImageName', 'CreateContainerConfigError', 'CreateContainerError'];

class KubernetesRuntime implements Runtime {
  readonly name = 'kubernetes';

  constructor(
    private readonly options: KubernetesOptions,
    private readonly api: KubeApi,
    private readonly classes: Record<string, ResourceClass>,
    private readonly root: string,
    private readonly logger: Logger,
  ) {}

  private resourcesOf(spec: ProcessSpec): ResourceClass {
    const name = spec.resourceClass ?? this.options.default_resource_class;
    const found = this.classes[name];
    if (!found)
      throw new Error(`resource class '${name}' is not configured (adapters.runtime.options.resource_classes has ${Object.keys(this.classes).join(', ')})`);
    return found;
  }

  private warnedOwner = false;

  async start(spec: ProcessSpec): Promise<RunningProcess> {
    const server = serverUser();
    if (workspaceNotHandedOver(spec, server) && !this.warnedOwner) {
      this.warnedOwner = true;
      this.logger.warn(
        { serverUid: server?.uid, podUid: spec.user?.uid },
        "runtime kubernetes: the server is not root, so workspaces stay its own; pods running as worker.run_as_uid can write them only if the permissions allow it (set worker.run_as_uid to the server's uid, or to null to run pods as the server's own user)",
      );
    }
    const name = runName(spec);
    const secretName = `${name}-env`;
    const labels = labelsOf(spec, name, this.options);
    // Everything that can be refused locally is, before anything is created in the cluster.
    const pod = podManifest(
      { name, secretName, labels, spec, resources: this.resourcesOf(spec), workspaceRoot: this.root, user: podUser(spec, server) },
      this.options,
    );
    const secret = secretManifest(secretName, labels, spec.env);
    if (spec.files) await writeFiles(spec.cwd, spec.files, filesOwner(spec, server));
    const { api } = this;
    await api.call(`creating secret ${secretName}`, () => api.core.createNamespacedSecret({ namespace: api.namespace, body: secret }));
    try {
      await api.call(`creating pod ${name}`, () => api.core.createNamespacedPod({ namespace: api.namespace, body: pod }));
      await this.started(name);
    } catch (err) {
      await api.remove('pod', name, 0).catch((e: Error) => this.logger.error({ err: e, pod: name }, 'runtime kubernetes: pod left behind'));
      await api.remove('secret', secretName).catch((e: Error) => this.logger.error({ err: e, secret: secretName }, 'runtime kubernetes: secret left behind'));
      throw err;
    }
    return new PodProcess({ api, name, secretName, graceSeconds: this.options.kill_grace_seconds, logger: this.logger }, spec.timeoutMs);
  }

  /** Resolves once the container runs (or already ended); fails on what will not start. */
  private async started(name: string): Promise<void> {
    let last = 'no status yet';
    const waitMs = this.options.pending_timeout_ms;
    const decide = (pod: V1Pod | null, gone: boolean): Error | true | undefined => {
      if (gone) return new Error(`pod ${name} was deleted before it started`);
      const phase = pod?.status?.phase;
      if (phase === 'Running' || phase === 'Succeeded' || phase === 'Failed') return true;
      const waiting = pod?.status?.containerStatuses?.find((c) => c.name === CONTAINER)?.state?.waiting;
      if (waiting?.reason) last = `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
      if (waiting?.reason && CANNOT_START.includes(waiting.reason)) return new Error(`pod ${name} cannot start: ${last}`);
      const scheduled = pod?.status?.conditions?.find((c) => c.type === 'PodScheduled');
      if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
        last = `Unschedulable: ${scheduled.message ?? ''}`;
        if (this.options.unschedulable === 'fail') return new Error(`pod ${name} is unschedulable: ${scheduled.message ?? 'no reason given'}`);
      }
      return undefined;
    };
    const signal = AbortSignal.timeout(waitMs);
    let outcome: Error | true;
    try {
      outcome = await this.api.watchPod(name, decide, signal);
    } catch (err) {
      if (!signal.aborted) throw err;
      outcome = new Error(`pod ${name} still Pending after ${Math.round(waitMs / 1000)} s (pending_timeout_ms); last: ${last}`);
    }
    if (outcome !== true) throw outcome;
  }
}

export default defineAdapter<Runtime, KubernetesOptions>({
  kind: 'runtime',
  name: 'kubernetes',
  options: optionsSchema,
  create: (options, deps) => {
    const classes = { ...DEFAULT_RESOURCE_CLASSES, ...options.resource_classes };
    if (!classes[options.default_resource_class]) {
      throw new Error(
        `adapters.runtime.options.default_resource_class: '${options.default_resource_class}' is not a resource class (${Object.keys(classes).join(', ')})`,
      );
    }
    const api = new KubeApi(kubeConfigOf(options), options.namespace);
    return new KubernetesRuntime(options, api, classes, workspaceRoot(options, deps.config), deps.logger);
  },
});
