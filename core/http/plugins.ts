import path from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadModule } from '../load-module.ts';
import { MODULE_EXT } from '../module-ext.ts';
import type { Plugin, Server } from '@hapi/hapi';
import type { DependencyContainer } from 'tsyringe';

const PLUGINS_DIR = fileURLToPath(new URL('../../plugins/', import.meta.url));

/** `plugins/<name>/index.ts`, when there is one. */
function builtInPlugin(name: string): (() => Promise<{ plugin?: DomainPlugin }>) | undefined {
  const file = path.join(PLUGINS_DIR, name, `index${MODULE_EXT}`);
  return existsSync(file) ? () => import(pathToFileURL(file).href) : undefined;
}

/** Options every domain plugin receives. */
export interface DomainPluginOptions {
  container: DependencyContainer;
}

export type DomainPlugin = Plugin<DomainPluginOptions>;

/**
 * Domain plugins by config name: a built-in `plugins/<name>/index.ts`, else a package or path
 * exporting `plugin` (core/load-module.ts). A missing plugin, or one another plugin depends on, fails the boot by name.
 */
export async function loadDomainPlugins(server: Server, container: DependencyContainer, names: string[]): Promise<void> {
  for (const name of names) {
    let mod: { plugin?: DomainPlugin };
    try {
      mod = await loadModule(name, { builtIn: builtInPlugin });
    } catch (e) {
      throw new Error(`plugin '${name}' could not be loaded: ${(e as Error).message}`);
    }
    if (!mod.plugin?.register || !('name' in mod.plugin)) throw new Error(`plugin '${name}' must export \`plugin\` with a name and register()`);
    await server.register({ plugin: mod.plugin, options: { container } });
  }
}
