import type Joi from 'joi';
import type { Logger } from 'pino';
import type { AdapterChoice, Config } from './config/schema.ts';
import type { Db } from './db/knex.ts';
import type { Runtime } from './ports/runtime.ts';
import type { Scheduler } from './ports/scheduler.ts';
import type { VcsHost } from './ports/vcshost.ts';
import type { ChatApp } from './ports/chatapp.ts';
import type { Deployer } from './ports/environments.ts';
import type { Mailer } from './ports/mail.ts';
import { loadModule } from './load-module.ts';
import { BuilderRegistry, type Builder } from './ports/builder.ts';
import type { RegistryMode } from './ports/registry.ts';

/** What an adapter factory may use besides its own options. */
export interface AdapterDeps {
  config: Config;
  db: Db;
  databaseUrl: string;
  logger: Logger;
}

export interface AdapterDefinition<T = unknown, O = Record<string, unknown>> {
  kind: string;
  name: string;
  /** Joi schema of the adapter's `options`; defaults fill in here. */
  options: Joi.ObjectSchema;
  create(options: O, deps: AdapterDeps): T | Promise<T>;
}

/** Single-valued ports: config `adapters.<kind>` names exactly one adapter for each. */
export interface PortTypes {
  scheduler: Scheduler;
  runtime: Runtime;
  vcshost: VcsHost;
  chatapp: ChatApp;
  deployer: Deployer;
  mailer: Mailer;
}
export type PortKind = keyof PortTypes;

const BUILT_IN: Record<PortKind, Record<string, () => Promise<{ default: AdapterDefinition }>>> = {
  scheduler: { agenda: () => import('../adapters/scheduler/agenda/index.ts') },
  runtime: {
    local: () => import('../adapters/runtime/local/index.ts'),
    docker: () => import('../adapters/runtime/docker/index.ts'),
    kubernetes: () => import('../adapters/runtime/kubernetes/index.ts'),
  },
  vcshost: { hub: () => import('../adapters/vcshost/hub/index.ts') },
  chatapp: { chat: () => import('../adapters/chatapp/chat/index.ts') },
  deployer: {
    none: () => import('../adapters/deployer/none/index.ts'),
    docker: () => import('../adapters/runtime/docker/deployer.ts'),
    kubernetes: () => import('../adapters/runtime/kubernetes/deployer.ts'),
  },
  mailer: {
    none: () => import('../adapters/mailer/none/index.ts'),
    smtp: () => import('../adapters/mailer/smtp/index.ts'),
  },
};

export const PORT_KINDS = Object.keys(BUILT_IN) as PortKind[];

export class AdapterError extends Error {}

async function loadDefinition(kind: PortKind, use: string): Promise<AdapterDefinition> {
  let mod: { default?: AdapterDefinition };
  try {
    mod = await loadModule(use, { builtIn: (name) => (Object.hasOwn(BUILT_IN[kind], name) ? BUILT_IN[kind][name] : undefined) });
  } catch (e) {
    const known = Object.keys(BUILT_IN[kind]).join(', ');
    throw new AdapterError(`adapters.${kind}.use: '${use}' is neither a built-in ${kind} adapter (${known}) nor a loadable package (${(e as Error).message})`);
  }
  const def = mod.default;
  if (!def || typeof def.create !== 'function' || !def.options) {
    throw new AdapterError(`adapters.${kind}.use: '${use}' does not export a default defineAdapter(...)`);
  }
  if (def.kind !== kind) throw new AdapterError(`adapters.${kind}.use: '${use}' is a ${def.kind} adapter, not a ${kind} adapter`);
  return def;
}

/** Builds the adapter config names for one port; a bad name or bad options fail with their path. */
export async function createAdapter<K extends PortKind>(kind: K, choice: AdapterChoice | undefined, deps: AdapterDeps): Promise<PortTypes[K]> {
  if (!choice) throw new AdapterError(`adapters.${kind}: no adapter configured (set adapters.${kind}.use)`);
  const def = await loadDefinition(kind, choice.use);
  const { value, error } = def.options.validate(choice.options ?? {}, { abortEarly: false });
  if (error) {
    throw new AdapterError(error.details.map((d) => `adapters.${kind}.options.${d.path.join('.')}: ${d.message}`).join('; '));
  }
  return (await def.create(value, deps)) as PortTypes[K];
}

/** Rejects config for ports that do not exist, so a typo is not silently ignored. */
export function checkAdapterKinds(adapters: Record<string, AdapterChoice>): void {
  for (const kind of Object.keys(adapters)) {
    if (!(PORT_KINDS as string[]).includes(kind)) throw new AdapterError(`adapters.${kind}: unknown port (known: ${PORT_KINDS.join(', ')})`);
  }
}

/** Builders are many-valued: config `builds.builders` names each one this server has, with its options. */
const BUILDERS: Record<string, () => Promise<{ default: AdapterDefinition }>> = {
  buildx: () => import('../adapters/builder/buildx/index.ts'),
  buildkit: () => import('../adapters/builder/buildkit/index.ts'),
  kaniko: () => import('../adapters/builder/kaniko/index.ts'),
};

/** Every configured builder, keyed by backend name; an unknown name or bad options fail with their path. */
export async function createBuilders(configured: Record<string, Record<string, unknown>>, deps: AdapterDeps): Promise<BuilderRegistry> {
  const registry = new BuilderRegistry();
  for (const [name, options] of Object.entries(configured)) {
    const load = Object.hasOwn(BUILDERS, name) ? BUILDERS[name] : undefined;
    if (!load) throw new AdapterError(`builds.builders.${name}: not a built-in builder (${Object.keys(BUILDERS).join(', ')})`);
    const def = (await load()).default;
    const { value, error } = def.options.validate(options ?? {}, { abortEarly: false });
    if (error) throw new AdapterError(error.details.map((d) => `builds.builders.${name}.${d.path.join('.')}: ${d.message}`).join('; '));
    registry.add((await def.create(value, deps)) as Builder);
  }
  return registry;
}

/** The registry modes (`registry:` svc, an own registry, none), by name. */
export async function registryModes(): Promise<Record<RegistryMode['name'], RegistryMode>> {
  const [svc, oci, none] = await Promise.all([
    import('../adapters/registry/svc/index.ts'),
    import('../adapters/registry/oci/index.ts'),
    import('../adapters/registry/none/index.ts'),
  ]);
  return { svc: svc.svcRegistry, oci: oci.ociRegistry, none: none.noneRegistry };
}
