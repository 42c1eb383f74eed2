import path from 'node:path';
import Joi from 'joi';
import type { Config } from '../../../core/config/schema.ts';
import { connectionRules, connectionSchema, type KubeConnection } from '../../kube/connection.ts';
import { labelKey, labelValue } from '../../kube/labels.ts';

export interface ResourceClass {
  requests: Record<string, string>;
  limits: Record<string, string>;
}

export type KubernetesOptions = KubeConnection & {
  namespace: string;
  image: string;
  image_pull_policy: 'Always' | 'IfNotPresent' | 'Never' | null;
  image_pull_secrets: string[];
  insecure_skip_tls_verify: boolean;
  service_account: string | null;
  fs_group: number | null;
  resource_classes: Record<string, ResourceClass>;
  default_resource_class: string;
  workspace: { persistent_volume_claim?: string; host_path?: string; mount_path: string | null };
  node_selector: Record<string, string>;
  labels: Record<string, string>;
  kill_grace_seconds: number;
  pending_timeout_ms: number;
  unschedulable: 'fail' | 'wait';
};

/** Used unless resource_classes names the class itself. */
export const DEFAULT_RESOURCE_CLASSES: Record<string, ResourceClass> = {
  'job.c1': { requests: { cpu: '1', memory: '2Gi' }, limits: { cpu: '2', memory: '4Gi' } },
  'job.c2': { requests: { cpu: '2', memory: '4Gi' }, limits: { cpu: '4', memory: '8Gi' } },
};

const quantity = Joi.alternatives(Joi.string().pattern(/^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/), Joi.number().min(0));
const resources = Joi.object().pattern(Joi.string().pattern(/^[a-z0-9./-]+$/), quantity);
export const optionsSchema = connectionRules(
  Joi.object({
    namespace: Joi.string()
      .pattern(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .max(63)
      .default('default')
      .description('Namespace the attempt pods and secrets are created in.'),
    image: Joi.string().required().description('Container image every attempt runs in (it must hold the harness CLIs and git, and set PATH and HOME).'),
    image_pull_policy: Joi.string().valid('Always', 'IfNotPresent', 'Never').allow(null).default(null),
    image_pull_secrets: Joi.array().items(Joi.string()).default([]),
    ...connectionSchema,
    service_account: Joi.string().allow(null).default(null).description('Service account of the attempt pods; null mounts no service account token at all.'),
    fs_group: Joi.number().integer().min(0).allow(null).default(null).description('Pod fsGroup, for volumes that support ownership management.'),
    resource_classes: Joi.object()
      .pattern(Joi.string(), Joi.object({ requests: resources.default({}), limits: resources.default({}) }))
      .default({})
      .description('Resource class (job hints.resource_class) → requests/limits; job.c1 and job.c2 have defaults.'),
    default_resource_class: Joi.string().default('job.c1').description('Class of jobs that name none.'),
    workspace: Joi.object({
      persistent_volume_claim: Joi.string().description("ReadWriteMany claim holding the worker's workspace root."),
      host_path: Joi.string().pattern(/^\//).description("Directory on the node holding the worker's workspace root (single-node clusters)."),
      mount_path: Joi.string()
        .pattern(/^\//)
        .allow(null)
        .default(null)
        .description('Where the worker sees the volume: its workspace root (default: worker.workspace_root).'),
    })
      .xor('persistent_volume_claim', 'host_path')
      .required()
      .description('How a pod sees the workspace the worker prepared on its own filesystem.'),
    node_selector: Joi.object().pattern(labelKey, labelValue).default({}),
    labels: Joi.object().pattern(labelKey, labelValue).default({}).description('Extra labels on every pod and secret.'),
    kill_grace_seconds: Joi.number().integer().min(0).default(5).description('Grace period of the pod deletion that kills an attempt.'),
    pending_timeout_ms: Joi.number()
      .integer()
      .min(1)
      .default(300_000)
      .description('How long a pod may stay Pending (scheduling, image pull) before start fails.'),
    unschedulable: Joi.string()
      .valid('fail', 'wait')
      .default('fail')
      .description('fail: an unschedulable pod fails the start at once; wait: keep waiting (cluster autoscaler) up to pending_timeout_ms.'),
  }),
);

/** The worker's workspace root, as the worker plugin computes it. */
export function workspaceRoot(options: KubernetesOptions, config: Config | undefined): string {
  if (options.workspace.mount_path) return path.resolve(options.workspace.mount_path);
  const w = config?.worker;
  if (!config || !w) throw new Error('adapters.runtime.options.workspace.mount_path: required when the server config gives no worker.workspace_root');
  return path.resolve(w.workspace_root || path.join(config.data_dir, 'workspaces'));
}
