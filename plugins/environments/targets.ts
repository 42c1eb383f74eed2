import { Invalid, NotFound, SecretMissing } from '../../core/errors.ts';
import type { ProjectDirectory } from '../../core/ports/directory.ts';
import type { ManifestReader } from '../../core/ports/manifest.ts';
import type { SecretResolver } from '../../core/ports/secrets.ts';
import type { DeployService, DeployTarget, PullSecret, ReleaseRef } from '../../core/ports/environments.ts';
import type { Manifest, ServiceDefinition } from '../../domain/manifest/types.ts';
import { PORT } from '../../domain/manifest/validate-deploy.ts';
import type { EnvironmentRow } from './repository.ts';
import { REGISTRY_PASSWORD as DEFAULT_TOKEN_SECRET, REGISTRY_USERNAME as DEFAULT_USERNAME_SECRET } from '../../core/secrets/platform.ts';

/** `8080`, `"18080:8080"` (host:container) or `"127.0.0.1:18080:8080"`; the manifest's check passed it (PORT). */
function portOf(p: number | string): DeployService['ports'][number] {
  if (typeof p === 'number') return { container: p, host: null, host_ip: null };
  const [, ip, host, container] = PORT.exec(p) ?? [];
  return { container: Number(container), host: host === undefined ? null : Number(host), host_ip: ip ?? null };
}

const commandOf = (c: ServiceDefinition['command']): string[] | null => (c === undefined ? null : typeof c === 'string' ? ['/bin/sh', '-c', c] : c);

/**
 * What the deployer is handed for an environment: the project, the release's manifest services with
 * `${secret.NAME}` expanded for the project, and the pull secret the registry mode asks for.
 */
export class DeployTargets {
  constructor(
    private readonly projects: ProjectDirectory,
    private readonly manifests: ManifestReader,
    /** The secrets plugin registers after this one. */
    private readonly secrets: () => SecretResolver | null,
  ) {}

  /** The manifest a release was built from (its hash), else the project's current one. */
  async manifestFor(projectId: string, release: ReleaseRef | null): Promise<Manifest> {
    const stored = (release?.manifest_hash ? await this.manifests.byHash(projectId, release.manifest_hash) : null) ?? (await this.manifests.current(projectId));
    return stored?.parsed ?? {};
  }

  async of(env: EnvironmentRow, release: ReleaseRef | null): Promise<DeployTarget> {
    return (await this.resolved(env, release)).target;
  }

  /** The target, and the secret values in it (each `${secret.NAME}` its services name, the pull password): what a deploy's log masks. */
  async resolved(env: EnvironmentRow, release: ReleaseRef | null): Promise<{ target: DeployTarget; secrets: string[] }> {
    const secrets: string[] = [];
    const project = await this.projects.byId(env.project_id);
    if (!project) throw new NotFound(`project ${env.project_id} not found`);
    const manifest = await this.manifestFor(env.project_id, release);
    const services: Record<string, DeployService> = {};
    for (const [name, def] of Object.entries(manifest.services ?? {})) {
      const environment: Record<string, string> = {};
      for (const [key, value] of Object.entries(def.environment ?? {})) environment[key] = await this.expand(String(value), env.project_id, secrets);
      const hc = def.healthcheck;
      services[name] = {
        image: def.image ?? null,
        command: commandOf(def.command),
        ports: (def.ports ?? []).map(portOf),
        environment,
        healthcheck: hc
          ? { command: hc.command, interval_seconds: hc.interval_seconds ?? 2, timeout_seconds: hc.timeout_seconds ?? 5, retries: hc.retries ?? 15 }
          : null,
        deploy_strategy: def.deploy_strategy ?? null,
      };
    }
    const pullSecret = await this.pullSecret(manifest, env.project_id);
    if (pullSecret) secrets.push(pullSecret.password);
    const target = {
      project: { id: project.id, org_id: project.org_id, slug: project.slug },
      environment: { id: env.id, name: env.name, namespace: env.namespace },
      services,
      pullSecret,
    };
    return { target, secrets };
  }

  /** Own registry: a credential from its username and token secrets; native (`svc`) and `none`: none. */
  private async pullSecret(manifest: Manifest, projectId: string): Promise<PullSecret | null> {
    const registry = manifest.registry;
    if (!registry || typeof registry === 'string') return null;
    return {
      host: registry.host,
      username: await this.resolve(registry.auth?.username_secret ?? DEFAULT_USERNAME_SECRET, projectId),
      password: await this.resolve(registry.auth?.token_secret ?? DEFAULT_TOKEN_SECRET, projectId),
    };
  }

  private resolver(what: string): SecretResolver {
    const resolver = this.secrets();
    if (!resolver) throw new Invalid(`${what} needs secrets, but this server has no secrets plugin loaded`);
    return resolver;
  }

  private async resolve(name: string, projectId: string): Promise<string> {
    return this.resolver(`secret ${name}`).resolve(name, { projectId });
  }

  /** `value` with its `${secret.NAME}` expanded; each secret's value is added to `secrets`. */
  private async expand(value: string, projectId: string, secrets: string[]): Promise<string> {
    if (!value.includes('${')) return value;
    try {
      const expanded = await this.resolver('a service environment value').expandWithValues(value, { projectId });
      secrets.push(...expanded.values);
      return expanded.text;
    } catch (err) {
      if (err instanceof SecretMissing) throw new Invalid(`a service of the environment names a missing secret: ${err.message}`);
      throw err;
    }
  }
}
