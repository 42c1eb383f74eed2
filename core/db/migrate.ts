import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Knex } from 'knex';
import type { Db } from './knex.ts';
import { MODULE_EXT } from '../module-ext.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
/** Any fixed number: every replica takes the same advisory lock before migrating. */
const MIGRATION_LOCK_KEY = 4701_0001;

interface Migration {
  up(db: Knex): Promise<void>;
  down?(db: Knex): Promise<void>;
}

/**
 * Forward-only migrations: `migrations/NNN_name.ts`, each exporting `up(knex)`. Compiled, the
 * files end in `.js`; they are recorded under their source name either way, so a database
 * migrated from the sources and one migrated by the compiled server agree on what was applied.
 */
class DirectorySource implements Knex.MigrationSource<string> {
  async getMigrations(): Promise<string[]> {
    return readdirSync(MIGRATIONS_DIR)
      .filter((f) => /^\d+_.+$/.test(f) && f.endsWith(MODULE_EXT) && !f.endsWith('.d.ts'))
      .sort();
  }
  getMigrationName(file: string): string {
    return `${file.slice(0, -MODULE_EXT.length)}.ts`;
  }
  async getMigration(file: string): Promise<Knex.Migration> {
    const mod = (await import(pathToFileURL(path.join(MIGRATIONS_DIR, file)).href)) as Migration;
    return {
      up: mod.up,
      down:
        mod.down ??
        (async () => {
          throw new Error(`${file} is forward-only`);
        }),
    };
  }
}

/**
 * Runs pending migrations while holding a session-level advisory lock on its own connection,
 * so replicas that start together migrate one after another instead of failing on knex's lock row.
 */
export async function migrate(db: Db, url: string): Promise<string[]> {
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const [, applied] = (await db.migrate.latest({ migrationSource: new DirectorySource() })) as [number, string[]];
    return applied;
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await lock.end();
  }
}
