// `npm install` runs this (the `prepare` script): it compiles svc to dist/ (`npm run build`) unless
// dist/ is already newer than every file it is built from, so the README's
// `npm install && npm start` starts in seconds on a second run. SVC_FORCE_BUILD=1 always builds.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const SOURCES = [
  'core',
  'plugins',
  'adapters',
  'harnesses',
  'client',
  'cli',
  'migrations',
  'console',
  'config',
  'domain',
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
];
const SKIP = new Set(['node_modules']);
const STAMP = path.join('dist', '.built');

function newest(p) {
  if (!existsSync(p)) return 0;
  const s = statSync(p);
  if (!s.isDirectory()) return s.mtimeMs;
  let latest = s.mtimeMs;
  for (const entry of readdirSync(p)) if (!SKIP.has(entry)) latest = Math.max(latest, newest(path.join(p, entry)));
  return latest;
}

const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0;
if (process.env.SVC_FORCE_BUILD !== '1' && built > Math.max(...SOURCES.map(newest))) {
  console.log('svc: dist/ is up to date (SVC_FORCE_BUILD=1 npm run prepare rebuilds it)');
  process.exit(0);
}
const run = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
process.exit(run.status ?? 1);
