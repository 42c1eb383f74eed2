import test from 'ava';
import { loadManifest, parseYaml } from '../../domain/manifest/parse.ts';
import { validateManifest } from '../../domain/manifest/validate.ts';
import { canonicalJson, manifestHash } from '../../domain/manifest/hash.ts';

const errorsOf = (yaml: string) => {
  const result = loadManifest(yaml);
  return result.ok ? [] : result.errors;
};

test('a valid manifest parses; run becomes script.run, script.command becomes script.run, depends_on is always a list', (t) => {
  const result = loadManifest(`
workflows:
  deploy:
    db_access: read_only
    with_apis: [billing]
    steps:
      - name: build
        run: npm run build
      - name: test
        script: { command: npm test, timeout: 60 }
        depends_on: [build]
      - name: review
        agent: { name: reviewer, harness: claude, toolchains: [node] }
        depends_on: [test]
        env_overrides: { API_TOKEN: "\${secret.API_TOKEN}", MODE: fast }
        if: inputs.review == true
pipelines:
  release:
    trigger: { vcshost: { event: push, branch: main } }
    steps:
      - { name: build, action: { type: build, with: { services: [api] } } }
      - { name: ship, action: { type: deploy, with: { env_name: staging } }, depends_on: [build] }
      - { name: note, agent: { prompt: "Summarize" }, depends_on: [ship] }
x-svc:
  defaults: { priority: 1, labels: [manifest], hints: { worker_type: node-worker } }
  agents:
    version: 1
    profiles:
      fast: [{ harness: claude, model: haiku }, { profile: careful }]
      careful: [{ harness: codex, reasoning_effort: high }]
    availability: { drop_unavailable: true }
  api_spec: { billing: { url: https://billing.example.com/openapi.json } }
registry: { host: registry.example.com, namespace: acme }
services: { api: { build: { context: ., dockerfile: Dockerfile } } }
environments:
  staging: { type: persistent, pipeline: release, pipeline_inputs: { force_rebuild: false } }
`);
  t.true(result.ok, JSON.stringify(!result.ok && result.errors));
  if (!result.ok) return;
  const steps = result.manifest.workflows!.deploy.steps;
  t.deepEqual(steps[0], { name: 'build', script: { run: 'npm run build' }, depends_on: [] });
  t.deepEqual(steps[1], { name: 'test', script: { run: 'npm test', timeout: 60 }, depends_on: ['build'] });
  t.regex(result.hash, /^sha256:[0-9a-f]{64}$/);
  t.deepEqual(result.manifest.environments!.staging.pipeline, 'release');
});

test('every problem is reported at once, with its path and the spec messages', (t) => {
  const errors = errorsOf(`
workflows:
  deploy:
    steps:
      - name: a
        run: echo a
        depends_on: [c]
      - name: b
        run: echo b
        depends_on: [a, ghost]
      - name: c
        run: echo c
        depends_on: [b]
      - name: a
        run: again
      - name: nothing
      - name: both
        run: x
        agent: { name: y }
`);
  t.deepEqual(errors, [
    { path: 'workflows.deploy.steps[4]', message: 'Workflow step must define exactly one of action, script, agent, or run' },
    { path: 'workflows.deploy.steps[5]', message: 'Workflow step must define exactly one of action, script, agent, or run' },
    { path: 'workflows.deploy.steps[3].name', message: "Duplicate step name 'a' in workflow 'deploy'" },
    { path: 'workflows.deploy.steps[1].depends_on[1]', message: "Step 'b' depends on unknown step 'ghost' in workflow 'deploy'" },
    { path: 'workflows.deploy.steps[0].depends_on', message: "Cycle detected in workflow 'deploy': a -> c -> b -> a" },
  ]);
});

test('a self-dependency is a cycle of one', (t) => {
  t.deepEqual(errorsOf('workflows: { w: { steps: [{ name: s, run: x, depends_on: [s] }] } }'), [
    { path: 'workflows.w.steps[0].depends_on', message: "Cycle detected in workflow 'w': s -> s" },
  ]);
});

