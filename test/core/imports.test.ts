import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
}

test('tsyringe is imported for values only through core/di.ts, which loads its polyfill first', (t) => {
  const offenders = ['core', 'plugins', 'adapters', 'harnesses', 'cli']
    .flatMap((dir) => (readdirSync(ROOT).includes(dir) ? sources(dir) : []))
    .filter((f) => f !== path.join('core', 'di.ts'))
    .filter((f) => /^import (?!type )[^;]*from 'tsyringe'/m.test(readFileSync(path.join(ROOT, f), 'utf8')));
  t.deepEqual(offenders, []);
});

test('plugins never import another plugin', (t) => {
  // Each relative import is resolved, so a plugin grouped in sub-folders (plugins/jobs/claims/…) may import its own siblings.
  const offenders = sources('plugins').filter((f) => {
    const own = f.split(path.sep)[1];
    return [...readFileSync(path.join(ROOT, f), 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)].some((m) => {
      const [top, plugin] = path.relative(ROOT, path.resolve(ROOT, path.dirname(f), m[1])).split(path.sep);
      return top === 'plugins' && plugin !== own;
    });
  });
  t.deepEqual(offenders, []);
});
