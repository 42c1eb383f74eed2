/** How an adapter reaches a Kubernetes API server: the option keys every such adapter shares, and the client config they make. */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import Joi from 'joi';

export type KubeConnection = {
  kubeconfig?: string;
  context?: string;
  in_cluster?: true;
  server?: string;
  token?: string;
  ca?: string;
  insecure_skip_tls_verify?: boolean;
};

export const CONNECTION_KEYS = ['kubeconfig', 'context', 'in_cluster', 'server', 'token', 'ca', 'insecure_skip_tls_verify'] as const;

/** The connection keys of an adapter's options schema; `.oxor/.with` rules go on the whole object (connectionRules). */
export const connectionSchema = {
  kubeconfig: Joi.string().description('Path of a kubeconfig file; without any of kubeconfig, in_cluster or server, KUBECONFIG or ~/.kube/config is read.'),
  context: Joi.string().description('Context of the kubeconfig file to use (default: its current context).'),
  in_cluster: Joi.boolean().valid(true).description("Use the pod's service account (when the worker runs inside the cluster)."),
  server: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .description('API server address, with token (and ca): explicit credentials instead of a kubeconfig.'),
  token: Joi.string().description('Bearer token for server.'),
  ca: Joi.string().description('PEM of the certificate authority of server.'),
  insecure_skip_tls_verify: Joi.boolean().default(false).description("Do not verify the server's certificate; required by the client for an http:// server."),
};

export const connectionRules = (schema: Joi.ObjectSchema): Joi.ObjectSchema =>
  schema.oxor('kubeconfig', 'in_cluster', 'server').with('token', 'server').with('ca', 'server').with('context', 'kubeconfig');

/** A client config from the options; `where` is the options' config path, for messages (`adapters.runtime.options`). */
export function kubeConfigOf(options: KubeConnection, where: string): KubeConfig {
  const kc = new KubeConfig();
  if (options.server) {
    if (options.server.startsWith('http:') && !options.insecure_skip_tls_verify) {
      throw new Error(`${where}.server: an http:// server needs insecure_skip_tls_verify: true (no TLS at all)`);
    }
    kc.loadFromClusterAndUser(
      {
        name: 'svc',
        server: options.server.replace(/\/$/, ''),
        skipTLSVerify: !!options.insecure_skip_tls_verify,
        ...(options.ca ? { caData: Buffer.from(options.ca).toString('base64') } : {}),
      },
      { name: 'svc', ...(options.token ? { token: options.token } : {}) },
    );
  } else if (options.in_cluster) {
    if (!process.env.KUBERNETES_SERVICE_HOST)
      throw new Error(
        `${where}.in_cluster: KUBERNETES_SERVICE_HOST is not set (${where.startsWith('adapters.runtime') ? 'the worker' : 'this process'} is not running in a pod)`,
      );
    kc.loadFromCluster();
  } else if (options.kubeconfig) {
    const file = options.kubeconfig.replace(/^~(?=\/)/, homedir());
    try {
      readFileSync(file);
      kc.loadFromFile(file);
    } catch (e) {
      throw new Error(`${where}.kubeconfig: cannot read ${options.kubeconfig}: ${(e as Error).message}`);
    }
    if (options.context) {
      if (!kc.getContextObject(options.context)) throw new Error(`${where}.context: no context '${options.context}' in ${options.kubeconfig}`);
      kc.setCurrentContext(options.context);
    }
  } else {
    kc.loadFromDefault();
  }
  if (!kc.getCurrentCluster()) throw new Error(`${where}: the kubeconfig names no current cluster`);
  return kc;
}