test('env overrides: reserved names, lowercase keys, non-secret expressions, secrets required, 4 KB merged', (t) => {
  const big = 'x'.repeat(2100);
  const errors = errorsOf(`
workflows:
  w:
    env_overrides: { SHARED: "${big}" }
    steps:
      - name: s
        run: x
        env_overrides:
          PATH: /evil
          SVC_INTERNAL_API_KEY: "\${secret.K}"
          lower_case: v
          GREETING: "\${env.HOME}"
          DB_PASSWORD: hunter2
          OK: "\${secret.FINE}"
          MORE: "${big}"
`);
  t.deepEqual(errors, [
    { path: 'workflows.w.steps[0].env_overrides.PATH', message: "Invalid env override 'PATH': reserved variable" },
    { path: 'workflows.w.steps[0].env_overrides.SVC_INTERNAL_API_KEY', message: "Invalid env override 'SVC_INTERNAL_API_KEY': reserved variable" },
    { path: 'workflows.w.steps[0].env_overrides.lower_case', message: "Invalid env override 'lower_case': lowercase key (names are upper case: A-Z, 0-9, _)" },
    {
      path: 'workflows.w.steps[0].env_overrides.GREETING',
      message: "Invalid env override 'GREETING': non-secret expression '${env.HOME}' (only ${secret.<NAME>} is allowed)",
    },
    {
      path: 'workflows.w.steps[0].env_overrides.DB_PASSWORD',
      message: "Invalid env override 'DB_PASSWORD': non-secret expression where a secret is required (use ${secret.<NAME>})",
    },
    {
      path: 'workflows.w.steps[0].env_overrides',
      message: `Invalid env overrides for step 's' in workflow 'w': merged payload is ${JSON.stringify({ SHARED: big, PATH: '/evil', SVC_INTERNAL_API_KEY: '${secret.K}', lower_case: 'v', GREETING: '${env.HOME}', DB_PASSWORD: 'hunter2', OK: '${secret.FINE}', MORE: big }).length} bytes, over the 4 KB limit`,
    },
  ]);
});

test('unknown action types, unknown x-svc keys, profile cycles, bad agents version, unknown references', (t) => {
  const errors = errorsOf(`
workflows:
  w:
    with_apis: [billing, ghost]
    steps:
      - { name: s, action: { type: teleport } }
pipelines:
  p:
    steps: []
  q:
    steps:
      - { name: a, agent: { name: not-a-prompt } }
x-svc:
  defaults: { priority: 9, colour: blue, harness_profile: missing }
  agents:
    version: 2
    profiles:
      a: [{ profile: b }]
      b: [{ profile: a }]
      c: [{ harness: claude, speed: fast }]
  api_spec: { billing: {} }
  brandng: {}
environments:
  prod: { pipeline: nope }
registry: { namespace: x }
`);
  t.deepEqual(errors, [
    { path: 'x-svc.brandng', message: "Unknown key 'brandng' in x-svc; did you mean 'branding'?" },
    { path: 'x-svc.defaults.colour', message: "Unknown key 'colour' in x-svc.defaults" },
    { path: 'x-svc.defaults.priority', message: 'priority must be an integer from 0 to 4' },
    { path: 'x-svc.defaults.harness_profile', message: "Unknown harness profile 'missing'; define it under x-svc.agents.profiles" },
    { path: 'x-svc.agents.version', message: 'x-svc.agents.version must be 1' },
    { path: 'x-svc.agents.profiles.c[0].speed', message: "Unknown key 'speed' in x-svc.agents.profiles.c[0]" },
    { path: 'x-svc.agents.profiles.a', message: 'Profile cycle detected in x-svc.agents: a -> b -> a' },
    { path: 'workflows.w.with_apis[1]', message: "Unknown API 'ghost' in with_apis; declare it under x-svc.api_spec" },
    {
      path: 'workflows.w.steps[0].action.type',
      message: "Unknown action type 'teleport'; expected one of build, release, deploy, run, job, create-pr, notify, env-ensure, env-delete",
    },
    { path: 'pipelines.p.steps', message: 'steps must be a list with at least one step' },
    { path: 'pipelines.q.steps[0].agent.name', message: "Unknown key 'name' in pipelines.q.steps[0].agent" },
    { path: 'pipelines.q.steps[0].agent.prompt', message: 'agent.prompt is required' },
    { path: 'registry.host', message: 'registry.host is required' },
    { path: 'environments.prod.pipeline', message: "Environment 'prod' names unknown pipeline 'nope'" },
  ]);
});

test('pipeline steps use the same graph rules, naming the pipeline', (t) => {
  const errors = errorsOf(`
pipelines:
  p:
    steps:
      - { name: a, run: x, depends_on: [b] }
      - { name: b, run: y, depends_on: [a, z] }
      - { name: a, run: z }
`);
  t.deepEqual(errors, [
    { path: 'pipelines.p.steps[2].name', message: "Duplicate step name 'a' in pipeline 'p'" },
    { path: 'pipelines.p.steps[1].depends_on[1]', message: "Step 'b' depends on unknown step 'z' in pipeline 'p'" },
    { path: 'pipelines.p.steps[0].depends_on', message: "Cycle detected in pipeline 'p': a -> b -> a" },
  ]);
});

test('a pipeline step may ask for approval with true or false, nothing else', (t) => {
  t.deepEqual(
    errorsOf(`
pipelines:
  p:
    steps:
      - { name: a, run: x, approval: true }
      - { name: b, run: y, approval: yes please }
`),
    [{ path: 'pipelines.p.steps[1].approval', message: 'approval must be true or false' }],
  );
});

