import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { MODULE_EXT } from './module-ext.ts';

let typeScriptLoader: Promise<unknown> | null = null;

/**
 * The compiled server imports a TypeScript plugin given by path (a third party's `index.ts`) through
 * tsx's loader, registered the first time one is asked for; from the sources tsx is already there.
 */
function readyFor(file: string): Promise<unknown> {
  if (MODULE_EXT === '.ts' || !/\.[cm]?ts$/.test(file)) return Promise.resolve();
  typeScriptLoader ??= import('tsx/esm/api').then(({ register }) => register());
  return typeScriptLoader;
}

/** A package directory's entry point: `exports` (string or `.`), else `main`, else index.ts / index.js. */
function packageEntry(dir: string): string {
  const manifest = path.join(dir, 'package.json');
  if (existsSync(manifest)) {
    const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { exports?: unknown; main?: string };
    const dot = typeof pkg.exports === 'object' && pkg.exports !== null ? (pkg.exports as Record<string, unknown>)['.'] : pkg.exports;
    const target =
      typeof dot === 'string'
        ? dot
        : typeof dot === 'object' && dot !== null
          ? ((dot as Record<string, unknown>).import ?? (dot as Record<string, unknown>).default)
          : pkg.main;
    if (typeof target === 'string') return path.join(dir, target);
  }
  const index = ['index.ts', 'index.js', 'index.mjs'].map((f) => path.join(dir, f)).find((f) => existsSync(f));
  if (!index) throw new Error(`no package.json entry point or index file in ${dir}`);
  return index;
}

export interface ModuleChoices<M> {
  /** The built-in of this name, if there is one. */
  builtIn?(name: string): (() => Promise<M>) | undefined;
  /** Where a relative path starts (default: the working directory). */
  cwd?: string;
}

/**
 * Imports the module config names (an adapter, a harness plugin, a domain plugin): a built-in by
 * name, else a path (starting with `.` or absolute; a directory loads its package's entry point),
 * else a package. Errors are the import's own; the caller says which config key named it.
 */
export async function loadModule<M>(spec: string, { builtIn, cwd = process.cwd() }: ModuleChoices<M> = {}): Promise<M> {
  const own = builtIn?.(spec);
  if (own) return own();
  if (!spec.startsWith('.') && !path.isAbsolute(spec)) return import(spec) as Promise<M>;
  const target = path.resolve(cwd, spec);
  const file = existsSync(target) && statSync(target).isDirectory() ? packageEntry(target) : target;
  await readyFor(file);
  return import(pathToFileURL(file).href) as Promise<M>;
}
