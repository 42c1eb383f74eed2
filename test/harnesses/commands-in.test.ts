/**
 * A runtime that runs processes in an image (docker, kubernetes: `Runtime.commandsIn`) finds the
 * harness's CLI there, so its availability is not decided by this machine's PATH: only the
 * credentials are checked, and the reason says where the CLI runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { HarnessDefinition } from '../../core/ports/harness.ts';
import { HarnessAuth } from '../../plugins/harnesses/service.ts';
import { Harnesses } from '../../plugins/harnesses/registry.ts';

const def: HarnessDefinition = {
  id: 'imaged',
  description: 'a CLI only the image holds',
  command: 'svc-cli-only-in-the-image',
  versions: { args: ['--version'], oldest: '1.0.0', newest: '1.0.0' },
  credentials: { env: [['SVC_TEST_IMAGED_KEY']], instructions: ['Set SVC_TEST_IMAGED_KEY.'] },
  build: () => ({ command: 'svc-cli-only-in-the-image', args: [], env: {}, files: {} }),
  parseLine: () => [],
};
const auth = new HarnessAuth(() => null);
const IN = { commandsIn: 'the image svc-worker-clis:local' };

test.serial('on this machine a CLI that is not on PATH makes the harness unavailable, whatever the credentials', async (t) => {
  process.env.SVC_TEST_IMAGED_KEY = 'k';
  t.teardown(() => delete process.env.SVC_TEST_IMAGED_KEY);
  const status = await auth.status(def);
  t.like(status, { available: false, missing: 'binary', reason: "binary 'svc-cli-only-in-the-image' not found on PATH" });
});

test.serial('in an image the CLI is not looked for here: credentials decide, and the reason says where it runs', async (t) => {
  t.like(await auth.status(def, {}, IN), {
    available: false,
    missing: 'credentials',
    reason: 'no credentials: set SVC_TEST_IMAGED_KEY',
  });
  process.env.SVC_TEST_IMAGED_KEY = 'k';
  t.teardown(() => delete process.env.SVC_TEST_IMAGED_KEY);
  t.deepEqual(await auth.status(def, {}, IN), {
    available: true,
    reason: "'svc-cli-only-in-the-image' runs in the image svc-worker-clis:local (not looked for here); credentials from the environment (SVC_TEST_IMAGED_KEY)",
    instructions: [],
  });
});

test.serial('the registry passes it through auth, and through profiles that drop unavailable entries', async (t) => {
  for (const name of Object.keys(process.env)) if (/^ANTHROPIC_|^CLAUDE_CODE_/.test(name)) delete process.env[name];
  const home = process.env.HOME;
  process.env.HOME = mkdtempSync(path.join(tmpdir(), 'svc-commands-in-')); // no login file of this machine's user
  process.env.ANTHROPIC_API_KEY = 'sk-ant-test';
  t.teardown(() => {
    rmSync(process.env.HOME!, { recursive: true, force: true });
    process.env.HOME = home;
    delete process.env.ANTHROPIC_API_KEY;
  });
  const registry = await Harnesses.load({ plugins: [], harness_b: { command: 'svc-claude-only-in-the-image' } } as never, auth);
  t.like(await registry.auth('harness_b'), { available: false, missing: 'binary' });
  t.like(await registry.auth('harness_b', {}, IN), { available: true });
  const agents = { profiles: { only: [{ harness: 'harness_b' }] }, availability: { drop_unavailable: true } };
  await t.throwsAsync(registry.resolve({ harness_profile: 'only' }, agents as never), {
    message: /no available harness in profile 'only': harness_b \(binary/,
  });
  t.like(await registry.resolve({ harness_profile: 'only' }, agents as never, {}, IN), { harness: 'harness_b', profile: 'only', dropped: [] });
});
