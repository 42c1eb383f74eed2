import { inject, injectable, lookupLater } from '../../core/di.ts';
import { Tokens } from '../../core/tokens.ts';
import type { Config } from '../../core/config/schema.ts';
import type { DependencyContainer } from '../../core/di.ts';
import { SecretResolverToken, type SecretResolver } from '../../core/ports/secrets.ts';
import { ManifestReaderToken, type ManifestReader } from '../../core/ports/manifest.ts';
import { ProjectDirectoryToken, type ProjectDirectory } from '../../core/ports/directory.ts';
import {
  modeOf,
  type DockerConfigJson,
  type RegistryContext,
  type RegistryMode,
  type RegistryPullSecrets,
  type RegistrySettingValue,
} from '../../core/ports/registry.ts';
import { RegistryTokens } from './registry-tokens.ts';

/** Secrets are looked up lazily: the secrets plugin may load after this one. */
export const SecretLookup = Symbol('BuildsSecretLookup');
/** The registry modes core/adapters.ts loaded. */
export const RegistryModes = Symbol('RegistryModes');

/** The registry a project's builds use (a build's override, else its manifest's `registry`, else none), and its pull secret. */
@injectable()
export class RegistryTargets implements RegistryPullSecrets {
  constructor(
    @inject(Tokens.Config) private readonly config: Config,
    @inject(RegistryTokens) private readonly tokens: RegistryTokens,
    @inject(ProjectDirectoryToken) private readonly projects: ProjectDirectory,
    @inject(ManifestReaderToken) private readonly manifests: ManifestReader,
    @inject(SecretLookup) private readonly secrets: () => SecretResolver | null,
    @inject(RegistryModes) private readonly modes: Record<RegistryMode['name'], RegistryMode>,
  ) {}

  async context(projectId: string, setting: RegistrySettingValue): Promise<{ mode: RegistryMode; ctx: RegistryContext }> {
    const project = await this.projects.byId(projectId);
    if (!project) throw new Error(`project ${projectId} not found`);
    const ctx: RegistryContext = {
      projectId,
      projectSlug: project.slug,
      setting,
      nativeHost: this.config.builds.native_registry,
      secret: async (name) => {
        const resolver = this.secrets();
        if (!resolver) throw new Error(`secret ${name} is needed, but no secrets plugin is loaded`);
        return resolver.resolve(name, { projectId, orgId: project.org_id });
      },
      nativeCredential: async () => ({ username: this.tokens.username, password: await this.tokens.grant(projectId, project.slug) }),
    };
    return { mode: this.modes[modeOf(setting)], ctx };
  }

  async forProject(projectId: string): Promise<DockerConfigJson | null> {
    const setting = (await this.manifests.current(projectId))?.parsed.registry as RegistrySettingValue | undefined;
    if (!setting) return null;
    const { mode, ctx } = await this.context(projectId, setting);
    return mode.pullSecret(ctx);
  }
}

export const secretLookup = (container: DependencyContainer) => lookupLater(container, SecretResolverToken);
