/** The few API server calls the runtime and the deployer make, with errors that say what failed and why. */
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiException, AppsV1Api, CoreV1Api, Watch, type KubeConfig, type V1Pod } from '@kubernetes/client-node';

export class KubeApiError extends Error {
  constructor(
    message: string,
    readonly code: number | null,
  ) {
    super(message);
  }
}

/** The API server's own words: a Status object's reason and message when the body has one. */
function describe(err: unknown): { code: number | null; text: string } {
  if (err instanceof ApiException) {
    let status: { reason?: string; message?: string } | null = null;
    if (typeof err.body === 'string') {
      try {
        status = JSON.parse(err.body);
      } catch {
        /* not JSON */
      }
    } else if (err.body && typeof err.body === 'object') status = err.body as typeof status;
    const text = status?.message
      ? `${err.code}${status.reason ? ` ${status.reason}` : ''}: ${status.message}`
      : `${err.code} ${http.STATUS_CODES[err.code] ?? ''}`.trim();
    return { code: err.code, text };
  }
  const e = err as NodeJS.ErrnoException & { statusCode?: number };
  if (typeof e?.statusCode === 'number') return { code: e.statusCode, text: `${e.statusCode} ${e.message}` };
  return { code: null, text: e?.code ? `${e.code}: ${e.message}` : String(e?.message ?? err) };
}

export function apiError(action: string, err: unknown): KubeApiError {
  const { code, text } = describe(err);
  return new KubeApiError(`kubernetes API: ${action} failed: ${text}`, code);
}

export const statusOf = (err: unknown): number | null => (err instanceof KubeApiError ? err.code : describe(err).code);

export class KubeApi {
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;

  constructor(
    readonly kc: KubeConfig,
    readonly namespace: string,
  ) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.apps = kc.makeApiClient(AppsV1Api);
  }

  /** `fn`'s answer; a failure says which `action` (naming its object and namespace) failed and why. */
  async request<T>(action: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw apiError(action, err);
    }
  }

  /** As request, but null when the object does not exist (404). */
  async find<T>(action: string, fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (err) {
      if (describe(err).code === 404) return null;
      throw apiError(action, err);
    }
  }

  async call<T>(action: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw apiError(`${action} in namespace ${this.namespace}`, err);
    }
  }

  /** The pod, or null once it is gone. */
  async readPod(name: string): Promise<V1Pod | null> {
    try {
      return await this.core.readNamespacedPod({ name, namespace: this.namespace });
    } catch (err) {
      if (describe(err).code === 404) return null;
      throw apiError(`reading pod ${name} in namespace ${this.namespace}`, err);
    }
  }

  /** Deletes a pod or secret; one already gone is fine. */
  async remove(kind: 'pod' | 'secret', name: string, gracePeriodSeconds?: number): Promise<void> {
    try {
      if (kind === 'pod') await this.core.deleteNamespacedPod({ name, namespace: this.namespace, gracePeriodSeconds, propagationPolicy: 'Background' });
      else await this.core.deleteNamespacedSecret({ name, namespace: this.namespace });
    } catch (err) {
      if (describe(err).code !== 404) throw apiError(`deleting ${kind} ${name} in namespace ${this.namespace}`, err);
    }
  }

  /**
   * Calls `decide` with the pod's state, first as read, then on every change (a watch from that
   * resourceVersion), until it returns a value. `gone` is true once the pod no longer exists (the
   * pod is then its last known state, or null). A watch that ends or expires is started again.
   */
  async watchPod<T>(name: string, decide: (pod: V1Pod | null, gone: boolean) => T | undefined, signal?: AbortSignal): Promise<T> {
    for (;;) {
      signal?.throwIfAborted();
      const pod = await this.readPod(name);
      const now = decide(pod, pod === null);
      if (now !== undefined) return now;
      const later = await new Promise<T | undefined>((resolve, reject) => {
        let controller: AbortController | undefined;
        let settled = false;
        const settle = (fn: () => void) => {
          if (settled) return;
          settled = true;
          signal?.removeEventListener('abort', onAbort);
          controller?.abort();
          fn();
        };
        const onAbort = () => settle(() => reject(signal!.reason));
        signal?.addEventListener('abort', onAbort);
        const path = `/api/v1/namespaces/${this.namespace}/pods`;
        const query = {
          fieldSelector: `metadata.name=${name}`,
          resourceVersion: pod!.metadata?.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: 60,
        };
        new Watch(this.kc)
          .watch(
            path,
            query,
            (type, obj: V1Pod) => {
              if (type === 'BOOKMARK') return;
              if (type === 'ERROR') return settle(() => resolve(undefined)); // e.g. 410 Gone: read again, watch from there
              const value = decide(obj, type === 'DELETED');
              if (value !== undefined) settle(() => resolve(value));
            },
            (err) => {
              const code = err ? describe(err).code : null;
              if (code === 401 || code === 403) settle(() => reject(apiError(`watching pod ${name} in namespace ${this.namespace}`, err)));
              else settle(() => resolve(undefined));
            },
          )
          .then(
            (c) => {
              controller = c;
              if (settled) c.abort();
            },
            (err) => settle(() => reject(apiError(`watching pod ${name} in namespace ${this.namespace}`, err))),
          );
      });
      if (later !== undefined) return later;
      await sleep(200, undefined, { signal });
    }
  }

  /**
   * Opens `GET .../pods/{name}/log?follow=true&timestamps=true`: the response body streams the
   * container's output (stdout and stderr interleaved) until the container ends.
   */
  async openLog(name: string, container: string, sinceTime: string | null, signal: AbortSignal): Promise<http.IncomingMessage> {
    const cluster = this.kc.getCurrentCluster()!;
    const url = new URL(`${cluster.server}/api/v1/namespaces/${this.namespace}/pods/${name}/log`);
    url.searchParams.set('container', container);
    url.searchParams.set('follow', 'true');
    url.searchParams.set('timestamps', 'true');
    if (sinceTime) url.searchParams.set('sinceTime', sinceTime);
    const opts: https.RequestOptions = { method: 'GET', signal };
    await this.kc.applyToHTTPSOptions(opts);
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = (url.protocol === 'http:' ? http : https).request(url, opts, resolve);
      req.once('error', reject);
      req.end();
    }).catch((err) => {
      throw apiError(`following the log of pod ${name}`, err);
    });
    if (res.statusCode === 200) return res;
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    throw apiError(`following the log of pod ${name}`, new ApiException(res.statusCode ?? 0, 'log', Buffer.concat(chunks).toString('utf8'), {}));
  }
}
