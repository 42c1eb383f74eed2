import test from 'ava';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadModule } from '../../core/load-module.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

test('loadModule: a built-in by name comes from its own loader', async (t) => {
  const builtIn = (name: string) => (name === 'ours' ? async () => ({ which: 'built-in' }) : undefined);
  t.deepEqual(await loadModule<{ which: string }>('ours', { builtIn }), { which: 'built-in' });
});

test('loadModule: a relative path starts at cwd; a directory loads its package entry point', async (t) => {
  const file = await loadModule<Record<string, unknown>>('./test/fixtures/harness-plugins/clash.ts', { cwd: ROOT });
  t.truthy(file.default);
  const dir = await loadModule<{ default: { id: string } }>('./examples/harness-plugin', { cwd: ROOT });
  t.is(dir.default.id, 'acme');
  const absolute = await loadModule<{ default: { id: string } }>(path.join(ROOT, 'examples/harness-plugin'), { builtIn: () => undefined });
  t.is(absolute.default.id, 'acme');
});

test('loadModule: anything else is a package; a missing one fails with the import error', async (t) => {
  const joi = await loadModule<{ default: { string: unknown } }>('joi');
  t.is(typeof joi.default.string, 'function');
  // The loader's error comes from another realm: not an instance of this one's Error.
  const err = await t.throwsAsync(loadModule('svc-no-such-package'), { any: true });
  t.is((err as NodeJS.ErrnoException).code, 'ERR_MODULE_NOT_FOUND');
});
