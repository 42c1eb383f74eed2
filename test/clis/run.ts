/**
 * `npm run test:clis [-- --latest] [ava arguments]`: the conformance suite of the six harnesses
 * against the real coding CLIs (test/clis/), kept out of `npm test`. It installs the CLIs first
 * (test/clis/support/clis.ts), so each test file finds them ready, then runs ava with
 * ava.clis.config.js. `-- --install-only` stops after installing (the cache that
 * examples/docker/worker-clis-image.sh copies from).
 */
import { spawnSync } from 'node:child_process';
import { CLI_NAMES, cliBin, versionOf } from './support/clis.ts';

const args = process.argv.slice(2);
if (args.includes('--latest')) process.env.SVC_CLIS_LATEST = '1';
const avaArgs = args.filter((a) => a !== '--latest' && a !== '--install-only');
for (const name of CLI_NAMES) {
  const bin = cliBin(name);
  // The resolved versions go to the test processes, so --latest asks the registry once.
  process.env[`SVC_CLI_VERSION_${name.toUpperCase()}`] = versionOf(name);
  console.log(`clis: ${name} ${versionOf(name)} at ${bin}`);
}
if (args.includes('--install-only')) process.exit(0);
const run = spawnSync('npx', ['ava', '--config', 'ava.clis.config.js', ...avaArgs], { stdio: 'inherit' });
process.exit(run.status ?? 1);
