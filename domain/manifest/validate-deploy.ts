import { DEPLOY_STRATEGIES } from '../../core/ports/environments.ts';
import { IGNORED_KEYS, type Problems, at, expectObject, isObject, isString, unknownKeys } from './problems.ts';
import { checkProtection } from './validate-protection.ts';
import { declaredNames, describeUndeclared, undeclaredInputs, type PipelineInputDeclarations } from './pipeline-inputs.ts';

/** `registry`: 'svc' (native), 'none', or {host, namespace?, auth?: {username_secret?, token_secret?}}. */
export function checkRegistry(problems: Problems, value: unknown): void {
  if (value === undefined || value === 'svc' || value === 'none') return;
  if (!isObject(value)) {
    problems.add('registry', "registry must be 'svc', 'none' or a mapping with host");
    return;
  }
  unknownKeys(problems, value, ['host', 'namespace', 'auth'], 'registry');
  if (!isString(value.host)) problems.add('registry.host', 'registry.host is required');
  if (value.namespace !== undefined && !isString(value.namespace)) problems.add('registry.namespace', 'registry.namespace must be a string');
  if (value.auth !== undefined && expectObject(problems, value.auth, 'registry.auth')) {
    unknownKeys(problems, value.auth, ['username_secret', 'token_secret'], 'registry.auth');
    for (const key of ['username_secret', 'token_secret']) {
      if (value.auth[key] !== undefined && !isString(value.auth[key])) problems.add(`registry.auth.${key}`, `registry.auth.${key} must be a secret name`);
    }
  }
}

export function checkServices(problems: Problems, value: unknown): void {
  if (value === undefined || !expectObject(problems, value, 'services')) return;
  for (const [name, service] of Object.entries(value)) {
    const path = at('services', name);
    if (!expectObject(problems, service, path)) continue;
    unknownKeys(problems, service, ['image', 'build', 'command', 'ports', 'environment', 'healthcheck', 'deploy_strategy'], path, IGNORED_KEYS.service);
    checkRunSettings(problems, service, path);
    if (service.build !== undefined && expectObject(problems, service.build, at(path, 'build'))) {
      unknownKeys(problems, service.build, ['context', 'dockerfile', 'image'], at(path, 'build'));
    }
    if (service.image !== undefined && !isString(service.image)) problems.add(at(path, 'image'), 'image must be a string');
  }
}

export function checkEnvironments(problems: Problems, value: unknown, pipelines: unknown): void {
  if (value === undefined || !expectObject(problems, value, 'environments')) return;
  const known = isObject(pipelines) ? pipelines : {};
  for (const [name, env] of Object.entries(value)) {
    const path = at('environments', name);
    if (!expectObject(problems, env, path)) continue;
    unknownKeys(problems, env, ['type', 'namespace', 'db_ref', 'kind', 'pipeline', 'pipeline_inputs', 'protection'], path);
    if (env.protection !== undefined) checkProtection(problems, env.protection, at(path, 'protection'));
    if (env.type !== undefined && env.type !== 'persistent' && env.type !== 'temporary') {
      problems.add(at(path, 'type'), "type must be 'persistent' or 'temporary'");
    }
    if (env.pipeline !== undefined) {
      if (!isString(env.pipeline)) problems.add(at(path, 'pipeline'), 'pipeline must be a pipeline name');
      else if (!Object.hasOwn(known, env.pipeline)) problems.add(at(path, 'pipeline'), `Environment '${name}' names unknown pipeline '${env.pipeline}'`);
    }
    if (env.pipeline_inputs !== undefined && expectObject(problems, env.pipeline_inputs, at(path, 'pipeline_inputs'))) {
      const declared = isString(env.pipeline) && isObject(known[env.pipeline]) ? (known[env.pipeline] as Record<string, unknown>).inputs : undefined;
      if (isObject(declared)) checkDeclared(problems, env.pipeline_inputs, declared, env.pipeline as string, at(path, 'pipeline_inputs'));
    }
  }
}

/** An environment's pipeline_inputs name only inputs its pipeline declares, when it declares them (a typo would run with the default). */
function checkDeclared(problems: Problems, given: Record<string, unknown>, declared: Record<string, unknown>, pipeline: string, path: string): void {
  const names = declared as PipelineInputDeclarations;
  for (const name of undeclaredInputs(names, given))
    problems.add(at(path, name), `pipeline '${pipeline}' declares no input ${describeUndeclared(names, name)}: ${declaredNames(names)}`);
}

/** `8080`, `"18080:8080"` (host:container) or `"127.0.0.1:18080:8080"` (address:host:container). */
export const PORT = /^(?:(?:(\d{1,3}(?:\.\d{1,3}){3}):)?(\d{1,5}):)?(\d{1,5})$/;

/** What a deployer runs: `command` (string or list), `ports`, `environment` (strings), `healthcheck.command`, `deploy_strategy`. */
function checkRunSettings(problems: Problems, service: Record<string, unknown>, path: string): void {
  const { command, ports, environment, healthcheck, deploy_strategy: strategy } = service;
  if (command !== undefined && !isString(command) && !(Array.isArray(command) && command.length > 0 && command.every(isString)))
    problems.add(at(path, 'command'), 'command must be a string or a list of strings');
  if (ports !== undefined) {
    if (!Array.isArray(ports))
      problems.add(at(path, 'ports'), 'ports must be a list of ports (8080, "18080:8080" for host:container, or "127.0.0.1:18080:8080")');
    else
      ports.forEach((p, i) => {
        if (!(Number.isInteger(p) || (isString(p) && PORT.test(p))))
          problems.add(`${at(path, 'ports')}[${i}]`, 'a port is a number, "host:container" or "address:host:container"');
      });
  }
  if (environment !== undefined && expectObject(problems, environment, at(path, 'environment'))) {
    for (const [key, value] of Object.entries(environment))
      if (!isString(value) && typeof value !== 'number') problems.add(at(at(path, 'environment'), key), 'an environment value must be a string');
  }
  if (strategy !== undefined && !(DEPLOY_STRATEGIES as readonly unknown[]).includes(strategy))
    problems.add(at(path, 'deploy_strategy'), `deploy_strategy must be ${DEPLOY_STRATEGIES.map((s) => `'${s}'`).join(' or ')}`);
  if (healthcheck !== undefined && expectObject(problems, healthcheck, at(path, 'healthcheck'))) {
    unknownKeys(problems, healthcheck, ['command', 'interval_seconds', 'timeout_seconds', 'retries'], at(path, 'healthcheck'));
    if (!isString(healthcheck.command))
      problems.add(at(at(path, 'healthcheck'), 'command'), 'healthcheck.command is required (a shell command run in the container; exit 0 is healthy)');
    for (const key of ['interval_seconds', 'timeout_seconds', 'retries'])
      if (healthcheck[key] !== undefined && !(Number.isInteger(healthcheck[key]) && (healthcheck[key] as number) > 0))
        problems.add(at(at(path, 'healthcheck'), key), `${key} must be a positive integer`);
  }
}
