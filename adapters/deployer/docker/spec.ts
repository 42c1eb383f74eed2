import type Docker from 'dockerode';
import type { DeployTarget } from '../../../core/ports/environments.ts';

/** The labels that tie a container to what svc created (and nothing else is ever touched). */
export const LABEL = {
  env: 'svc.environment',
  project: 'svc.project',
  service: 'svc.service',
  generation: 'svc.generation',
  /** On a one-off container (the `job` action) instead of `env`, so it is never one of the environment's services. */
  oneOff: 'svc.one-off.environment',
} as const;

const NS_PER_SECOND = 1_000_000_000;

/** Where to find a service's image on the engine, most specific first: the reference its build pushed, the manifest's image by digest, the digest as an image id. */
export function imageCandidates(image: string | null, digest: string, pushed: string | null = null): string[] {
  const own = pushed ? [pushed] : [];
  if (!digest.startsWith('sha256:')) return [...own, digest];
  return image ? [...own, `${image}@${digest}`, digest] : [...own, digest];
}

/** The Engine API create body of a one-off container of `service`: its command (or `command`), environment and network; no ports, no health check, no restarts. */
export function oneOffSpec(
  target: DeployTarget,
  service: string,
  image: string,
  command: string[] | null,
  network: string | null,
): Docker.ContainerCreateOptions {
  const def = target.services[service];
  const cmd = command ?? def.command;
  return {
    name: `svc-${target.project.slug}-${target.environment.name}-${service}-job-${Date.now().toString(36)}`.replace(/[^a-zA-Z0-9_.-]/g, '-'),
    Image: image,
    ...(cmd ? { Cmd: cmd } : {}),
    Env: Object.entries(def.environment).map(([k, v]) => `${k}=${v}`),
    Labels: { [LABEL.oneOff]: target.environment.id, [LABEL.project]: target.project.id, [LABEL.service]: service },
    HostConfig: { AutoRemove: false, ...(network ? { NetworkMode: network } : {}) },
  };
}

/** A service's container once a deploy found it healthy. */
export const SERVICE_RESTART_POLICY = { Name: 'unless-stopped' } as const;

/** The Engine API create body of one service's container. */
export function containerSpec(target: DeployTarget, service: string, image: string, generation: string, network: string | null): Docker.ContainerCreateOptions {
  const def = target.services[service];
  const name = `svc-${target.project.slug}-${target.environment.name}-${service}-${generation}`.replace(/[^a-zA-Z0-9_.-]/g, '-');
  const exposed = Object.fromEntries(def.ports.map((p) => [`${p.container}/tcp`, {}]));
  const bindings = Object.fromEntries(
    def.ports.filter((p) => p.host !== null).map((p) => [`${p.container}/tcp`, [{ HostPort: String(p.host), ...(p.host_ip ? { HostIp: p.host_ip } : {}) }]]),
  );
  const hc = def.healthcheck;
  return {
    name,
    Image: image,
    ...(def.command ? { Cmd: def.command } : {}),
    Env: Object.entries(def.environment).map(([k, v]) => `${k}=${v}`),
    ExposedPorts: exposed,
    Labels: {
      [LABEL.env]: target.environment.id,
      [LABEL.project]: target.project.id,
      [LABEL.service]: service,
      [LABEL.generation]: generation,
    },
    ...(hc
      ? {
          Healthcheck: {
            Test: ['CMD-SHELL', hc.command],
            Interval: hc.interval_seconds * NS_PER_SECOND,
            Timeout: hc.timeout_seconds * NS_PER_SECOND,
            Retries: hc.retries,
            StartPeriod: 0,
          },
        }
      : {}),
    HostConfig: {
      PortBindings: bindings,
      // Not restarted until it is healthy (the deploy then sets SERVICE_RESTART_POLICY): a new container that exits
      // must stay exited, so the deploy reads its exit code and fails instead of watching it restart.
      RestartPolicy: { Name: 'no' },
      ...(network ? { NetworkMode: network } : {}),
    },
  };
}
