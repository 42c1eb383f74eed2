import type Docker from 'dockerode';

export const DEFAULT_SOCKET = '/var/run/docker.sock';

export interface EngineAddress {
  /** dockerode options; undefined lets docker-modem read DOCKER_HOST (and DOCKER_TLS_VERIFY, DOCKER_CERT_PATH) itself. */
  options: Docker.DockerOptions | undefined;
  /** How the address reads in error messages. */
  text: string;
}

/** `socket_path`, else `host` (DOCKER_HOST syntax), else the DOCKER_HOST environment variable, else the default socket. */
export function engineAddress(socketPath: string | null, host: string | null, env: NodeJS.ProcessEnv = process.env): EngineAddress {
  if (socketPath) return { options: { socketPath }, text: `unix://${socketPath}` };
  if (host) {
    if (host.startsWith('unix://')) return { options: { socketPath: host.slice('unix://'.length) }, text: host };
    const url = new URL(host.replace(/^tcp:/, 'http:'));
    const protocol = url.protocol === 'https:' ? 'https' : 'http';
    return { options: { host: url.hostname, port: url.port || (protocol === 'https' ? 2376 : 2375), protocol }, text: host };
  }
  if (env.DOCKER_HOST) return { options: undefined, text: env.DOCKER_HOST };
  return { options: { socketPath: DEFAULT_SOCKET }, text: `unix://${DEFAULT_SOCKET}` };
}

/** The HTTP status of a Docker Engine API error (docker-modem sets statusCode), if any. */
export const statusOf = (err: unknown): number | undefined => (err as { statusCode?: number } | null)?.statusCode;

/** The engine's own message for an API error, else the error's. */
export function engineMessage(err: unknown): string {
  const e = err as { json?: { message?: string }; reason?: string; message?: string };
  return e?.json?.message ?? e?.message ?? String(err);
}
