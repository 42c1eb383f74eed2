/**
 * The harness registry: the six built-ins and the plugins config names, each with its configured
 * binary, found by id or alias. Everything wrong with the set (a plugin that does not load or has
 * the wrong shape, a clashing id, settings for a harness that does not exist) fails the boot with
 * the config path and the name.
 */
import path from 'node:path';
import type { HarnessesConfig, HarnessSettings } from '../../core/config/schema.ts';
import type { AgentsConfig } from '../../domain/manifest/types.ts';
import { chooseAgent, planAgent, type AgentChoice, type AgentRequest } from '../../domain/manifest/profiles.ts';
import type { AuthWhere, HarnessAuthStatus, HarnessDefinition, HarnessRegistry } from '../../core/ports/harness.ts';
import type { SecretContext } from '../../core/ports/secrets.ts';
import { defineHarness } from '../../core/sdk.ts';
import { loadModule } from '../../core/load-module.ts';
import { builtInHarnesses } from '../../harnesses/index.ts';
import { environmentCredentials, type HarnessAuth } from './service.ts';

/** Runs when neither the job nor the project's manifest names a harness. */
export const DEFAULT_HARNESS = 'harness_b';

export class HarnessConfigError extends Error {}

interface Entry {
  def: HarnessDefinition;
  /** 'builtin', or the plugin as config names it. */
  source: string;
}

async function loadPlugin(spec: string, cwd: string): Promise<HarnessDefinition> {
  const where = `harnesses.plugins: '${spec}'`;
  let mod: Record<string, unknown>;
  try {
    mod = await loadModule(spec, { cwd });
  } catch (e) {
    throw new HarnessConfigError(`${where} could not be loaded: ${(e as Error).message}`);
  }
  const candidate = mod.default ?? mod.harness;
  try {
    return defineHarness(candidate as HarnessDefinition);
  } catch (e) {
    throw new HarnessConfigError(`${where} does not export a harness definition (default export from defineHarness): ${(e as Error).message}`);
  }
}

/**
 * The definition as the registry hands it out: configured binary and default model, and the
 * server's credential variables under the job's env (not for a model on svc's gateway). A job that names no model gets the default
 * model explicitly, and the invocation names it (the receipt's model).
 */
function configured(def: HarnessDefinition, settings: HarnessSettings | undefined, cwd: string): HarnessDefinition {
  const raw = settings?.command ?? def.command ?? def.id;
  const command = raw.includes('/') ? path.resolve(cwd, raw) : raw;
  const setting = settings?.default_model;
  const defaultModel = setting === false ? undefined : (setting ?? def.defaultModel);
  const { defaultModel: _own, ...rest } = def;
  return {
    ...rest,
    ...(defaultModel ? { defaultModel } : {}),
    command,
    build: (input) => {
      const defaulted = input.model ? undefined : defaultModel;
      // On svc's gateway the CLI gets no credential of the server's (it could reroute or leak): only what env holds.
      const env = input.gateway ? input.env : { ...environmentCredentials(def), ...input.env };
      const invocation = def.build({ ...input, ...(defaulted ? { model: defaulted } : {}), env });
      return { ...invocation, command, ...(defaulted ? { model: defaulted } : {}) };
    },
    parseLine: (line) => def.parseLine(line),
  };
}

export class Harnesses implements HarnessRegistry {
  private readonly byName = new Map<string, Entry>();
  private readonly entries: Entry[];

  private constructor(
    entries: Entry[],
    private readonly authService: HarnessAuth,
  ) {
    this.entries = entries;
    for (const entry of entries) {
      for (const name of [entry.def.id, ...(entry.def.aliases ?? [])]) {
        const taken = this.byName.get(name);
        if (taken)
          throw new HarnessConfigError(
            `harness name '${name}' of ${entry.source === 'builtin' ? entry.def.id : `plugin '${entry.source}'`} is already taken by ${taken.def.id} (${taken.source})`,
          );
        this.byName.set(name, entry);
      }
    }
  }

  static async load(config: HarnessesConfig, auth: HarnessAuth, cwd = process.cwd()): Promise<Harnesses> {
    const settings = (id: string) => config[id] as HarnessSettings | undefined;
    const plugins: Entry[] = [];
    for (const spec of config.plugins ?? []) plugins.push({ def: await loadPlugin(spec, cwd), source: spec });
    const all = [...builtInHarnesses({ harness_a: settings('harness_a') }).map((def) => ({ def, source: 'builtin' })), ...plugins];
    const ids = new Set(all.map((e) => e.def.id));
    for (const key of Object.keys(config)) {
      if (key !== 'plugins' && !ids.has(key)) throw new HarnessConfigError(`harnesses.${key}: no harness has this id (known: ${[...ids].join(', ')})`);
    }
    return new Harnesses(
      all.map((e) => ({ ...e, def: configured(e.def, settings(e.def.id), cwd) })),
      auth,
    );
  }

  get(idOrAlias: string): HarnessDefinition | undefined {
    return this.byName.get(idOrAlias)?.def;
  }

  list(): HarnessDefinition[] {
    return this.entries.map((e) => e.def);
  }

  /** 'builtin' or the plugin's name in config. */
  sourceOf(id: string): string {
    return this.byName.get(id)?.source ?? 'builtin';
  }

  async auth(idOrAlias: string, ctx?: SecretContext, where?: AuthWhere): Promise<HarnessAuthStatus> {
    const def = this.get(idOrAlias);
    if (!def) return { available: false, reason: `unknown harness '${idOrAlias}'`, instructions: [] };
    return this.authService.status(def, ctx, where);
  }

  async credentials(idOrAlias: string, ctx?: SecretContext): Promise<Record<string, string>> {
    const def = this.get(idOrAlias);
    return def ? this.authService.credentials(def, ctx) : {};
  }

  async resolve(request: AgentRequest, agents: AgentsConfig | undefined, ctx?: SecretContext, where?: AuthWhere): Promise<AgentChoice> {
    const plan = planAgent(request ?? {}, agents, {
      canonical: (name) => this.get(name)?.id,
      variants: (id) => {
        const variants = this.get(id)?.variants;
        return variants?.length ? variants.map((v) => v.name) : undefined;
      },
      defaultHarness: DEFAULT_HARNESS,
    });
    const statuses = new Map<string, HarnessAuthStatus>();
    if (plan.dropUnavailable) {
      for (const id of new Set(plan.candidates.map((c) => c.harness))) statuses.set(id, await this.auth(id, ctx, where));
    }
    return chooseAgent(plan, (id) => statuses.get(id));
  }
}
