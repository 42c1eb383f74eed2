import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { HarnessDefinition } from '../../core/ports/harness.ts';
import { compareVersions, parseVersion, versionNote } from '../../core/harness-versions.ts';
import { builtInHarnesses } from '../../harnesses/index.ts';
import { HarnessAuth, versionOutput } from '../../plugins/harnesses/service.ts';

const RANGE = { args: ['--version'], oldest: '0.171.0', newest: '0.171.0' };

test('versions as the CLIs print them', (t) => {
  t.deepEqual(parseVersion('codex-cli 0.171.0'), [0, 171, 0]);
  t.deepEqual(parseVersion('0.61.0\n'), [0, 61, 0]);
  t.deepEqual(parseVersion('v2.1.332 (Claude Code)'), [2, 1, 332]);
  t.is(parseVersion('no version here'), null);
  t.true(compareVersions([0, 170, 9], [0, 171, 0]) < 0);
  t.true(compareVersions([1, 0, 0], [0, 171, 0]) > 0);
});

test('the note names the version, and says when it is outside the tested range', (t) => {
  t.is(versionNote('codex-cli 0.171.0', RANGE), 'version 0.171.0, as tested');
  t.is(versionNote(null, RANGE), null, 'the CLI did not answer: nothing is claimed');
  t.regex(versionNote('codex-cli 0.98.0', RANGE)!, /^version 0\.98\.0 is older than .*tested 0\.171\.0 to 0\.171\.0/);
  t.regex(versionNote('codex-cli 0.172.1', RANGE)!, /^version 0\.172\.1 is newer than svc was tested with/);
});

test('the auth status of a harness with a tested range names an installed CLI outside it; the pinned ones are declared', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-version-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bin = path.join(dir, 'oldcli');
  writeFileSync(bin, '#!/bin/sh\necho "oldcli 0.98.0"\n');
  chmodSync(bin, 0o755);
  const def: HarnessDefinition = {
    id: 'old',
    description: 'old',
    command: bin,
    versions: RANGE,
    build: () => ({ command: bin, args: [], env: {}, files: {} }),
    parseLine: () => [],
  };
  const status = await new HarnessAuth(() => null).status(def);
  t.true(status.available);
  t.regex(status.reason, /found \(version 0\.98\.0 is older than svc's invocation is known to work with/);
  const [a, b, c, d, e, f] = builtInHarnesses();
  for (const claude of [a, b, c]) t.like(claude.versions, { args: ['--version'], oldest: '2.1.332' });
  t.like(d.versions, { args: ['--version'], oldest: '0.171.0' });
  t.like(e.versions, { args: ['--version'], oldest: '0.61.0' });
  t.like(f.versions, { args: ['--version'], oldest: '1.18.33' });
});

test('a failed version read is not kept: the next status reads the version again', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-version-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const flag = path.join(dir, 'second-time');
  const bin = path.join(dir, 'flaky');
  writeFileSync(bin, `#!/bin/sh\nif [ -e '${flag}' ]; then echo '1.0.0'; exit 0; fi\ntouch '${flag}'\nexit 1\n`);
  chmodSync(bin, 0o755);
  t.is(await versionOutput(bin, ['--version']), null);
  await new Promise((r) => setImmediate(r));
  t.is(await versionOutput(bin, ['--version']), '1.0.0');
});
