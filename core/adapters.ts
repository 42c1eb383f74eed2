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
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadModule } from './load-module.ts';
import { MODULE_EXT } from './module-ext.ts';
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

export const PORT_KINDS: PortKind[] = ['scheduler', 'runtime', 'vcshost', 'chatapp', 'deployer', 'mailer'];

const ADAPTERS_DIR = fileURLToPath(new URL('../adapters/', import.meta.url));

/**
 * The built-in adapters of a kind, by name: each `adapters/<kind>/<name>/index.ts` (the adapters
 * folder lists itself, as plugins/ does; core names none of them).
 */
export function builtInNames(kind: string): string[] {
  const dir = path.join(ADAPTERS_DIR, kind);
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(dir, d.name, `index${MODULE_EXT}`)))
    .map((d) => d.name)
    .sort();
}

function builtIn<M>(kind: string, name: string): (() => Promise<M>) | undefined {
  if (!builtInNames(kind).includes(name)) return undefined;
  return () => import(pathToFileURL(path.join(ADAPTERS_DIR, kind, name, `index${MODULE_EXT}`)).href) as Promise<M>;
}

export class AdapterError extends Error {}

/** The definition `use` names (a built-in of `kind`, a package or a path), checked; errors name the config `key`. */
async function loadDefinition(kind: string, use: string, key: string): Promise<AdapterDefinition> {
  let mod: { default?: AdapterDefinition };
  try {
    mod = await loadModule(use, { builtIn: (name) => builtIn(kind, name) });
  } catch (e) {
    const known = builtInNames(kind).join(', ');
    throw new AdapterError(`${key}: '${use}' is neither a built-in ${kind} adapter (${known}) nor a loadable package (${(e as Error).message})`);
  }
  const def = mod.default;
  if (!def || typeof def.create !== 'function' || !def.options || typeof def.options.validate !== 'function') {
    throw new AdapterError(`${key}: '${use}' does not export a default defineAdapter(...)`);
  }
  if (def.kind !== kind) throw new AdapterError(`${key}: '${use}' is a ${def.kind} adapter, not a ${kind} adapter`);
  return def;
}

/** Builds the adapter config names for one port; a bad name or bad options fail with their path. */
export async function createAdapter<K extends PortKind>(kind: K, choice: AdapterChoice | undefined, deps: AdapterDeps): Promise<PortTypes[K]> {
  if (!choice) throw new AdapterError(`adapters.${kind}: no adapter configured (set adapters.${kind}.use)`);
  const def = await loadDefinition(kind, choice.use, `adapters.${kind}.use`);
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

/**
 * Every configured builder, keyed by backend name: a built-in of that name, or the package or path
 * its `use` names (a third party's builder, examples/builder-plugin), whose builder must call itself
 * by that name. An unknown name, a bad package or bad options fail the boot with their path.
 */
export async function createBuilders(configured: Record<string, Record<string, unknown>>, deps: AdapterDeps): Promise<BuilderRegistry> {
  const registry = new BuilderRegistry();
  for (const [name, { use, ...options }] of Object.entries(configured)) {
    if (use !== undefined && typeof use !== 'string') throw new AdapterError(`builds.builders.${name}.use: must be a package name or a path`);
    if (use === undefined && !builtInNames('builder').includes(name))
      throw new AdapterError(`builds.builders.${name}: not a built-in builder (${builtInNames('builder').join(', ')}), and no use: names a package`);
    const key = `builds.builders.${name}${use ? '.use' : ''}`;
    const def = await loadDefinition('builder', use ?? name, key);
    const { value, error } = def.options.validate(options, { abortEarly: false });
    if (error) throw new AdapterError(error.details.map((d) => `builds.builders.${name}.${d.path.join('.')}: ${d.message}`).join('; '));
    const builder = (await def.create(value, deps)) as Builder;
    if (typeof builder?.build !== 'function' || typeof builder.available !== 'function')
      throw new AdapterError(`${key}: '${use ?? name}' created no builder (build and available are needed)`);
    if (builder.name !== name) throw new AdapterError(`${key}: '${use ?? name}' builds as '${builder.name}', but it is configured as '${name}'`);
    registry.add(builder);
  }
  return registry;
}

/** The registry modes (`registry:` svc, an own registry, none), by name: each `adapters/registry/<name>/`. */
export async function registryModes(): Promise<Record<RegistryMode['name'], RegistryMode>> {
  const modes = await Promise.all(builtInNames('registry').map(async (name) => (await builtIn<{ default: RegistryMode }>('registry', name)!()).default));
  return Object.fromEntries(modes.map((mode) => [mode.name, mode])) as Record<RegistryMode['name'], RegistryMode>;
}
