// The local runtime's keeper (see keeper.ts): a process of its own session that outlives the worker
// only long enough to end what the worker started. Lines on stdin: `+<pgid>` (a group started),
// `-<pgid>` (it ended). When stdin closes (the worker exited, crashed or was SIGKILLed; the kernel
// closes its end of the pipe in every case) every group still listed gets SIGKILL, then the keeper
// exits. Plain JavaScript, so it starts without a TypeScript loader.
const groups = new Set();
let pending = '';

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => {}); // only the pipe ends it

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  pending += chunk;
  let nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    const pgid = Number(line.slice(1));
    if (!Number.isInteger(pgid) || pgid <= 1) continue;
    if (line[0] === '+') groups.add(pgid);
    else if (line[0] === '-') groups.delete(pgid);
  }
});

const endAll = () => {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  process.exit(0);
};
process.stdin.on('end', endAll);
process.stdin.on('close', endAll);
process.stdin.on('error', endAll);
