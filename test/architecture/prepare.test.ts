// `npm install` runs scripts/prepare.mjs: it builds dist/ only when a source is newer than the last
// build, so the README's `npm install && npm start` does not recompile on every start. Tried in a
// folder of its own whose build only stamps, never on the checkout's dist/ (other tests use it).
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';

test('prepare builds a fresh checkout, skips an up-to-date dist/, and builds again once a source changes', (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-prepare-'));
  try {
    mkdirSync(path.join(dir, 'scripts'));
    mkdirSync(path.join(dir, 'core'));
    mkdirSync(path.join(dir, 'client', 'generated'), { recursive: true });
    writeFileSync(path.join(dir, 'client', 'generated', 'openapi.ts'), 'export {};\n');
    copyFileSync('scripts/prepare.mjs', path.join(dir, 'scripts', 'prepare.mjs'));
    writeFileSync(path.join(dir, 'core', 'main.ts'), 'export {};\n');
    writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'prep', private: true, scripts: { build: 'mkdir -p dist && echo compiled && touch dist/.built' } }),
    );
    const prepare = () => execFileSync('node', ['scripts/prepare.mjs'], { cwd: dir, encoding: 'utf8' });
    t.regex(prepare(), /compiled/, 'no dist/: built');
    t.regex(prepare(), /dist\/ is up to date/);
    const later = new Date(Date.now() + 5000);
    utimesSync(path.join(dir, 'core', 'main.ts'), later, later);
    t.regex(prepare(), /compiled/, 'a source newer than the build: built again');
    const earlier = new Date(Date.now() - 60_000);
    utimesSync(path.join(dir, 'core', 'main.ts'), earlier, earlier);
    t.regex(prepare(), /dist\/ is up to date/);
    const evenLater = new Date(Date.now() + 10_000);
    utimesSync(path.join(dir, 'client', 'generated', 'openapi.ts'), evenLater, evenLater);
    t.regex(prepare(), /compiled/, "svc/client's regenerated types: built again");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
