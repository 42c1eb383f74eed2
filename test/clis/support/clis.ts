/**
 * The real coding CLIs the conformance suite runs, installed from npm at pinned versions into a
 * cache folder outside the repository (`SVC_CLI_CACHE`, else /var/cache/svc-clis for root and
 * ~/.cache/svc-clis for anyone else), one folder per
 * package and version, never committed. `npm run test:clis -- --latest` (SVC_CLIS_LATEST=1 in the
 * test processes) resolves each package's newest published version instead.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export type CliName = 'claude' | 'codex' | 'gemini' | 'opencode';

/**
 * The versions docs/harnesses.md names as tested, kept in test/clis/versions.json so that
 * examples/docker/worker-clis-image.sh installs the same ones into the worker image.
 */
export const PINNED: Record<CliName, { pkg: string; version: string }> = JSON.parse(readFileSync(new URL('../versions.json', import.meta.url), 'utf8'));

export const CLI_NAMES = Object.keys(PINNED) as CliName[];

/** Root's home is closed to the uid attempts run as (1000), so root keeps them in /var/cache. */
export const cacheRoot = () => process.env.SVC_CLI_CACHE || (process.getuid?.() === 0 ? '/var/cache/svc-clis' : path.join(os.homedir(), '.cache', 'svc-clis'));
export const latestWanted = () => process.env.SVC_CLIS_LATEST === '1';

const resolved = new Map<CliName, string>();

/** The version this run tests: the pinned one, or with --latest the newest on the registry. */
export function versionOf(name: CliName): string {
  const known = resolved.get(name);
  if (known) return known;
  const { pkg, version } = PINNED[name];
  const fromRunner = process.env[`SVC_CLI_VERSION_${name.toUpperCase()}`];
  const v = fromRunner || (latestWanted() ? execFileSync('npm', ['view', pkg, 'version'], { encoding: 'utf8' }).trim() : version);
  resolved.set(name, v);
  return v;
}

const folderOf = (name: CliName, version: string) => path.join(cacheRoot(), `${PINNED[name].pkg.replace(/[/@]/g, '_')}@${version}`);

/** The CLI's binary, installing it first when the cache lacks it (into a temporary folder, renamed when complete). */
export function cliBin(name: CliName): string {
  const version = versionOf(name);
  const dir = folderOf(name, version);
  const bin = path.join(dir, 'node_modules', '.bin', name);
  if (existsSync(bin)) return bin;
  mkdirSync(cacheRoot(), { recursive: true });
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', partial, `${PINNED[name].pkg}@${version}`], { stdio: 'inherit' });
  try {
    renameSync(partial, dir);
  } catch (err) {
    // Another process installed it meanwhile.
    rmSync(partial, { recursive: true, force: true });
    if (!existsSync(bin)) throw err;
  }
  return bin;
}
