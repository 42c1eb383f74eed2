import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../core/db/embedded.ts';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh database for one test file. Source, in order: DATABASE_URL (CI points it at the
 * machine's PostgreSQL; a database is created beside it), a testcontainers PostgreSQL when a
 * Docker engine answers and can start it (an engine that cannot pull the image does not count),
 * else an embedded PostgreSQL in a temporary folder.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  if (process.env.DATABASE_URL) return databaseBeside(process.env.DATABASE_URL);
  const container = await startContainerIfDocker();
  if (container) return container;
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-pg-'));
  chmodSync(dir, 0o755); // as root, PostgreSQL runs as the postgres user, which must enter the folder
  const embedded = await startEmbeddedPostgres(dir);
  return {
    url: embedded.url,
    drop: async () => {
      await embedded.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function databaseBeside(serverUrl: string): Promise<TestDatabase> {
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

const POSTGRES_IMAGE = 'postgres:16-alpine';

async function startContainerIfDocker(): Promise<TestDatabase | null> {
  if (process.env.SVC_TEST_NO_DOCKER) return null;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
  } catch {
    return null;
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  try {
    const container = await new PostgreSqlContainer(POSTGRES_IMAGE).start();
    return { url: container.getConnectionUri(), drop: async () => void (await container.stop()) };
  } catch (err) {
    console.error(
      `test database: a Docker engine answers but ${POSTGRES_IMAGE} did not start (${(err as Error).message.split('\n')[0]}); using an embedded PostgreSQL`,
    );
    return null;
  }
}
