import test from 'ava';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../core/config/load.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every config file we ship is one a user can start from: it must pass the same validation as theirs. */
const shipped = [
  'config/example.yaml',
  'config/test.yaml',
  ...readdirSync(path.join(ROOT, 'examples'), { recursive: true, encoding: 'utf8' })
    .filter((f) => /svc\.ya?ml$/.test(f))
    .map((f) => path.join('examples', f)),
];

for (const file of shipped) {
  test(`${file} is a valid configuration`, (t) => {
    t.notThrows(() => loadConfig({ cwd: ROOT, env: { SVC_CONFIG: file } }));
  });
}

test('config/example.yaml documents every default as it is', (t) => {
  const fromExample = loadConfig({ cwd: ROOT, env: { SVC_CONFIG: 'config/example.yaml' } });
  const defaults = loadConfig({ cwd: path.join(ROOT, 'docs'), env: {} });
  t.deepEqual({ ...fromExample, data_dir: '' }, { ...defaults, data_dir: '' });
});
