/**
 * Deployer on Kubernetes (docs/environments.md, "Kubernetes"): beside the kubernetes runtime because
 * it talks to the same API server through the same client (adapters/kube/kube-api.ts) and cluster options, as the
 * Docker deployer sits beside the Docker runtime. Per environment: a namespace (its own by default),
 * per service a Secret with its environment, a Deployment of its image by digest and a Service for
 * its ports, and the registry's image pull Secret when the manifest names an own registry. A deploy
 * waits for every rollout; one that fails puts the previous pod template back, so the previous
 * pods keep serving, and reports the failure. Health is the Deployments' rollout status. A one-off
 * job (the `job` action) is a Pod of the service's image and Secret, followed as the runtime's pods are.
 */
import { randomBytes } from 'node:crypto';
import type { V1Deployment } from '@kubernetes/client-node';
import Joi from 'joi';
import type { Logger } from 'pino';
import type {
  Deployer,
  DeployOptions,
  DeployOutcome,
  DeployTarget,
  OneOffExit,
  OneOffRun,
  ReleaseRef,
  ServiceHealth,
} from '../../../core/ports/environments.ts';
import { DeployFailed, releaseImages, releaseName } from '../../../core/ports/environments.ts';
import { defineAdapter } from '../../../core/sdk.ts';
import {
  DEPLOY_LABEL,
  SUSPENDED_REPLICAS,
  deploymentManifest,
  dnsLabel,
  environmentSelector,
  imageRef,
  labelsOf,
  objectName,
  oneOffLabelsOf,
  oneOffPodManifest,
  placementOf,
  rolloutOf,
  serviceManifest,
  type Placement,
} from './manifests.ts';
type Say = (line: string) => void;
import { connectionRules, connectionSchema, kubeConfigOf, type KubeConnection } from '../../kube/connection.ts';
import { KubeApi } from '../../kube/kube-api.ts';
import { PodProcess } from '../../kube/pod-process.ts';
import { podStarted } from '../../kube/pod-start.ts';
import { labelKey, labelValue } from '../../kube/labels.ts';
import { EnvironmentObjects, POLL_MS, sleep } from './objects.ts';

export type Options = KubeConnection & {
  namespace: string | null;
  replicas: number;
  image_pull_policy: 'Always' | 'IfNotPresent' | 'Never' | null;
  labels: Record<string, string>;
  progress_deadline_seconds: number;
  rollout_timeout_ms: number;
};

