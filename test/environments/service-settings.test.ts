import test from 'ava';
import { loadManifest } from '../../domain/manifest/parse.ts';
import { example } from './helpers.ts';

test('the example manifests are valid', (t) => {
  for (const name of ['staging.yaml', 'push-to-staging.yaml', 'pull-request-previews.yaml']) {
    const result = loadManifest(example(name));
    t.true(result.ok, `${name}: ${JSON.stringify(!result.ok && result.errors)}`);
  }
});

test('service run settings are checked with their paths', (t) => {
  const result = loadManifest(`
services:
  web:
    command: 7
    ports: [8080, "18080:80", "x"]
    environment: { A: { nested: true } }
    healthcheck: { interval_seconds: 0, every: 1 }
`);
  t.false(result.ok);
  const problems = !result.ok ? result.errors.map((e) => `${e.path}: ${e.message}`) : [];
  t.true(problems.includes('services.web.command: command must be a string or a list of strings'), problems.join('\n'));
  t.true(problems.includes('services.web.ports[2]: a port is a number, or "host:container"'));
  t.true(problems.includes('services.web.environment.A: an environment value must be a string'));
  t.true(problems.some((p) => p.startsWith('services.web.healthcheck.command: healthcheck.command is required')));
  t.true(problems.includes('services.web.healthcheck.interval_seconds: interval_seconds must be a positive integer'));
  t.true(problems.some((p) => p.startsWith('services.web.healthcheck.every')));
});
