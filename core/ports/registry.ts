import type { InjectionToken } from 'tsyringe';
import type { PushTarget } from './builder.ts';

/** The manifest's (or a build's) `registry` setting. */
export type RegistrySettingValue = 'svc' | 'none' | { host: string; namespace?: string; auth?: { username_secret?: string; token_secret?: string } };

/** What a registry mode needs to know about where it is used. */
export interface RegistryContext {
  projectId: string;
  projectSlug: string;
  setting: RegistrySettingValue;
  /** A secret of the project's scopes by name (own registries' credentials). */
  secret(name: string): Promise<string>;
  /** host[:port] of the native registry (config builds.native_registry), null when none is set. */
  nativeHost: string | null;
  /** A short-lived credential for the native registry, limited to the project's repositories. */
  nativeCredential(): Promise<{ username: string; password: string }>;
}

/** Where images of a project go, and how to log in there. */
export interface RegistryTarget {
  /** null: images stay in the engine. */
  host: string | null;
  /** `host/namespace/service` (no tag) for a service; `image` (the service's own setting) wins when given. */
  repository(service: string, image?: string): string;
  push: PushTarget | null;
}

/** A docker-config (`.dockerconfigjson`) for pulling the project's images, or null when none is needed. */
export interface DockerConfigJson {
  auths: Record<string, { auth: string }>;
}

/** One registry mode: `svc` (native), `oci` (an own registry), `none`. */
export interface RegistryMode {
  readonly name: 'svc' | 'oci' | 'none';
  target(ctx: RegistryContext): Promise<RegistryTarget>;
  pullSecret(ctx: RegistryContext): Promise<DockerConfigJson | null>;
}

/** The mode a setting names. */
export const modeOf = (setting: RegistrySettingValue): RegistryMode['name'] => (setting === 'svc' ? 'svc' : setting === 'none' ? 'none' : 'oci');

/**
 * Pull credentials for deployers (environments attach them as an image pull secret). Registered
 * by the builds plugin; never logs the values.
 */
export interface RegistryPullSecrets {
  /** The project's pull secret for its current manifest's registry, or null (native, none, no manifest). */
  forProject(projectId: string): Promise<DockerConfigJson | null>;
}

export const RegistryPullSecretsToken = Symbol('RegistryPullSecrets') as InjectionToken<RegistryPullSecrets>;