const optionsSchema = connectionRules(
  Joi.object({
    ...connectionSchema,
    namespace: Joi.string()
      .pattern(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .max(63)
      .allow(null)
      .default(null)
      .description('One namespace for every environment; null: each its own, svc-<project>-<environment> (an environment naming a namespace wins)'),
    replicas: Joi.number().integer().min(1).default(1).description('Pods per service'),
    image_pull_policy: Joi.string().valid('Always', 'IfNotPresent', 'Never').allow(null).default(null),
    labels: Joi.object().pattern(labelKey, labelValue).default({}).description('Extra labels on every object'),
    progress_deadline_seconds: Joi.number()
      .integer()
      .min(1)
      .default(600)
      .description("The Deployments' progressDeadlineSeconds: a rollout without progress this long fails"),
    rollout_timeout_ms: Joi.number().integer().min(100).default(900_000).description('How long a deploy waits for its rollouts at most'),
  }),
);

/** How long a stopped one-off job gets between SIGTERM and SIGKILL. */
const JOB_GRACE_SECONDS = 10;
const overall = (services: ServiceHealth[]): DeployOutcome['health'] =>
  services.length === 0
    ? 'degraded'
    : services.every((s) => s.health === 'healthy')
      ? 'healthy'
      : services.some((s) => s.health === 'degraded')
        ? 'degraded'
        : 'unknown';

/** What was there before a deploy touched a service, to put back when its rollout fails. */
interface Before {
  service: string;
  deployment: V1Deployment | null;
}

export class KubernetesDeployer implements Deployer {
  readonly name = 'kubernetes';
  private readonly objects: EnvironmentObjects;

  constructor(
    readonly api: KubeApi,
    private readonly options: Options,
    private readonly logger: Logger,
  ) {
    this.objects = new EnvironmentObjects(api, options.labels, options.rollout_timeout_ms);
  }

  private placement(target: DeployTarget): Placement {
    return placementOf(target, this.options.namespace);
  }

  /** Reports each step to `options.progress`: the namespace and pull secret, per service its objects and rollout, what is removed or put back. */
  async deploy(target: DeployTarget, release: ReleaseRef, options: DeployOptions = {}): Promise<DeployOutcome> {
    const say: Say = (line) => options.progress?.(line);
    const names = Object.keys(releaseImages(release)).sort();
    const unknown = names.filter((n) => !target.services[n]);
    if (unknown.length > 0) throw new DeployFailed(`the release names services the manifest does not define: ${unknown.join(', ')}`);
    const images: Record<string, string> = {};
    for (const n of names) {
      try {
        images[n] = imageRef(n, target.services[n].image, releaseImages(release)[n]);
      } catch (err) {
        throw new DeployFailed((err as Error).message, [{ service: n, health: 'degraded', detail: 'no image name' }]);
      }
    }
    const p = this.placement(target);
    const touched: Before[] = [];
    try {
      await this.objects.ensureNamespace(target, p, say);
      await this.objects.syncPullSecret(target, p, say);
      for (const service of names) touched.push(await this.apply(target, p, service, images[service], releaseName(release), say));
      const services = await Promise.all(names.map((s) => this.waitRollout(p, objectName(p, target, s), s, say)));
      const failed = services.filter((s) => s.health !== 'healthy');
      if (failed.length > 0) throw new DeployFailed(`not healthy: ${failed.map((s) => `${s.service} (${s.detail})`).join('; ')}`, services);
      await this.removeStale(target, p, names, say);
      return { health: 'healthy', services };
    } catch (err) {
      const failure = err instanceof DeployFailed ? err : new DeployFailed(`the cluster refused the deploy: ${(err as Error).message}`);
      say(`failed: ${failure.message}`);
      await this.restore(target, p, touched, say);
      throw failure;
    }
  }

  /** The service's Secret, Deployment and Service; returns the Deployment as it was before. */
  private async apply(target: DeployTarget, p: Placement, service: string, image: string, release: string, say: Say): Promise<Before> {
    const ns = p.namespace;
    const name = objectName(p, target, service);
    const labels = this.objects.labels(target, service);
    const selector = { [DEPLOY_LABEL.environment]: labels[DEPLOY_LABEL.environment], [DEPLOY_LABEL.service]: labels[DEPLOY_LABEL.service] };
    const secretName = await this.objects.ensureEnvSecret(target, p, service, say);
    const where = `deployment ${name} in namespace ${ns}`;
    const before = await this.api.find(`reading ${where}`, () => this.api.apps.readNamespacedDeployment({ name, namespace: ns }));
    const replicas = before?.spec?.replicas || this.options.replicas;
    const body = deploymentManifest(target, {
      name,
      service,
      image,
      secretName,
      labels,
      selector,
      replicas,
      release,
      pullSecret: target.pullSecret !== null,
      progressDeadlineSeconds: this.options.progress_deadline_seconds,
      imagePullPolicy: this.options.image_pull_policy,
    });
    if (!before) await this.api.request(`creating ${where}`, () => this.api.apps.createNamespacedDeployment({ namespace: ns, body }));
    else await this.objects.replaceDeployment(ns, before, body);
    say(`${service}: deployment ${name} ${before ? 'replaced' : 'created'}: image ${image}, ${replicas} replica(s)`);
    if (target.services[service].ports.length > 0) {
      const created = await this.objects.applyService(ns, serviceManifest(target, name, service, labels, selector));
      say(`${service}: service ${name} ${created ? 'created' : 'replaced'}`);
    }
    return { service, deployment: before };
  }

  /**
   * Waits until the rollout is complete, fails (ProgressDeadlineExceeded), or rollout_timeout_ms
   * passes. `say` hears the rollout's progress when it changes, and how it ended.
   */
  private async waitRollout(p: Placement, name: string, service: string, say: Say = () => undefined): Promise<ServiceHealth> {
    const ended = (h: ServiceHealth) => {
      say(`${service}: ${h.health === 'healthy' ? `ready (${h.detail})` : `not ready: ${h.detail}`}`);
      return h;
    };
    const deadline = Date.now() + this.options.rollout_timeout_ms;
    for (let last = ''; ; await sleep(POLL_MS)) {
      const d = await this.api.find(`reading deployment ${name} in namespace ${p.namespace}`, () =>
        this.api.apps.readNamespacedDeployment({ name, namespace: p.namespace }),
      );
      if (!d) return ended({ service, health: 'degraded', detail: 'the deployment is gone' });
      const r = rolloutOf(d);
      if (r.failed) return ended({ service, health: 'degraded', detail: `${r.detail}${await this.podProblems(p, d)}` });
      if (r.health) return ended({ service, health: r.health, detail: r.detail });
      if (Date.now() > deadline)
        return ended({
          service,
          health: 'degraded',
          detail: `not rolled out after ${this.options.rollout_timeout_ms} ms (${r.detail})${await this.podProblems(p, d)}`,
        });
      if (r.detail !== last) say(`${service}: rollout: ${r.detail}`);
      last = r.detail;
    }
  }

  /** Why the Deployment's pods are not ready, as their container statuses say (`; pod x: ImagePullBackOff`). */
  private async podProblems(p: Placement, d: V1Deployment): Promise<string> {
    const selector = Object.entries(d.spec?.selector.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const pods = await this.api
      .request(`listing pods in namespace ${p.namespace}`, () => this.api.core.listNamespacedPod({ namespace: p.namespace, labelSelector: selector }))
      .catch(() => null);
    const problems = (pods?.items ?? []).flatMap((pod) =>
      (pod.status?.containerStatuses ?? [])
        .filter((c) => !c.ready)
        .map((c) => `pod ${pod.metadata?.name}: ${c.state?.waiting?.reason ?? (c.state?.terminated ? `exited ${c.state.terminated.exitCode}` : 'not ready')}`),
    );
    return problems.length ? `; ${problems.slice(0, 3).join('; ')}` : '';
  }

  /** After a failed deploy: each Deployment back to its previous spec (or removed when it is new), and the new Secrets gone. */
  private async restore(target: DeployTarget, p: Placement, touched: Before[], say: Say): Promise<void> {
    const ns = p.namespace;
    for (const { service, deployment } of touched) {
      const name = objectName(p, target, service);
      try {
        const now = await this.api.find(`reading deployment ${name}`, () => this.api.apps.readNamespacedDeployment({ name, namespace: ns }));
        if (!deployment) {
          if (now) await this.api.find(`deleting deployment ${name}`, () => this.api.apps.deleteNamespacedDeployment({ name, namespace: ns }));
          await this.api.find(`deleting service ${name}`, () => this.api.core.deleteNamespacedService({ name, namespace: ns }));
          say(`${service}: the new deployment ${name} was removed`);
        } else if (now) {
          await this.objects.replaceDeployment(ns, now, { apiVersion: 'apps/v1', kind: 'Deployment', metadata: deployment.metadata, spec: deployment.spec });
          say(`${service}: deployment ${name} put back as it was: its previous pods keep serving`);
        }
      } catch (err) {
        // The deploy already failed: what could not be put back shows in health.
        say(`${service}: deployment ${name} could not be put back: ${(err as Error).message}`);
      }
    }
    await this.objects.removeUnusedSecrets(target, p, say).catch(() => undefined);
  }

  /** After a deploy: the Deployments and Services of services the release no longer has, and Secrets no Deployment uses. */
  private async removeStale(target: DeployTarget, p: Placement, services: string[], say: Say): Promise<void> {
    const keep = new Set(services.map((s) => objectName(p, target, s)));
    for (const d of await this.objects.deployments(target, p)) {
      const name = d.metadata!.name!;
      if (keep.has(name)) continue;
      await this.api.find(`deleting deployment ${name}`, () => this.api.apps.deleteNamespacedDeployment({ name, namespace: p.namespace }));
      await this.api.find(`deleting service ${name}`, () => this.api.core.deleteNamespacedService({ name, namespace: p.namespace }));
      say(`deployment and service ${name} removed (the release has no such service)`);
    }
    await this.objects.removeUnusedSecrets(target, p, say);
  }

  private serviceOf(d: V1Deployment): string {
    return d.metadata?.labels?.[DEPLOY_LABEL.service] ?? d.metadata!.name!;
  }

  async health(target: DeployTarget): Promise<DeployOutcome> {
    const p = this.placement(target);
    const services: ServiceHealth[] = (await this.objects.deployments(target, p)).map((d) => {
      const r = rolloutOf(d);
      if (r.health) return { service: this.serviceOf(d), health: r.health, detail: r.detail };
      const serving = (d.status?.availableReplicas ?? 0) >= (d.spec?.replicas ?? 1);
      return { service: this.serviceOf(d), health: r.detail === 'rollout not observed yet' ? 'unknown' : serving ? 'healthy' : 'degraded', detail: r.detail };
    });
    if (services.length === 0)
      return { health: 'degraded', services: [{ service: '*', health: 'degraded', detail: `no deployments in namespace ${p.namespace}` }] };
    return { health: overall(services), services };
  }

  /** Scales every Deployment to zero, noting its replicas for resume. */
  async suspend(target: DeployTarget): Promise<void> {
    const p = this.placement(target);
    for (const d of await this.objects.deployments(target, p)) {
      const replicas = d.spec?.replicas ?? 1;
      if (replicas === 0) continue;
      const annotations = { ...d.metadata?.annotations, [SUSPENDED_REPLICAS]: String(replicas) };
      await this.objects.replaceDeployment(p.namespace, d, { ...d, metadata: { ...d.metadata, annotations }, spec: { ...d.spec!, replicas: 0 } });
    }
  }

  /** Restores the replicas suspend noted and waits for the pods to be ready again. */
  async resume(target: DeployTarget): Promise<DeployOutcome> {
    const p = this.placement(target);
    const resumed: V1Deployment[] = [];
    for (const d of await this.objects.deployments(target, p)) {
      const { [SUSPENDED_REPLICAS]: noted, ...annotations } = d.metadata?.annotations ?? {};
      if ((d.spec?.replicas ?? 1) === 0) {
        const replicas = Number(noted) || this.options.replicas;
        await this.objects.replaceDeployment(p.namespace, d, { ...d, metadata: { ...d.metadata, annotations }, spec: { ...d.spec!, replicas } });
      }
      resumed.push(d);
    }
    const services = await Promise.all(resumed.map((d) => this.waitRollout(p, d.metadata!.name!, this.serviceOf(d))));
    return { health: overall(services), services };
  }

  /** Deletes what carries the environment's label, and the namespace when svc created it for the environment. */
  async remove(target: DeployTarget): Promise<void> {
    const p = this.placement(target);
    const ns = p.namespace;
    const namespace = await this.api.find(`reading namespace ${ns}`, () => this.api.core.readNamespace({ name: ns }));
    if (!namespace) return;
    const labelSelector = environmentSelector(target);
    for (const d of await this.objects.deployments(target, p))
      await this.api.find(`deleting deployment ${d.metadata!.name}`, () =>
        this.api.apps.deleteNamespacedDeployment({ name: d.metadata!.name!, namespace: ns, propagationPolicy: 'Foreground' }),
      );
    const services = await this.api.request(`listing services in namespace ${ns}`, () => this.api.core.listNamespacedService({ namespace: ns, labelSelector }));
    for (const s of services.items)
      await this.api.find(`deleting service ${s.metadata!.name}`, () => this.api.core.deleteNamespacedService({ name: s.metadata!.name!, namespace: ns }));
    const pods = await this.api.request(`listing pods in namespace ${ns}`, () => this.api.core.listNamespacedPod({ namespace: ns, labelSelector }));
    for (const pod of pods.items.filter((x) => x.metadata?.labels?.[DEPLOY_LABEL.oneOff]))
      await this.api.find(`deleting pod ${pod.metadata!.name}`, () =>
        this.api.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: ns, gracePeriodSeconds: 0 }),
      );
    const secrets = await this.api.request(`listing secrets in namespace ${ns}`, () => this.api.core.listNamespacedSecret({ namespace: ns, labelSelector }));
    for (const s of secrets.items)
      await this.api.find(`deleting secret ${s.metadata!.name}`, () => this.api.core.deleteNamespacedSecret({ name: s.metadata!.name!, namespace: ns }));
    if (namespace.metadata?.labels?.[DEPLOY_LABEL.environment] === labelsOf(target, {})[DEPLOY_LABEL.environment])
      await this.api.find(`deleting namespace ${ns}`, () => this.api.core.deleteNamespace({ name: ns }));
  }

  /**
   * The service's image run once as a Pod (restartPolicy Never) with its Secret, pull secret and
   * command, its log line by line to `run.log`, its exit code from the container's terminated state;
   * the Pod is deleted afterwards, on stop (`run.signal`) and at `run.timeoutMs`.
   */
  async runOnce(target: DeployTarget, release: ReleaseRef, run: OneOffRun): Promise<OneOffExit> {
    const def = target.services[run.service];
    const digest = releaseImages(release)[run.service];
    if (!def || !digest) throw new DeployFailed(`the release has no image of service ${run.service}`);
    let image: string;
    try {
      image = imageRef(run.service, def.image, digest);
    } catch (err) {
      throw new DeployFailed((err as Error).message);
    }
    const began = Date.now();
    const p = this.placement(target);
    const api = new KubeApi(this.api.kc, p.namespace);
    const name = dnsLabel(`${objectName(p, target, run.service)}-job-${randomBytes(3).toString('hex')}`);
    const container = dnsLabel(run.service);
    try {
      await this.objects.ensureNamespace(target, p);
      await this.objects.syncPullSecret(target, p);
      const secretName = await this.objects.ensureEnvSecret(target, p, run.service);
      const body = oneOffPodManifest({
        name,
        service: run.service,
        image,
        secretName,
        labels: oneOffLabelsOf(target, this.options.labels, run.service),
        command: run.command ?? def.command,
        pullSecret: target.pullSecret !== null,
        imagePullPolicy: this.options.image_pull_policy,
      });
      await api.call(`creating pod ${name}`, () => api.core.createNamespacedPod({ namespace: p.namespace, body }));
      await podStarted(api, name, { container, pendingTimeoutMs: this.options.progress_deadline_seconds * 1000, unschedulable: 'fail', signal: run.signal });
    } catch (err) {
      await api.remove('pod', name, 0).catch((e: Error) => this.logger.error({ err: e, pod: name }, 'deployer kubernetes: job pod left behind'));
      if (run.signal?.aborted) return { exit_code: null, timed_out: false };
      throw new DeployFailed(`the job of ${run.service} did not start: ${(err as Error).message}`);
    }
    const left = run.timeoutMs === undefined ? undefined : Math.max(1, run.timeoutMs - (Date.now() - began));
    const proc = new PodProcess(
      { api, name, container, secretName: null, graceSeconds: JOB_GRACE_SECONDS, logger: this.logger, who: 'deployer kubernetes' },
      left,
    );
    const onAbort = () => void proc.kill();
    run.signal?.addEventListener('abort', onAbort, { once: true });
    if (run.signal?.aborted) onAbort();
    try {
      for await (const { line } of proc.lines()) await run.log(line);
      const exit = await proc.exited;
      return { exit_code: exit.exitCode, timed_out: exit.timedOut };
    } catch (err) {
      void proc.kill(); // deletes the pod at once; its end is not waited for, as nobody reads its log any more
      throw err;
    } finally {
      run.signal?.removeEventListener('abort', onAbort);
    }
  }
}

export default defineAdapter<Deployer, Options>({
  kind: 'deployer',
  name: 'kubernetes',
  options: optionsSchema,
  create: (options, deps) =>
    new KubernetesDeployer(new KubeApi(kubeConfigOf(options, 'adapters.deployer.options'), options.namespace ?? 'default'), options, deps.logger),
});
