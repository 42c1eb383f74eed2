import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../core/db/embedded.ts';
import { createKnex } from '../../core/db/knex.ts';
import { migrate } from '../../core/db/migrate.ts';
import { createLogger } from '../../core/logger.ts';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A fresh database for one test file. Source, in order: DATABASE_URL (CI points it at the
 * machine's PostgreSQL; a database is created beside it, already migrated: a copy of a template
 * migrated once per set of migration files, unless `empty`), a testcontainers PostgreSQL when a
 * Docker engine answers and can start it (an engine that cannot pull the image does not count),
 * else an embedded PostgreSQL in a temporary folder.
 */
export async function createTestDatabase(opts: { empty?: boolean } = {}): Promise<TestDatabase> {
  if (process.env.DATABASE_URL) return databaseBeside(process.env.DATABASE_URL, opts.empty ? null : await migratedTemplate(process.env.DATABASE_URL));
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

const withDatabase = (serverUrl: string, name: string) => {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
};

async function databaseBeside(serverUrl: string, template: string | null): Promise<TestDatabase> {
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  await admin.end();
  return {
    url: withDatabase(serverUrl, name),
    drop: async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

const MIGRATIONS_DIR = new URL('../../migrations/', import.meta.url);
/** Any fixed number: the test processes that find no template build it one at a time. */
const TEMPLATE_LOCK_KEY = 4701_0002;

/**
 * The name of a database migrated with the migration files as they are now (named by their
 * contents' hash, so a changed or added migration makes a new one), built once by whichever test
 * process asks first. Copying it (CREATE DATABASE … TEMPLATE) takes a fraction of a migration run.
 */
async function migratedTemplate(serverUrl: string): Promise<string> {
  const hash = createHash('sha256');
  for (const file of readdirSync(MIGRATIONS_DIR).sort()) hash.update(file).update(readFileSync(new URL(file, MIGRATIONS_DIR)));
  const name = `svc_template_${hash.digest('hex').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query('SELECT pg_advisory_lock($1)', [TEMPLATE_LOCK_KEY]);
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return name;
    const building = `${name}_building`;
    await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${building}`);
    const db = createKnex(withDatabase(serverUrl, building), 2, createLogger('silent'));
    try {
      await migrate(db, withDatabase(serverUrl, building));
    } finally {
      await db.destroy();
    }
    await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    return name;
  } finally {
    await admin.query('SELECT pg_advisory_unlock($1)', [TEMPLATE_LOCK_KEY]).catch(() => undefined);
    await admin.end();
  }
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
