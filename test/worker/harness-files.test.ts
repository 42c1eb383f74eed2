import path from 'node:path';
import test from 'ava';
import { exactPattern } from '../../plugins/worker/mirror.ts';
import { attemptsOf, finished, git, logLines, workerWorld, type WorkerWorld } from './helpers.ts';

/**
 * What a harness writes into the workspace for its run (harness_a's plugin dir and MCP config under
 * .svc/harness_a/) is never committed: the commit holds the agent's change and nothing else.
 */
const FAKE_CLAUDE = path.resolve('test/fixtures/bin/fake-claude');
const FAKE_OPENCODE = path.resolve('test/fixtures/bin/fake-opencode');
let w: WorkerWorld;

test.before(async () => {
  process.env.ANTHROPIC_API_KEY = 'sk-ant-test';
  w = await workerWorld('wfiles', {
    overrides: {
      harnesses: { harness_a: { command: FAKE_CLAUDE, mcp_servers: { docs: { command: 'docs-server', args: [] } } }, harness_f: { command: FAKE_OPENCODE } },
    },
  });
});
test.after.always(async () => {
  await w?.stop();
});

test('a harness_a job commits the agent change only: its plugin dir and MCP config under .svc/harness_a/ stay out', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'Note the change',
    harness: 'harness_a',
    git: { branch: 'agent', commit: 'auto', push: 'on_success' },
  });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await finished(w, created.body.id);
  const [attempt] = await attemptsOf(w, job.id);
  t.is(job.phase, 'done', JSON.stringify(attempt));
  t.is(attempt.status, 'succeeded', JSON.stringify(attempt));
  const files = git(w.bare, 'diff-tree', '--no-commit-id', '--name-only', '-r', 'agent');
  t.is(files, 'CHANGES.md', 'the commit holds the change the agent made, and none of the files the harness wrote for its run');
});

test('the env a harness built from the job overrides wins over the raw override: policy never still denies edits under an inline config that allows them', async (t) => {
  const created = await w.api.post(`/projects/${w.projectId}/jobs`, {
    description: 'Note the change',
    harness: 'harness_f',
    hints: { permission_policy: 'never' },
    env_overrides: { OPENCODE_CONFIG_CONTENT: JSON.stringify({ permission: { edit: 'allow' }, share: 'disabled' }) },
    git: { branch: 'denied', commit: 'auto', push: 'on_success' },
  });
  t.is(created.statusCode, 201, JSON.stringify(created.body));
  const job = await finished(w, created.body.id);
  const [attempt] = await attemptsOf(w, job.id);
  t.is(attempt.status, 'succeeded', JSON.stringify(attempt));
  // fake-opencode writes CHANGES.md unless its inline config denies edits; nothing changed, so nothing was pushed.
  t.is(git(w.bare, 'branch', '--list', 'denied'), '');
  const lines = (await logLines(w, job.id, attempt.id)).map((l) => l.line);
  t.false(lines.includes('[tool] write'), lines.join('\n'));
});

test('a harness file is excluded by exactly its path: anchored, with wildcards escaped', (t) => {
  t.is(exactPattern('.svc/harness_a/mcp.json'), '/.svc/harness_a/mcp.json');
  t.is(exactPattern('.svc/a*b?[c]/#!x'), '/.svc/a\\*b\\?\\[c\\]/\\#\\!x');
});
