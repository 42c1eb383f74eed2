/**
 * Runtime port on Kubernetes (docs/runtime-kubernetes.md): one Pod per attempt, its environment in
 * a per-attempt Secret, the worker's workspace shared through a volume, the log followed, and the
 * Pod and Secret deleted at the end whatever happened.
 */
import type { Logger } from 'pino';
import type { ProcessSpec, RunningProcess, Runtime } from '../../../core/ports/runtime.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import { writeFiles } from '../files.ts';
import { KubeApi } from '../../kube/kube-api.ts';
import { PodProcess } from '../../kube/pod-process.ts';
import { podStarted } from '../../kube/pod-start.ts';
import { kubeConfigOf } from '../../kube/connection.ts';
import { CONTAINER, labelsOf, podManifest, runName, secretManifest } from './manifests.ts';
import { DEFAULT_RESOURCE_CLASSES, optionsSchema, workspaceRoot, type KubernetesOptions, type ResourceClass } from './options.ts';
import { filesOwner, podUser, serverUser, workspaceNotHandedOver } from './user.ts';

class KubernetesRuntime implements Runtime {
  readonly name = 'kubernetes';
  /** Commands (a harness's CLI) are the pod image's: the worker does not look for them on this machine. */
  get commandsIn(): string {
    return `the image ${this.options.image}`;
  }

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
      await podStarted(api, name, { container: CONTAINER, pendingTimeoutMs: this.options.pending_timeout_ms, unschedulable: this.options.unschedulable });
    } catch (err) {
      await api.remove('pod', name, 0).catch((e: Error) => this.logger.error({ err: e, pod: name }, 'runtime kubernetes: pod left behind'));
      await api.remove('secret', secretName).catch((e: Error) => this.logger.error({ err: e, secret: secretName }, 'runtime kubernetes: secret left behind'));
      throw err;
    }
    return new PodProcess(
      { api, name, container: CONTAINER, secretName, graceSeconds: this.options.kill_grace_seconds, logger: this.logger, who: 'runtime kubernetes' },
      spec.timeoutMs,
    );
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
    const api = new KubeApi(kubeConfigOf(options, 'adapters.runtime.options'), options.namespace);
    return new KubernetesRuntime(options, api, classes, workspaceRoot(options, deps.config), deps.logger);
  },
});
