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

async function loadDefinition(kind: PortKind, use: string): Promise<AdapterDefinition> {
  let mod: { default?: AdapterDefinition };
  try {
    mod = await loadModule(use, { builtIn: (name) => builtIn(kind, name) });
  } catch (e) {
    const known = builtInNames(kind).join(', ');
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

/** Every configured builder, keyed by backend name; an unknown name or bad options fail with their path. */
export async function createBuilders(configured: Record<string, Record<string, unknown>>, deps: AdapterDeps): Promise<BuilderRegistry> {
  const registry = new BuilderRegistry();
  for (const [name, options] of Object.entries(configured)) {
    // Builders are many-valued: config `builds.builders` names each one this server has, with its options.
    const load = builtIn<{ default: AdapterDefinition }>('builder', name);
    if (!load) throw new AdapterError(`builds.builders.${name}: not a built-in builder (${builtInNames('builder').join(', ')})`);
    const def = (await load()).default;
    const { value, error } = def.options.validate(options ?? {}, { abortEarly: false });
    if (error) throw new AdapterError(error.details.map((d) => `builds.builders.${name}.${d.path.join('.')}: ${d.message}`).join('; '));
    registry.add((await def.create(value, deps)) as Builder);
  }
  return registry;
}

/** The registry modes (`registry:` svc, an own registry, none), by name: each `adapters/registry/<name>/`. */
export async function registryModes(): Promise<Record<RegistryMode['name'], RegistryMode>> {
  const modes = await Promise.all(builtInNames('registry').map(async (name) => (await builtIn<{ default: RegistryMode }>('registry', name)!()).default));
  return Object.fromEntries(modes.map((mode) => [mode.name, mode])) as Record<RegistryMode['name'], RegistryMode>;
}
