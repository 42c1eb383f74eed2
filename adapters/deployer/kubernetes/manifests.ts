/** The Kubernetes objects one environment's release runs as, and what a Deployment's rollout status says about health. */
import { createHash } from 'node:crypto';
import type { V1Deployment, V1Namespace, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import type { DeployTarget, EnvironmentHealth, PullSecret } from '../../../core/ports/environments.ts';

/** Labels on everything svc creates for an environment; deletion selects by them, so nothing else is ever touched. */
export const DEPLOY_LABEL = {
  managedBy: 'app.kubernetes.io/managed-by',
  component: 'app.kubernetes.io/component',
  environment: 'svc/environment-id',
  project: 'svc/project-id',
  service: 'svc/service',
  /** On a one-off job pod (the `job` action), instead of `service`: no Deployment or Service selects it. */
  oneOff: 'svc/one-off',
} as const;
/** Annotation of a suspended Deployment: the replicas resume restores. */
export const SUSPENDED_REPLICAS = 'svc/suspended-replicas';
export const PULL_SECRET = 'svc-registry-pull';

const DNS_LABEL_MAX = 63;

/** A DNS label (lowercase alphanumerics and '-', at most 63) from any text. */
export function dnsLabel(text: string, max = DNS_LABEL_MAX): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .slice(0, max)
    .replace(/^-+|-+$/g, '');
}

const labelValue = (v: string) =>
  v
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');

export const hashOf = (value: unknown, length = 10): string => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, length);

/** Where an environment runs: its own namespace, the one its definition names, or the configured shared one. */
export interface Placement {
  namespace: string;
  /** true when several environments share the namespace: object names then carry the environment's name. */
  shared: boolean;
}

export function placementOf(target: DeployTarget, configured: string | null): Placement {
  if (target.environment.namespace) return { namespace: target.environment.namespace, shared: false };
  if (configured) return { namespace: configured, shared: true };
  return { namespace: dnsLabel(`svc-${target.project.slug}-${target.environment.name}`), shared: false };
}

export const objectName = (p: Placement, target: DeployTarget, service: string): string =>
  dnsLabel(p.shared ? `${target.environment.name}-${service}` : service, 52); // room for the secret's suffix

export function environmentSelector(target: DeployTarget): string {
  return `${DEPLOY_LABEL.environment}=${labelValue(target.environment.id)}`;
}

export function labelsOf(target: DeployTarget, extra: Record<string, string>, service?: string): Record<string, string> {
  return {
    ...extra,
    [DEPLOY_LABEL.managedBy]: 'svc',
    [DEPLOY_LABEL.component]: 'environment',
    [DEPLOY_LABEL.environment]: labelValue(target.environment.id),
    [DEPLOY_LABEL.project]: labelValue(target.project.id),
    ...(service ? { [DEPLOY_LABEL.service]: labelValue(service) } : {}),
  };
}

/** A one-off job pod's labels: the environment's, and the one-off label naming the service (never the service label a Deployment selects by). */
export function oneOffLabelsOf(target: DeployTarget, extra: Record<string, string>, service: string): Record<string, string> {
  return { ...labelsOf(target, extra), [DEPLOY_LABEL.oneOff]: labelValue(service) };
}

export function namespaceManifest(name: string, labels: Record<string, string>): V1Namespace {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/** The service's environment as a Secret named after its content: a new release's pods get a new one, the running pods keep theirs. */
export function envSecretManifest(name: string, labels: Record<string, string>, env: Record<string, string>): V1Secret {
  const bad = Object.keys(env).filter((k) => !SECRET_KEY.test(k));
  if (bad.length) throw new Error(`environment variable names ${bad.join(', ')} cannot be Secret keys (letters, digits, '-', '_', '.')`);
  const data = Object.fromEntries(
    Object.entries(env)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
  );
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: `${name}-env-${hashOf(data)}`, labels }, type: 'Opaque', data };
}

/** The own registry's credential as a `.dockerconfigjson` Secret (the image pull secret of every pod). */
export function pullSecretManifest(labels: Record<string, string>, secret: PullSecret): V1Secret {
  const auth = Buffer.from(`${secret.username}:${secret.password}`).toString('base64');
  const config = { auths: { [secret.host]: { username: secret.username, password: secret.password, auth } } };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: PULL_SECRET, labels },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(JSON.stringify(config)).toString('base64') },
  };
}

/** The image by digest: `image@sha256:…`; a reference that is no digest (an `image_tag` deploy) as given. */
export function imageRef(service: string, image: string | null, digest: string): string {
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return digest;
  if (!image) throw new Error(`service ${service}: the manifest names no image, and a cluster pulls by name@digest`);
  return `${image}@${digest}`;
}

