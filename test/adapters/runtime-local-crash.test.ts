import test from 'ava';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { alive, until } from '../worker/helpers.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * An attempt's processes die with the worker that owns them, even when the worker is SIGKILLed with
 * its whole process group (a crash, `kill -9` of the server): its retry, under the same gate, must
 * never run beside it. The worker here is test/fixtures/runtime-owner.ts.
 */
/** The keeper processes the worker `ppid` started. */
function keepersOf(ppid: number): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === ppid && cmdline.includes('keeper-process.js') && alive(pid);
      } catch {
        return false;
      }
    });
}

/** The compiled runtime, as `npm start` runs it (npm test builds dist/ first): its keeper must be there too. */
const COMPILED = new URL('../../dist/adapters/runtime/local/index.js', import.meta.url).href;

for (const [keeperKilledFirst, compiled] of [
  [false, false],
  [true, false],
  [false, true],
]) {
  test(`SIGKILL of the worker and its process group ends the attempt's process group within seconds${keeperKilledFirst ? ' (also after its keeper was killed and replaced)' : ''}${compiled ? ' (the compiled runtime in dist/)' : ''}`, async (t) => {
    const owner = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/runtime-owner.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...(compiled ? { RUNTIME_MODULE: COMPILED } : {}) },
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    owner.stdout!.on('data', (d) => (out += d));
    const pids = await until(
      async () => (out.includes('\n') ? (JSON.parse(out.split('\n')[0]) as { leader: number; child: number }) : null),
      'the attempt to start',
      30_000,
    );
    t.true(alive(pids.leader) && alive(pids.child), 'the attempt runs');
    if (keeperKilledFirst) {
      const [first] = keepersOf(owner.pid!);
      t.truthy(first, 'a keeper runs');
      process.kill(first, 'SIGKILL');
      await until(async () => keepersOf(owner.pid!).some((k) => k !== first), 'a new keeper', 5_000);
      await new Promise((r) => setTimeout(r, 200)); // it has been told the running groups
    }
    const exited = new Promise((resolve) => owner.once('exit', resolve));
    process.kill(-owner.pid!, 'SIGKILL');
    await exited;
    const killedAt = Date.now();
    try {
      await until(async () => !alive(pids.leader) && !alive(pids.child), 'the orphaned attempt to die', 5_000);
    } finally {
      for (const pid of [pids.leader, pids.child]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }
    t.log(`attempt processes gone ${Date.now() - killedAt} ms after the worker was killed`);
    t.pass();
  });
}
