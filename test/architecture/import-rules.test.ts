import test from 'ava';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSource, stripComments, tsFiles } from './sql-tables.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What each top-level folder may import besides itself (docs/architecture.md says why). */
const MAY_IMPORT: Record<string, string[]> = {
  core: ['domain'],
  domain: ['core'],
  plugins: ['core', 'domain'],
  adapters: ['core', 'domain'],
  harnesses: ['core', 'domain'],
  client: [],
  cli: ['domain', 'client'],
  console: ['client'],
  migrations: [],
};

/** The few places that load built-ins by name, or run a domain's code offline. */
const EXCEPTIONS: Record<string, string[]> = {
  'plugins/harnesses/registry.ts': ['harnesses'],
  'cli/commands/secrets-rekey.ts': ['core', 'plugins'],
  'cli/main.ts': ['core'],
  'cli/args.ts': ['core'], // core/closest.ts, the one "did you mean"
  'cli/commands/job-views.ts': ['core'], // core/is-object.ts, the one isObject
};

/** Folders whose sub-folders are separate units that must not import each other. */
const UNITS: Record<string, (parts: string[]) => string | null> = {
  plugins: (p) => (p.length > 2 ? p[1] : null),
  // adapters/<kind>/<file>.ts is shared by that kind's adapters
  adapters: (p) => (p.length > 3 ? `${p[1]}/${p[2]}` : null),
  harnesses: (p) => (p.length > 2 ? p[1] : null),
};
/** Units every sibling may use. */
const SHARED_UNITS = new Set(['harnesses/common']);

function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const m of stripComments(readSource(ROOT, file)).matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    out.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1])));
  }
  return out;
}

test('each top-level folder imports only what docs/architecture.md allows it', (t) => {
  const broken: string[] = [];
  for (const top of Object.keys(MAY_IMPORT)) {
    for (const file of tsFiles(ROOT, top)) {
      const parts = file.split('/');
      for (const target of importsOf(file)) {
        const targetParts = target.split('/');
        const targetTop = targetParts[0];
        if (targetTop === top) {
          const unit = UNITS[top];
          const [from, to] = unit ? [unit(parts), unit(targetParts)] : [null, null];
          if (from && to) {
            if (from !== to && !SHARED_UNITS.has(`${top}/${to}`)) broken.push(`${file} → ${target} (${top} do not import each other)`);
          }
          continue;
        }
        if (!MAY_IMPORT[top].includes(targetTop) && !(EXCEPTIONS[file] ?? []).includes(targetTop)) broken.push(`${file} → ${target}`);
      }
    }
  }
  t.deepEqual(broken, []);
});

test('no routes in core/', (t) => {
  const withRoutes = tsFiles(ROOT, 'core').filter((f) => /\bServerRoute\b|server\.route\(/.test(stripComments(readSource(ROOT, f))));
  t.deepEqual(withRoutes, []);
});