export interface DeploymentInput {
  name: string;
  service: string;
  image: string;
  secretName: string;
  labels: Record<string, string>;
  selector: Record<string, string>;
  replicas: number;
  release: string;
  pullSecret: boolean;
  progressDeadlineSeconds: number;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never' | null;
}

/**
 * One service as a Deployment: rolling update with one pod of surge and none unavailable, so the
 * previous pods serve until the new ones are ready; readiness from the manifest's health check.
 */
export function deploymentManifest(target: DeployTarget, d: DeploymentInput): V1Deployment {
  const def = target.services[d.service];
  const hc = def.healthcheck;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: d.name, labels: d.labels, annotations: { 'svc/release': d.release } },
    spec: {
      replicas: d.replicas,
      selector: { matchLabels: d.selector },
      progressDeadlineSeconds: d.progressDeadlineSeconds,
      revisionHistoryLimit: 3,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: { labels: d.labels, annotations: { 'svc/release': d.release } },
        spec: {
          ...(d.pullSecret ? { imagePullSecrets: [{ name: PULL_SECRET }] } : {}),
          automountServiceAccountToken: false,
          containers: [
            {
              name: dnsLabel(d.service),
              image: d.image,
              ...(d.imagePullPolicy ? { imagePullPolicy: d.imagePullPolicy } : {}),
              // The manifest's command is Docker's Cmd: the image's entrypoint (if any) stays.
              ...(def.command ? { args: def.command } : {}),
              envFrom: [{ secretRef: { name: d.secretName } }],
              ports: def.ports.map((p) => ({ containerPort: p.container, protocol: 'TCP' })),
              ...(hc
                ? {
                    readinessProbe: {
                      exec: { command: ['/bin/sh', '-c', hc.command] },
                      periodSeconds: hc.interval_seconds,
                      timeoutSeconds: hc.timeout_seconds,
                      failureThreshold: hc.retries,
                      successThreshold: 1,
                    },
                  }
                : {}),
            },
          ],
        },
      },
    },
  };
}

export interface OneOffInput {
  name: string;
  service: string;
  image: string;
  secretName: string;
  /** The environment's labels (without the service's) plus the one-off label. */
  labels: Record<string, string>;
  command: string[] | null;
  pullSecret: boolean;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never' | null;
}

/** One run of a service's image (the `job` action): its container as the Deployment's, without ports or probe, never restarted. */
export function oneOffPodManifest(j: OneOffInput): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: j.name, labels: j.labels },
    spec: {
      restartPolicy: 'Never',
      ...(j.pullSecret ? { imagePullSecrets: [{ name: PULL_SECRET }] } : {}),
      automountServiceAccountToken: false,
      containers: [
        {
          name: dnsLabel(j.service),
          image: j.image,
          ...(j.imagePullPolicy ? { imagePullPolicy: j.imagePullPolicy } : {}),
          ...(j.command ? { args: j.command } : {}),
          envFrom: [{ secretRef: { name: j.secretName } }],
        },
      ],
    },
  };
}

/** The service's ports inside the cluster (the manifest's host port, else the container's). */
export function serviceManifest(
  target: DeployTarget,
  name: string,
  service: string,
  labels: Record<string, string>,
  selector: Record<string, string>,
): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, labels },
    spec: {
      selector,
      ports: target.services[service].ports.map((p) => ({
        name: `port-${p.container}`,
        port: p.host ?? p.container,
        targetPort: p.container,
        protocol: 'TCP',
      })),
    },
  };
}

export interface Rollout {
  /** null: still rolling out. */
  health: EnvironmentHealth | null;
  detail: string;
  failed: boolean;
}

/**
 * What a Deployment's status says: complete (every replica updated and available, the old ones
 * gone) is healthy; ProgressDeadlineExceeded is a failed rollout; a status the controller has not
 * caught up with yet says nothing.
 */
export function rolloutOf(d: V1Deployment): Rollout {
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  if (want === 0) return { health: 'degraded', detail: 'scaled to zero', failed: false };
  if ((s.observedGeneration ?? 0) < (d.metadata?.generation ?? 1)) return { health: null, detail: 'rollout not observed yet', failed: false };
  const progressing = s.conditions?.find((c) => c.type === 'Progressing');
  const counts = `${s.updatedReplicas ?? 0}/${want} updated, ${s.availableReplicas ?? 0}/${want} available`;
  if (progressing?.reason === 'ProgressDeadlineExceeded')
    return { health: 'degraded', detail: `rollout failed: ${progressing.message ?? 'progress deadline exceeded'} (${counts})`, failed: true };
  const done = (s.updatedReplicas ?? 0) === want && (s.replicas ?? 0) === want && (s.availableReplicas ?? 0) === want;
  if (done) return { health: 'healthy', detail: `rollout complete: ${want}/${want} available`, failed: false };
  return { health: null, detail: `rolling out: ${counts}`, failed: false };
}
