import type Docker from 'dockerode';
import type { DeployTarget } from '../../../core/ports/environments.ts';

/** The labels that tie a container to what svc created (and nothing else is ever touched). */
export const LABEL = {
  env: 'svc.environment',
  project: 'svc.project',
  service: 'svc.service',
  generation: 'svc.generation',
} as const;

const NS_PER_SECOND = 1_000_000_000;

/** Where to find a service's image on the engine, most specific first. */
export function imageCandidates(image: string | null, digest: string): string[] {
  if (!digest.startsWith('sha256:')) return [digest];
  return image ? [`${image}@${digest}`, digest] : [digest];
}

/** The Engine API create body of one service's container. */
export function containerSpec(target: DeployTarget, service: string, image: string, generation: string, network: string | null): Docker.ContainerCreateOptions {
  const def = target.services[service];
  const name = `svc-${target.project.slug}-${target.environment.name}-${service}-${generation}`.replace(/[^a-zA-Z0-9_.-]/g, '-');
  const exposed = Object.fromEntries(def.ports.map((p) => [`${p.container}/tcp`, {}]));
  const bindings = Object.fromEntries(def.ports.filter((p) => p.host !== null).map((p) => [`${p.container}/tcp`, [{ HostPort: String(p.host) }]]));
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
      RestartPolicy: { Name: 'unless-stopped' },
      ...(network ? { NetworkMode: network } : {}),
    },
  };
}
