/** The Secret and Pod one attempt runs as. */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { V1Pod, V1Secret, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { ProcessSpec } from '../../../core/ports/runtime.ts';
import { isInside } from '../files.ts';
import type { KubernetesOptions, ResourceClass } from './options.ts';
import type { UnixUser } from './user.ts';

export const CONTAINER = 'attempt';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'svc', 'app.kubernetes.io/component': 'attempt' };

const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/** A label value: at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric. */
function labelValue(value: string): string {
  return value
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
}

/** `svc-<attempt>-<random>`: derived from the attempt, unique even when an earlier pod of it is still terminating. */
export function runName(spec: ProcessSpec): string {
  const attempt = (spec.env.SVC_ATTEMPT_ID ?? 'run')
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/-+/g, '-')
    .slice(0, 40)
    .replace(/^-+|-+$/g, '');
  return `svc-${attempt || 'run'}-${randomBytes(3).toString('hex')}`;
}

export function labelsOf(spec: ProcessSpec, name: string, options: KubernetesOptions): Record<string, string> {
  const labels: Record<string, string> = { ...options.labels, ...MANAGED_BY, 'svc/run': name };
  if (spec.env.SVC_ATTEMPT_ID) labels['svc/attempt-id'] = labelValue(spec.env.SVC_ATTEMPT_ID);
  if (spec.env.SVC_JOB_ID) labels['svc/job-id'] = labelValue(spec.env.SVC_JOB_ID);
  return labels;
}

export function secretManifest(name: string, labels: Record<string, string>, env: Record<string, string>): V1Secret {
  const bad = Object.keys(env).filter((k) => !SECRET_KEY.test(k));
  if (bad.length) throw new Error(`runtime kubernetes: environment variable names ${bad.join(', ')} cannot be Secret keys (letters, digits, '-', '_', '.')`);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, labels },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')])),
  };
}

/**
 * The workspace volume, mounted at the attempt's own directory (its path on the worker), so paths in
 * arguments and files stay valid and the pod sees no other attempt's workspace.
 */
function workspaceMount(cwd: string, root: string, options: KubernetesOptions): { volume: V1Volume; mount: V1VolumeMount } {
  const dir = path.resolve(cwd);
  if (!isInside(root, dir)) {
    throw new Error(
      `runtime kubernetes: the working directory ${dir} is not inside the workspace volume's root ${root} (workspace.mount_path / worker.workspace_root)`,
    );
  }
  const sub = path.relative(root, dir);
  const { persistent_volume_claim: claim, host_path: hostPath } = options.workspace;
  if (claim) {
    return { volume: { name: 'workspace', persistentVolumeClaim: { claimName: claim } }, mount: { name: 'workspace', mountPath: dir, subPath: sub } };
  }
  return {
    volume: { name: 'workspace', hostPath: { path: path.posix.join(hostPath!, sub.split(path.sep).join('/')), type: 'Directory' } },
    mount: { name: 'workspace', mountPath: dir },
  };
}

export interface PodInput {
  name: string;
  secretName: string;
  labels: Record<string, string>;
  spec: ProcessSpec;
  resources: ResourceClass;
  workspaceRoot: string;
  /** runAsUser/runAsGroup (user.ts: podUser); never root. */
  user: UnixUser;
}

/**
 * The timeout the cluster enforces should this worker be gone. The worker's own timer is exact and
 * counts from Running; the cluster counts from scheduling, so image pulls and container creation
 * (bounded by pending_timeout_ms) and the kill's grace period come on top: the worker always acts first.
 */
export function backstopSeconds(timeoutMs: number, options: Pick<KubernetesOptions, 'pending_timeout_ms' | 'kill_grace_seconds'>): number {
  return Math.ceil((timeoutMs + options.pending_timeout_ms) / 1000) + options.kill_grace_seconds;
}

export function podManifest(input: PodInput, options: KubernetesOptions): V1Pod {
  const { spec } = input;
  const { volume, mount } = workspaceMount(spec.cwd, input.workspaceRoot, options);
  const runAs = { runAsUser: input.user.uid, runAsGroup: input.user.gid, runAsNonRoot: true };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: input.name, labels: input.labels },
    spec: {
      restartPolicy: 'Never',
      ...(spec.timeoutMs ? { activeDeadlineSeconds: backstopSeconds(spec.timeoutMs, options) } : {}),
      terminationGracePeriodSeconds: options.kill_grace_seconds,
      // The environment is exactly the Secret: no service links, no service account token unless asked.
      enableServiceLinks: false,
      automountServiceAccountToken: options.service_account !== null,
      ...(options.service_account ? { serviceAccountName: options.service_account } : {}),
      securityContext: { ...runAs, ...(options.fs_group !== null ? { fsGroup: options.fs_group } : {}) },
      ...(Object.keys(options.node_selector).length ? { nodeSelector: options.node_selector } : {}),
      ...(options.image_pull_secrets.length ? { imagePullSecrets: options.image_pull_secrets.map((name) => ({ name })) } : {}),
      containers: [
        {
          name: CONTAINER,
          image: options.image,
          ...(options.image_pull_policy ? { imagePullPolicy: options.image_pull_policy } : {}),
          command: [spec.command],
          args: spec.args,
          workingDir: path.resolve(spec.cwd),
          envFrom: [{ secretRef: { name: input.secretName } }],
          resources: { requests: input.resources.requests, limits: input.resources.limits },
          securityContext: { ...runAs, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          volumeMounts: [mount],
        },
      ],
      volumes: [volume],
    },
  };
}
