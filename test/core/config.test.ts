import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../core/config/load.ts';

const emptyDir = () => mkdtempSync(path.join(tmpdir(), 'svc-config-'));

test('defaults come from config/default.yaml', (t) => {
  const config = loadConfig({ env: {}, cwd: emptyDir() });
  t.is(config.server.port, 4701);
  t.deepEqual(config.roles, ['api', 'orchestrator', 'worker']);
  t.is(config.database.url, null);
  t.is(config.auth.token_ttl_days, 1);
  t.true(path.isAbsolute(config.data_dir));
  t.true(config.data_dir.endsWith('.svc-data'));
});

test('named and generic environment variables override the file', (t) => {
  const cwd = emptyDir();
  writeFileSync(path.join(cwd, 'svc.yaml'), 'server:\n  port: 5000\nauth:\n  token_ttl_days: 3\n');
  const config = loadConfig({
    cwd,
    env: { PORT: '6000', SVC_ROLES: 'api,worker', DATABASE_URL: 'postgres://x@h/db', SVC_AUTH__TOKEN_TTL_DAYS: '7', SVC_DATA_DIR: 'data' },
  });
  t.is(config.server.port, 6000);
  t.deepEqual(config.roles, ['api', 'worker']);
  t.is(config.database.url, 'postgres://x@h/db');
  t.is(config.auth.token_ttl_days, 7);
  t.is(config.data_dir, path.join(cwd, 'data'));
});

test('./svc.yaml applies when present, SVC_CONFIG names another file', (t) => {
  const cwd = emptyDir();
  writeFileSync(path.join(cwd, 'svc.yaml'), 'server:\n  port: 5001\n');
  writeFileSync(path.join(cwd, 'other.yaml'), 'server:\n  port: 5002\n');
  t.is(loadConfig({ cwd, env: {} }).server.port, 5001);
  t.is(loadConfig({ cwd, env: { SVC_CONFIG: 'other.yaml' } }).server.port, 5002);
  const missing = t.throws(() => loadConfig({ cwd, env: { SVC_CONFIG: 'nope.yaml' } }), { instanceOf: ConfigError });
  t.regex(missing!.message, /SVC_CONFIG: file not found/);
});

test('an invalid value fails with its path, reason and source', (t) => {
  const err = t.throws(() => loadConfig({ cwd: emptyDir(), env: { PORT: 'abc' } }), { instanceOf: ConfigError });
  t.regex(err!.message, /server\.port: "server\.port" must be a number \(from PORT\)/);
});

test('every problem is reported, including unknown keys', (t) => {
  const cwd = emptyDir();
  writeFileSync(path.join(cwd, 'svc.yaml'), 'server:\n  prot: 1\nroles: [api, chef]\nauth:\n  token_ttl_days: 91\n');
  const err = t.throws(() => loadConfig({ cwd, env: {} }), { instanceOf: ConfigError });
  t.regex(err!.message, /server\.prot: "server\.prot" is not allowed/);
  t.regex(err!.message, /roles\.1: "roles\[1\]" must be one of/);
  t.regex(err!.message, /auth\.token_ttl_days: .* less than or equal to 90/);
});

test('an unknown generic override is refused rather than ignored', (t) => {
  const err = t.throws(() => loadConfig({ cwd: emptyDir(), env: { SVC_SERVER__PROT: '1' } }), { instanceOf: ConfigError });
  t.regex(err!.message, /server\.prot: .* is not allowed \(from SVC_SERVER__PROT\)/);
});

test('variables the config does not own (job environment, CLI) are left alone', (t) => {
  t.notThrows(() => loadConfig({ cwd: emptyDir(), env: { SVC_JOB_ID: 'x', SVC_API_URL: 'http://h', SVC_TOKEN: 't' } }));
});

test('the server listens on loopback unless HOST (or server.host) says otherwise', (t) => {
  t.is(loadConfig({ env: {}, cwd: emptyDir() }).server.host, '127.0.0.1');
  t.is(loadConfig({ env: { HOST: '0.0.0.0' }, cwd: emptyDir() }).server.host, '0.0.0.0');
  const cwd = emptyDir();
  writeFileSync(path.join(cwd, 'svc.yaml'), 'server:\n  host: "::"\n');
  t.is(loadConfig({ env: {}, cwd }).server.host, '::');
});

test('a key that holds text keeps an environment value as written, even when it looks like a number', (t) => {
  const digits = '0'.repeat(2) + '1234567890'.repeat(6) + '12';
  const config = loadConfig({ env: { SVC_SECRETS_MASTER_KEY: digits, SVC_BOOTSTRAP_TOKEN: '1234e567', SVC_AUTH__ISSUER: 'true' }, cwd: emptyDir() });
  t.is(config.secrets.master_key, digits);
  t.is(config.auth.bootstrap_token, '1234e567');
  t.is(config.auth.issuer, 'true');
  t.is(loadConfig({ env: { SVC_SECRETS_MASTER_KEY: 'null' }, cwd: emptyDir() }).secrets.master_key, null);
});

test('builds.backend must name one of builds.builders', (t) => {
  const err = t.throws(() => loadConfig({ cwd: emptyDir(), env: {}, overrides: { builds: { backend: 'kaniko' } } }), { instanceOf: ConfigError });
  t.regex(err.message, /builds\.backend: "builds\.backend" must be a key of builds\.builders/);
  const config = loadConfig({ cwd: emptyDir(), env: {}, overrides: { builds: { backend: 'kaniko', builders: { kaniko: { namespace: 'builds' } } } } });
  t.is(config.builds.backend, 'kaniko');
});
