import test from 'ava';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkout } from '../../adapters/builder/git-checkout.ts';

/**
 * A build checks out a repository its project's members control (adapters/builder/git-checkout.ts).
 * The repository names a filter in `.gitattributes`; the server's own git configuration (a global
 * `~/.gitconfig`, as `git lfs install` writes one) defines that filter as a command. The checkout is
 * svc's hardened git (core/git-run.ts): no global configuration and none of the server's
 * environment, so the filter never runs and the server's secrets never reach a process the
 * repository chose. Against a checkout with the server's environment the filter ran and saw them.
 */
const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' } }).trim();

test('a filter the server’s global git config defines never runs on a build’s checkout, and sees no server secret', async (t) => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'svc-build-checkout-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const marker = path.join(scratch, 'filter-ran');
  const globalConfig = path.join(scratch, 'server.gitconfig');
  writeFileSync(globalConfig, `[filter "evil"]\n\tsmudge = "sh -c 'env > ${marker}; cat'"\n\trequired = false\n`);
  const work = path.join(scratch, 'work');
  execFileSync('git', ['init', '--quiet', '-b', 'main', work]);
  writeFileSync(path.join(work, '.gitattributes'), '* filter=evil\n');
  writeFileSync(path.join(work, 'Dockerfile'), 'FROM scratch\n');
  git(work, 'add', '.');
  git(work, '-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '--quiet', '-m', 'hostile');
  const sha = git(work, 'rev-parse', 'HEAD');

  const saved = { GIT_CONFIG_GLOBAL: process.env.GIT_CONFIG_GLOBAL, SVC_TEST_SERVER_SECRET: process.env.SVC_TEST_SERVER_SECRET };
  process.env.GIT_CONFIG_GLOBAL = globalConfig; // the server's own git configuration
  process.env.SVC_TEST_SERVER_SECRET = 'postgres://svc:hunter2@db/svc';
  t.teardown(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  const dir = path.join(scratch, 'build');
  await checkout(`file://${work}`, { env: {}, secrets: [] }, sha, dir, new AbortController().signal, () => undefined);
  t.is(git(dir, 'rev-parse', 'HEAD'), sha);
  t.false(existsSync(marker), `the filter ran, and saw: ${existsSync(marker) ? readFileSync(marker, 'utf8').match(/SVC_TEST_SERVER_SECRET=.*/)?.[0] : ''}`);
});
