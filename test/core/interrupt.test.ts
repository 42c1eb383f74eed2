// Ctrl-C and a root checkout in a private folder, as a user at a terminal meets them: the real
// `svc serve` on its embedded PostgreSQL, signalled as a terminal signals its foreground group.
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../core/db/embedded.ts';
import { ROOT, accepts, serveProcess, waitForHealth, type ServeProcess } from '../support/serve-process.ts';

async function api(url: string, method: string, route: string, body?: unknown, token?: string): Promise<any> {
  const res = await fetch(`${url}${route}`, {
    method,
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${route}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function until<T>(check: () => Promise<T | null | undefined | false>, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** An admin, an org and a project on a fresh server: the token and the project id. */
async function world(url: string): Promise<{ token: string; projectId: string }> {
  const { access_token: token } = await api(url, 'POST', '/auth/bootstrap', { email: 'admin@example.com' });
  const org = await api(url, 'POST', '/orgs', { name: 'Acme' }, token);
  const project = await api(url, 'POST', '/projects', { org_id: org.id, name: 'App', slug: 'appx' }, token);
  return { token, projectId: project.id };
}

const stopped = async (proc: ServeProcess) => {
  if (proc.child.exitCode === null && proc.child.signalCode === null) {
    proc.child.kill('SIGTERM');
    await proc.exited;
  }
};

test.serial(
  'Ctrl-C (SIGINT to the whole foreground group) drains like SIGTERM: the attempt is handed back, the database stops last, a few readable lines',
  async (t) => {
    t.timeout(240_000);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-ctrl-c-'));
    chmodSync(dataDir, 0o755);
    const url = `http://127.0.0.1:${await freePort()}`;
    const first = serveProcess({ PORT: new URL(url).port, SVC_DATA_DIR: dataDir, SVC_LOG_LEVEL: 'info' }, { detached: true });
    let second: ServeProcess | null = null;
    try {
      await waitForHealth(url, first);
      const { token, projectId } = await world(url);
      const job = await api(
        url,
        'POST',
        `/projects/${projectId}/jobs`,
        { description: 'long script', hints: { step: { kind: 'script', script: { run: 'sleep 60' } } } },
        token,
      );
      const attempts = `/projects/${projectId}/jobs/${job.id}/attempts`;
      await until(async () => (await api(url, 'GET', attempts, undefined, token)).data.find((a: any) => a.status === 'running'), 'the attempt to run');
      const pgPort = Number(readFileSync(path.join(dataDir, 'postgres.port'), 'utf8'));

      const before = first.output().length;
      process.kill(-first.child.pid!, 'SIGINT');
      t.is(await first.exited, 0, first.output());
      const shutdownLog = first.output().slice(before).trim().split('\n').filter(Boolean);
      t.true(shutdownLog.length <= 8, `a few lines, not ${shutdownLog.length}:\n${shutdownLog.join('\n')}`);
      t.false(
        shutdownLog.some((line) => /^\s+at /.test(line) || line.length > 600),
        `no stack traces or object dumps:\n${shutdownLog.join('\n')}`,
      );
      t.false(/could not be stored|ECONNREFUSED|terminating connection/.test(first.output()), first.output());
      t.false(await accepts(pgPort), 'the embedded PostgreSQL stopped with svc');
      t.false(existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'and shut down cleanly');

      second = serveProcess({ PORT: new URL(url).port, SVC_DATA_DIR: dataDir }, { detached: true });
      await waitForHealth(url, second);
      const [firstAttempt] = (await api(url, 'GET', attempts, undefined, token)).data.filter((a: any) => a.attempt_number === 1);
      t.not(firstAttempt.status, 'running', 'the interrupted attempt was ended, not left leased');
      await until(
        async () => (await api(url, 'GET', attempts, undefined, token)).data.find((a: any) => a.attempt_number === 2),
        'the job to run again after the restart',
      );
    } finally {
      await stopped(first);
      if (second) await stopped(second);
      rmSync(dataDir, { recursive: true, force: true });
    }
  },
);

test.serial('as root from a folder the postgres user cannot enter (a checkout in /root, a mktemp -d data directory): npm start works', async (t) => {
  if (process.getuid?.() !== 0) {
    t.log('not root: the embedded PostgreSQL runs as this user, so nothing is relocated; case not run');
    t.pass();
    return;
  }
  t.timeout(240_000);
  const home = mkdtempSync(path.join(tmpdir(), 'svc-private-')); // mode 0700, owned by root
  const checkout = path.join(home, 'svc');
  mkdirSync(checkout);
  for (const entry of ['package.json', 'dist']) {
    cpSync(path.join(ROOT, entry), path.join(checkout, entry), { recursive: true });
  }
  // Hard links: node_modules (and the PostgreSQL programs in it) now sit behind the private folder.
  execFileSync('cp', ['-al', path.join(ROOT, 'node_modules'), path.join(checkout, 'node_modules')]);
  const url = `http://127.0.0.1:${await freePort()}`;
  const proc = serveProcess({ PORT: new URL(url).port, SVC_LOG_LEVEL: 'info' }, { cwd: checkout });
  let cluster = '';
  try {
    await waitForHealth(url, proc);
    cluster = readFileSync(path.join(checkout, '.svc-data', 'postgres.location'), 'utf8').trim();
    t.true(cluster.startsWith('/var/lib/svc/clusters/'), cluster);
    t.regex(proc.output(), /the postgres user cannot enter .*\.svc-data, so the embedded cluster is kept in \/var\/lib\/svc\/clusters\//);
    t.true((await api(url, 'POST', '/auth/bootstrap', { email: 'root@example.com' })).access_token.length > 0);
    proc.child.kill('SIGTERM');
    t.is(await proc.exited, 0, proc.output());

    const again = serveProcess({ PORT: new URL(url).port }, { cwd: checkout });
    await waitForHealth(url, again);
    t.true((await (await fetch(`${url}/auth/bootstrap/status`)).json()).completed, 'the relocated cluster keeps its data across restarts');
    again.child.kill('SIGTERM');
    t.is(await again.exited, 0, again.output());
  } finally {
    await stopped(proc);
    rmSync(home, { recursive: true, force: true });
    if (cluster) rmSync(path.dirname(cluster), { recursive: true, force: true });
  }
});

test.serial('a PostgreSQL left running by a killed svc is stopped at the next start; a second svc on a data directory in use is refused', async (t) => {
  t.timeout(240_000);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-leftover-'));
  chmodSync(dataDir, 0o755);
  const url = `http://127.0.0.1:${await freePort()}`;
  const killed = serveProcess({ PORT: new URL(url).port, SVC_DATA_DIR: dataDir });
  let next: ServeProcess | null = null;
  try {
    await waitForHealth(url, killed);
    const pgPort = Number(readFileSync(path.join(dataDir, 'postgres.port'), 'utf8'));
    killed.child.kill('SIGKILL');
    await killed.exited;
    t.true(await accepts(pgPort), 'the database runs in its own session, so it outlives a SIGKILLed svc');

    next = serveProcess({ PORT: new URL(url).port, SVC_DATA_DIR: dataDir });
    await waitForHealth(url, next);
    t.false(await accepts(pgPort), 'the leftover server was stopped and a new one started');

    const refused = serveProcess({ PORT: String(await freePort()), SVC_DATA_DIR: dataDir });
    t.is(await refused.exited, 1);
    t.regex(refused.output(), new RegExp(`another svc \\(pid ${next.child.pid}\\) is using the embedded database in ${dataDir}`));
    t.is(refused.output().trim().split('\n').length, 1, refused.output());
  } finally {
    await stopped(killed);
    if (next) await stopped(next);
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test.serial('after a SIGKILL, the restarted server runs the stranded attempt again at once, not when its lease runs out', async (t) => {
  t.timeout(240_000);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-sigkill-'));
  chmodSync(dataDir, 0o755);
  const url = `http://127.0.0.1:${await freePort()}`;
  // A lease far longer than the test: only the restart's release of the dead owner's leases can free the job in time.
  const env = { PORT: new URL(url).port, SVC_DATA_DIR: dataDir, SVC_WORKER__LEASE_SECONDS: '600' };
  const killed = serveProcess(env);
  let next: ServeProcess | null = null;
  try {
    await waitForHealth(url, killed);
    const { token, projectId } = await world(url);
    const job = await api(
      url,
      'POST',
      `/projects/${projectId}/jobs`,
      { description: 'long script', hints: { step: { kind: 'script', script: { run: 'sleep 60' } }, max_attempts: 3 } },
      token,
    );
    const attempts = `/projects/${projectId}/jobs/${job.id}/attempts`;
    await until(async () => (await api(url, 'GET', attempts, undefined, token)).data.find((a: any) => a.status === 'running'), 'the attempt to run');
    killed.child.kill('SIGKILL');
    await killed.exited;

    next = serveProcess(env);
    await waitForHealth(url, next);
    const restarted = Date.now();
    const second = await until(
      async () => (await api(url, 'GET', attempts, undefined, token)).data.find((a: any) => a.attempt_number === 2),
      'a second attempt',
      30_000,
    );
    t.true(Date.now() - restarted < 15_000, `the job ran again ${Date.now() - restarted} ms after the restart`);
    const [first] = (await api(url, 'GET', attempts, undefined, token)).data.filter((a: any) => a.attempt_number === 1);
    t.is(first.status, 'cancelled', 'lost with its server, not failed: the job keeps its max_attempts');
    t.regex(first.error, /^worker lost: the lease expired/);
    t.truthy(second);
  } finally {
    await stopped(killed);
    if (next) await stopped(next);
    rmSync(dataDir, { recursive: true, force: true });
  }
});
