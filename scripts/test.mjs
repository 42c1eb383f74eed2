// `npm test`: typecheck, lint, build, then every test (ava, with any arguments given after `--`),
// stopping at the first step that fails; prints how long it all took.
import { spawnSync } from 'node:child_process';

const started = Date.now();
const steps = [
  ['npm', ['run', 'typecheck']],
  ['npm', ['run', 'lint']],
  ['npm', ['run', 'build']],
  ['npx', ['ava', ...process.argv.slice(2)]],
];
let status = 0;
for (const [command, args] of steps) {
  status = spawnSync(command, args, { stdio: 'inherit' }).status ?? 1;
  if (status !== 0) break;
}
const seconds = Math.round((Date.now() - started) / 1000);
console.log(`npm test: ${status === 0 ? 'passed' : 'failed'} in ${Math.floor(seconds / 60)} min ${seconds % 60} s`);
process.exit(status);
