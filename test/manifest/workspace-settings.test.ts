import test from 'ava';
import { loadManifest } from '../../domain/manifest/parse.ts';

const errorsOf = (yaml: string) => {
  const result = loadManifest(yaml);
  return result.ok ? [] : result.errors;
};

test('workspace and git settings of workflows, pipelines and steps are accepted and kept', (t) => {
  const result = loadManifest(`
workflows:
  fix:
    git: { branch: "svc/fix/\${run_id}", commit: auto, push: required, depth: 5 }
    workspace: { mode: job, sparse: [apps/web, libs] }
    steps:
      - { name: plan, run: "true" }
      - { name: build, run: "true", depends_on: [plan], workspace: { mode: session, key: node-cache } }
      - { name: lint, run: "true", workspace: { mode: isolated } }
pipelines:
  ci:
    git: { branch: "ci/\${run_id}" }
    workspace: { mode: isolated }
    steps:
      - { name: test, run: "true", workspace: { mode: job } }
`);
  t.true(result.ok, JSON.stringify(result));
  if (!result.ok) return;
  const fix = result.manifest.workflows!.fix;
  t.deepEqual(fix.git, { branch: 'svc/fix/${run_id}', commit: 'auto', push: 'required', depth: 5 });
  t.deepEqual(fix.workspace, { mode: 'job', sparse: ['apps/web', 'libs'] });
  t.deepEqual(fix.steps[1].workspace, { mode: 'session', key: 'node-cache' });
  t.deepEqual(result.manifest.pipelines!.ci.steps[0].workspace, { mode: 'job' });
});

test('bad workspace and git settings are named by path', (t) => {
  t.deepEqual(
    errorsOf(`
workflows:
  w:
    workspace: { mode: shared, size: 3, sparse: [apps, ../etc] }
    git: { push: always, branch: 7, depth: 0, shallow: true }
    steps:
      - { name: a, run: "true", workspace: { mode: session } }
      - { name: b, run: "true", workspace: { mode: job, key: cache } }
      - { name: c, run: "true", workspace: { mode: session, key: "" } }
      - { name: d, run: "true", workspace: isolated }
pipelines:
  p:
    workspace: { key: x }
    steps: [{ name: s, run: "true" }]
`),
    [
      { path: 'workflows.w.git.shallow', message: "Unknown key 'shallow' in workflows.w.git" },
      { path: 'workflows.w.git.depth', message: 'git.depth must be a whole number from 1 to 1000000' },
      { path: 'workflows.w.git.branch', message: 'git.branch must be a non-empty string' },
      { path: 'workflows.w.git.push', message: 'git.push must be one of never, on_success, required' },
      { path: 'workflows.w.workspace.size', message: "Unknown key 'size' in workflows.w.workspace" },
      { path: 'workflows.w.workspace.sparse[1]', message: 'workspace.sparse[1] must not contain ".", ".." or ".git" as a part' },
      { path: 'workflows.w.workspace.mode', message: "workspace.mode must be one of job, session, isolated, got 'shared'" },
      {
        path: 'workflows.w.steps[0].workspace.key',
        message: "workspace.mode 'session' needs workspace.key (the name jobs share the workspace under)",
      },
      { path: 'workflows.w.steps[1].workspace.key', message: "workspace.key names a shared workspace: it needs workspace.mode 'session'" },
      { path: 'workflows.w.steps[2].workspace.key', message: 'workspace.key must be a non-empty string of at most 200 characters' },
      { path: 'workflows.w.steps[3].workspace', message: 'workflows.w.steps[3].workspace must be a mapping, got a string' },
      { path: 'pipelines.p.workspace.key', message: "workspace.key names a shared workspace: it needs workspace.mode 'session'" },
    ],
  );
});
