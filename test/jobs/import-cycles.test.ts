import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * No import loop inside the jobs domain: every file's relative imports (type-only ones too) form a
 * graph without cycles, so each sub-domain folder can be read from the bottom up.
 */
const DOMAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../plugins/jobs');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    return e.isDirectory() ? sources(full) : e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The files of the domain that `file` imports (static, dynamic, re-exports). */
export function importsOf(file: string, text: string): string[] {
  const specs = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]);
  return specs.map((s) => path.resolve(path.dirname(file), s)).filter((f) => f.startsWith(DOMAIN + path.sep));
}

/** Every elementary loop found by a depth-first walk, each as the file names around it. */
export function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

test('the cycle finder sees a loop, and none in a chain', (t) => {
  t.deepEqual(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
      ]),
    ),
    [['a', 'b', 'c', 'a']],
  );
  t.deepEqual(
    cycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', []],
      ]),
    ),
    [],
  );
  t.deepEqual(importsOf(path.join(DOMAIN, 'x/a.ts'), "import type { A } from '../y/b.ts';\nimport { C } from '../../../core/c.ts';"), [
    path.join(DOMAIN, 'y/b.ts'),
  ]);
});

test('plugins/jobs has no import loop', (t) => {
  const files = sources(DOMAIN);
  t.true(files.length > 30, 'the domain was found');
  const graph = new Map(files.map((f) => [f, importsOf(f, readFileSync(f, 'utf8'))]));
  const loops = cycles(graph).map((loop) => loop.map((f) => path.relative(DOMAIN, f)).join(' → '));
  t.deepEqual(loops, []);
});
