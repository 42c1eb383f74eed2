/**
 * The objects the Kubernetes deployer keeps for an environment (its namespace, the image pull
 * Secret, each service's environment Secret, Deployments and Services), created, replaced and
 * listed through the API. The optional `say` of each call is a deploy's progress (its log).
 */
import type { V1Deployment, V1ObjectMeta } from '@kubernetes/client-node';
import type { DeployTarget } from '../../../core/ports/environments.ts';
import {
  DEPLOY_LABEL,
  PULL_SECRET,
  envSecretManifest,
  environmentSelector,
  labelsOf,
  namespaceManifest,
  objectName,
  pullSecretManifest,
  type serviceManifest,
  type Placement,
} from './manifests.ts';
import { apiError, type KubeApi, statusOf } from '../../kube/kube-api.ts';

type Say = (line: string) => void;
const quiet: Say = () => undefined;
/** How often the deployer reads an object it waits for. */
export const POLL_MS = 250;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class EnvironmentObjects {
  constructor(
    readonly api: KubeApi,
    /** Extra labels on every object (the deployer's `labels` option). */
    private readonly extraLabels: Record<string, string>,
    /** How long a namespace still terminating is waited for. */
    private readonly waitMs: number,
  ) {}

  labels(target: DeployTarget, service?: string) {
    return labelsOf(target, this.extraLabels, service);
  }

  /** The namespace, created (labelled as svc's) unless it exists; one still terminating is waited for. */
  async ensureNamespace(target: DeployTarget, p: Placement, say: Say = quiet): Promise<void> {
    const deadline = Date.now() + this.waitMs;
    for (let waited = false; ; waited = true) {
      const ns = await this.api.find(`reading namespace ${p.namespace}`, () => this.api.core.readNamespace({ name: p.namespace }));
      if (ns && ns.status?.phase !== 'Terminating') return say(`namespace ${p.namespace} exists`);
      if (!ns) {
        const labels = p.shared ? { [DEPLOY_LABEL.managedBy]: 'svc' } : this.labels(target);
        try {
          await this.api.core.createNamespace({ body: namespaceManifest(p.namespace, labels) });
          return say(`namespace ${p.namespace} created`);
        } catch (err) {
          if (statusOf(err) !== 409) throw apiError(`creating namespace ${p.namespace}`, err);
        }
      }
      if (Date.now() > deadline) throw new Error(`namespace ${p.namespace} is still terminating`);
      if (!waited) say(`namespace ${p.namespace} is terminating: waiting for it to go`);
      await sleep(POLL_MS);
    }
  }

  /** Own registry: the docker-config Secret the pods pull with; native or none: none (one left from before is removed). */
  async syncPullSecret(target: DeployTarget, p: Placement, say: Say = quiet): Promise<void> {
    const ns = p.namespace;
    const where = `secret ${PULL_SECRET} in namespace ${ns}`;
    const existing = await this.api.find(`reading ${where}`, () => this.api.core.readNamespacedSecret({ name: PULL_SECRET, namespace: ns }));
    if (!target.pullSecret) {
      if (existing) {
        await this.api.find(`deleting ${where}`, () => this.api.core.deleteNamespacedSecret({ name: PULL_SECRET, namespace: ns }));
        say(`image pull secret ${PULL_SECRET} removed (the registry needs none)`);
      }
      return;
    }
    const body = pullSecretManifest(this.labels(target), target.pullSecret);
    if (!existing) await this.api.request(`creating ${where}`, () => this.api.core.createNamespacedSecret({ namespace: ns, body }));
    else
      await this.api.request(`replacing ${where}`, () =>
        this.api.core.replaceNamespacedSecret({
          name: PULL_SECRET,
          namespace: ns,
          body: { ...body, metadata: { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion } },
        }),
      );
    say(`image pull secret ${PULL_SECRET} for ${target.pullSecret.host} ${existing ? 'replaced' : 'created'}`);
  }

  /** The service's environment Secret (named after its content, shared by its Deployment and one-off jobs); its name. */
  async ensureEnvSecret(target: DeployTarget, p: Placement, service: string, say: Say = quiet): Promise<string> {
    const values = target.services[service].environment;
    const secret = envSecretManifest(objectName(p, target, service), this.labels(target, service), values);
    const secretName = secret.metadata!.name!;
    try {
      await this.api.core.createNamespacedSecret({ namespace: p.namespace, body: secret });
      say(`${service}: secret ${secretName} created with its environment (${Object.keys(values).length} values)`);
    } catch (err) {
      if (statusOf(err) !== 409) throw apiError(`creating secret ${secretName} in namespace ${p.namespace}`, err); // 409: the same content exists
      say(`${service}: secret ${secretName} with its environment exists`);
    }
    return secretName;
  }

  async replaceDeployment(ns: string, current: V1Deployment, body: V1Deployment): Promise<V1Deployment> {
    const name = current.metadata!.name!;
    const metadata: V1ObjectMeta = { ...body.metadata, resourceVersion: current.metadata?.resourceVersion };
    return this.api.request(`replacing deployment ${name} in namespace ${ns}`, () =>
      this.api.apps.replaceNamespacedDeployment({ name, namespace: ns, body: { ...body, metadata } }),
    );
  }

  /** The Service, created or replaced; whether it was created. */
  async applyService(ns: string, body: ReturnType<typeof serviceManifest>): Promise<boolean> {
    const name = body.metadata!.name!;
    const where = `service ${name} in namespace ${ns}`;
    const existing = await this.api.find(`reading ${where}`, () => this.api.core.readNamespacedService({ name, namespace: ns }));
    if (!existing) {
      await this.api.request(`creating ${where}`, () => this.api.core.createNamespacedService({ namespace: ns, body }));
      return true;
    }
    // The cluster IP is immutable: a replacement keeps the one assigned.
    const spec = { ...body.spec, clusterIP: existing.spec?.clusterIP };
    await this.api.request(`replacing ${where}`, () =>
      this.api.core.replaceNamespacedService({
        name,
        namespace: ns,
        body: { ...body, spec, metadata: { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion } },
      }),
    );
    return false;
  }

  /** The environment Secrets no Deployment of the environment uses any more. */
  async removeUnusedSecrets(target: DeployTarget, p: Placement, say: Say = quiet): Promise<void> {
    const used = new Set(
      (await this.deployments(target, p)).flatMap((d) =>
        (d.spec?.template.spec?.containers ?? []).flatMap((c) => (c.envFrom ?? []).map((e) => e.secretRef?.name)),
      ),
    );
    const secrets = await this.api.request(`listing secrets in namespace ${p.namespace}`, () =>
      this.api.core.listNamespacedSecret({ namespace: p.namespace, labelSelector: `${environmentSelector(target)},${DEPLOY_LABEL.service}` }),
    );
    for (const s of secrets.items) {
      const name = s.metadata!.name!;
      if (used.has(name)) continue;
      await this.api.find(`deleting secret ${name}`, () => this.api.core.deleteNamespacedSecret({ name, namespace: p.namespace }));
      say(`secret ${name} removed (no deployment uses it)`);
    }
  }

  /** The environment's Deployments, by name. */
  async deployments(target: DeployTarget, p: Placement): Promise<V1Deployment[]> {
    const list = await this.api.find(`listing deployments in namespace ${p.namespace}`, () =>
      this.api.apps.listNamespacedDeployment({ namespace: p.namespace, labelSelector: environmentSelector(target) }),
    );
    return (list?.items ?? []).sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
  }
}