test('YAML syntax errors and duplicate keys are reported with their line; a non-mapping document is refused', (t) => {
  const dup = parseYaml('workflows:\n  a: {}\n  a: {}\n');
  t.is(dup.errors.length, 1);
  t.regex(dup.errors[0].message, /^invalid YAML at line 3/);
  t.regex(errorsOf('workflows: [unclosed')[0].message, /^invalid YAML/);
  t.deepEqual(validateManifest(['a list']), [{ path: '', message: 'the manifest must be a mapping, got a list' }]);
  t.true(loadManifest('').ok, 'an empty manifest is valid');
});

test('the hash ignores key order, whitespace, comments and the run shorthand, and changes with any value', (t) => {
  const a = loadManifest('workflows:\n  w:\n    steps:\n      - name: s\n        run: echo hi\nregistry: none\n');
  const b = loadManifest('# comment\nregistry:   none\nworkflows: { w: { steps: [ { script: { run: "echo hi" }, name: s } ] } }\n');
  const c = loadManifest('registry: svc\nworkflows: { w: { steps: [ { run: "echo hi", name: s } ] } }\n');
  t.true(a.ok && b.ok && c.ok);
  if (!a.ok || !b.ok || !c.ok) return;
  t.is(a.hash, b.hash);
  t.not(a.hash, c.hash);
  t.is(canonicalJson({ b: 1, a: [{ d: 2, c: null }] }), '{"a":[{"c":null,"d":2}],"b":1}');
  t.is(manifestHash({}), 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
});

test('unknown keys anywhere are errors with their path and the nearest known key; x- keys are extensions', (t) => {
  const errors = errorsOf(`
workflow:
  w: { steps: [{ name: a, run: x }] }
workflows:
  fix:
    x-owner: platform
    steps:
      - { name: plan, run: echo plan }
      - { name: test, run: echo test, depend_on: [plan] }
  linked:
    $ref: ./shared/fix.yaml
pipelines:
  ship:
    trigers: { manual: true }
    steps:
      - { name: build, action: { type: build, width: { services: [api] } } }
      - { name: check, script: { run: make, timout: 30 } }
services:
  api: { build: { context: ., dockerfle: Dockerfile } }
environments:
  staging: { piepline: ship }
x-acme: { anything: [goes, here] }
`);
  t.deepEqual(errors, [
    { path: 'workflow', message: "Unknown key 'workflow' in the manifest; did you mean 'workflows'?" },
    { path: 'workflows.fix.steps[1].depend_on', message: "Unknown key 'depend_on' in workflows.fix.steps[1]; did you mean 'depends_on'?" },
    { path: 'workflows.linked.$ref', message: "Unknown key '$ref' in workflows.linked" },
    { path: 'workflows.linked.steps', message: "steps is required: workflow 'linked' must list its steps here ($ref is not supported)" },
    { path: 'pipelines.ship.trigers', message: "Unknown key 'trigers' in pipelines.ship; did you mean 'trigger'?" },
    { path: 'pipelines.ship.steps[0].action.width', message: "Unknown key 'width' in pipelines.ship.steps[0].action; did you mean 'with'?" },
    { path: 'pipelines.ship.steps[1].script.timout', message: "Unknown key 'timout' in pipelines.ship.steps[1].script; did you mean 'timeout'?" },
    { path: 'services.api.build.dockerfle', message: "Unknown key 'dockerfle' in services.api.build; did you mean 'dockerfile'?" },
    { path: 'environments.staging.piepline', message: "Unknown key 'piepline' in environments.staging; did you mean 'pipeline'?" },
  ]);
});

test('a pipeline declares its inputs: required, a string default, a description; kept as written', (t) => {
  const result = loadManifest(`
pipelines:
  release:
    inputs:
      version: { required: true, description: the version to tag }
      channel: { default: '' }
      notes: { x-ui: textarea }
    steps:
      - { name: tag, run: 'echo v\${inputs.version}' }
`);
  t.true(result.ok, JSON.stringify(!result.ok && result.errors));
  if (!result.ok) return;
  t.deepEqual(result.manifest.pipelines!.release.inputs, {
    version: { required: true, description: 'the version to tag' },
    channel: { default: '' },
    notes: { 'x-ui': 'textarea' },
  });
  t.deepEqual(errorsOf('pipelines:\n  p:\n    inputs: { v: { default: true } }\n    steps: [{ name: a, run: x }]\n'), [
    { path: 'pipelines.p.inputs.v.default', message: 'default must be a string, got a boolean: quote it, so YAML keeps it as written' },
  ]);
});
