import test from 'ava';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { page, runCli, startFake, tempHome, type FakeApi } from '../cli/helpers.ts';

const MANIFEST = {
  project_id: 'proj_1',
  manifest_hash: `sha256:${'a'.repeat(64)}`,
  git_sha: 'b'.repeat(40),
  ref: 'main',
  yaml: 'registry: none\n',
  parsed: { registry: 'none' },
  synced_at: '2025-01-01T00:00:00.000Z',
  synced_by: 'usr_1',
};
const WORKFLOW = {
  name: 'review',
  db_access: 'read_only',
  steps: [
    { name: 'lint', script: { run: 'npm run lint' }, depends_on: [] },
    { name: 'check', agent: { name: 'reviewer' }, depends_on: ['lint'] },
  ],
};
const PIPELINE = { name: 'release', steps: [{ name: 'build', action: { type: 'build' }, depends_on: [] }] };
const PROBLEMS = [{ path: 'workflows.w.steps[0]', message: 'Workflow step must define exactly one of action, script, agent, or run' }];

let fake: FakeApi;
let home: string;

test.before(async () => {
  home = await tempHome();
  fake = await startFake();
  fake
    .on('GET', '/projects/proj_1/manifest', { body: MANIFEST })
    .on('POST', '/projects/proj_1/manifest', (req) =>
      (req.body as { yaml?: string }).yaml?.includes('bad')
        ? { status: 422, body: { statusCode: 422, error: 'Unprocessable Entity', message: 'invalid manifest', errors: PROBLEMS } }
        : { body: MANIFEST },
    )
    .on('POST', '/projects/proj_1/manifest/validate', (req) =>
      (req.body as { yaml?: string }).yaml?.includes('bad')
        ? { body: { valid: false, errors: PROBLEMS, manifest_hash: null } }
        : { body: { valid: true, errors: [], manifest_hash: MANIFEST.manifest_hash } },
    )
    .on('GET', '/projects/proj_1/workflows', { body: page([WORKFLOW]) })
    .on('GET', '/projects/proj_1/workflows/review', { body: WORKFLOW })
    .on('GET', '/projects/proj_1/pipelines', { body: page([PIPELINE]) })
    .on('GET', '/projects/proj_1/pipelines/release', { body: PIPELINE });
});
test.after.always(() => fake?.stop());

async function call(args: string[]) {
  const before = fake.requests.length;
  const result = await runCli(home, ['--project', 'proj_1', ...args], { SVC_API_URL: fake.url, SVC_TOKEN: 'tok' });
  return { ...result, requests: fake.requests.slice(before) };
}

test.serial('manifest sync --file posts the YAML; --ref posts the ref; 422 prints every problem and exits 1', async (t) => {
  const file = join(home, 'manifest.yaml');
  await writeFile(file, 'registry: none\n');
  const ok = await call(['manifest', 'sync', '--file', file]);
  t.is(ok.code, 0, ok.stderr);
  t.deepEqual(ok.requests[0].body, { yaml: 'registry: none\n' });
  t.regex(ok.stdout, /manifest_hash: +sha256:a{64}/);
  const byRef = await call(['manifest', 'sync', '--ref', 'v1', '--json']);
  t.deepEqual(byRef.requests[0].body, { ref: 'v1' });
  t.deepEqual(JSON.parse(byRef.stdout), MANIFEST);
  await writeFile(file, 'bad: yes\n');
  const bad = await call(['manifest', 'sync', '--file', file]);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /workflows\.w\.steps\[0\]: Workflow step must define exactly one of action, script, agent, or run/);
  t.is((await call(['manifest', 'sync', '--file', file, '--ref', 'x'])).code, 2);
});

test.serial('manifest validate exits 0 when valid and 1 when not; show prints fields or the YAML', async (t) => {
  const file = join(home, 'check.yaml');
  await writeFile(file, 'registry: none\n');
  const valid = await call(['manifest', 'validate', '--file', file]);
  t.is(valid.code, 0);
  t.regex(valid.stdout, /Manifest is valid \(sha256:a+\)/);
  await writeFile(file, 'bad\n');
  const invalid = await call(['manifest', 'validate', '--file', file, '--json']);
  t.is(invalid.code, 1);
  t.false(JSON.parse(invalid.stdout).valid);
  const fromRepo = await call(['manifest', 'validate']);
  t.deepEqual(fromRepo.requests[0].body, {});
  t.regex((await call(['manifest', 'show'])).stdout, /git_sha: +b{40}/);
  t.is((await call(['manifest', 'show', '--yaml'])).stdout, 'registry: none\n');
});

test.serial('workflow and pipeline list and show, as tables and --json', async (t) => {
  const list = await call(['workflow', 'list']);
  t.is(list.code, 0, list.stderr);
  t.regex(list.stdout, /^NAME +STEPS +TRIGGER\nreview +2 +-$/m);
  const show = await call(['workflow', 'show', 'review']);
  t.regex(show.stdout, /workflow review/);
  t.regex(show.stdout, /check: agent reviewer {2}\(after lint\)/);
  t.deepEqual(JSON.parse((await call(['workflow', 'show', 'review', '--json'])).stdout), WORKFLOW);
  t.regex((await call(['pipeline', 'list'])).stdout, /release +1/);
  t.regex((await call(['pipeline', 'show', 'release'])).stdout, /build: action build/);
  const missing = await call(['workflow', 'show', 'ghost']);
  t.is(missing.code, 1);
  t.is((await call(['workflow'])).code, 2);
});
