import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../../core/config/load.ts';

/** SVC_WORKER_URLS and `worker.urls`: the forms accepted, and boots that fail naming the variable. */
const emptyDir = () => mkdtempSync(path.join(tmpdir(), 'svc-worker-urls-'));
const urlsFrom = (value: string) => loadConfig({ env: { SVC_WORKER_URLS: value }, cwd: emptyDir() }).worker.urls;
function problemFor(value: string): string {
  try {
    urlsFrom(value);
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

test('no SVC_WORKER_URLS: no remote workers', (t) => {
  t.deepEqual(loadConfig({ env: {}, cwd: emptyDir() }).worker.urls, {});
  t.deepEqual(urlsFrom(''), {});
});

test('SVC_WORKER_URLS takes a JSON object or type=url pairs; trailing slashes are dropped', (t) => {
  t.deepEqual(urlsFrom('{"python-worker": "http://py.internal:4701/", "rust-worker": "https://rs.internal/svc"}'), {
    'python-worker': 'http://py.internal:4701',
    'rust-worker': 'https://rs.internal/svc',
  });
  t.deepEqual(urlsFrom('python-worker=http://py:4701, node-worker=https://node.example/'), {
    'python-worker': 'http://py:4701',
    'node-worker': 'https://node.example',
  });
});

test('worker.urls in a config file is a mapping, checked the same way', (t) => {
  const cwd = emptyDir();
  writeFileSync(path.join(cwd, 'svc.yaml'), 'worker:\n  urls:\n    python-worker: http://py:4701\n');
  t.deepEqual(loadConfig({ env: {}, cwd }).worker.urls, { 'python-worker': 'http://py:4701' });
  writeFileSync(path.join(cwd, 'svc.yaml'), 'worker:\n  urls:\n    python-worker: ftp://py\n');
  const err = t.throws(() => loadConfig({ env: {}, cwd }), { instanceOf: ConfigError });
  t.regex(err!.message, /worker\.urls: .*the URL of worker type 'python-worker' must be an http\(s\) base URL/);
});

test('a malformed SVC_WORKER_URLS fails naming the variable and what is wrong', (t) => {
  for (const [value, why] of [
    ['{"python-worker": ', /not valid JSON/],
    ['["http://x"]', /must be of type object/],
    ['python-worker', /'python-worker' is not type=url/],
    ['a=http://x,a=http://y', /worker type 'a' is named twice/],
    ['python-worker=ftp://files', /the URL of worker type 'python-worker' must be an http\(s\) base URL/],
    ['python-worker=http://user:pw@py', /without credentials/],
    ['{"python-worker": 4701}', /got 4701/],
    ['bad type!=http://x', /'bad type!' is not a worker type name/],
  ] as const) {
    const message = problemFor(value);
    t.regex(message, /^invalid configuration:\n {2}worker\.urls: /, value);
    t.regex(message, /\(from SVC_WORKER_URLS\)$/, value);
    t.regex(message, why, value);
  }
});

test('`svc serve` with a malformed SVC_WORKER_URLS exits 78 naming the variable', (t) => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const res = spawnSync(process.execPath, ['--import', 'tsx', 'core/main.ts', 'serve', '--roles', 'orchestrator'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/root', SVC_DATA_DIR: emptyDir(), SVC_WORKER_URLS: 'python-worker' },
  });
  t.is(res.status, 78, res.stderr);
  t.regex(res.stderr, /worker\.urls: .*'python-worker' is not type=url \(from SVC_WORKER_URLS\)/);
});
